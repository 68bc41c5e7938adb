"""Work a user waits for without a progress bar (building the word vectors or WordNet's antonym
index once, converting or loading a language model), announced before it starts: what it does
and roughly how long, so a silent minute never looks like a hang.

The lines go to the logger "transnli.notice" at INFO. The command line shows them on stderr
(transnli.cli.options.setup_logging; -q/--quiet silences them); the Python API shows nothing
unless the caller configures that logger.
"""

from __future__ import annotations

import logging

LOGGER = "transnli.notice"
log = logging.getLogger(LOGGER)


def announce(doing: str, about: str) -> None:
    """Say `doing` ("building WordNet's antonym index, once") will take `about` ("30-45 s")."""
    log.info(f"{doing} (about {about}) ...")
