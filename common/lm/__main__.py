"""`python -m transnli.common.lm`: prepare the default model (`conversion.main`)."""

from transnli.common.lm.conversion import main

raise SystemExit(main())
