"""`python -m transnli.cli`: the `transnli` command."""

from transnli.cli import main

main()
