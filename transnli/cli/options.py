"""What several commands share: option groups that reach a command as one dict each, the LLM
transport options (defined once), logging through click, and Ctrl-C handling."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import click


@dataclass(frozen=True)
class Option:
    """A click option and where its value goes: the keyword `group` of the command, as the
    item `name` of a dict (e.g. group "config": a GeneratorConfig setting)."""

    group: str
    name: str
    decorator: Callable


def option(group: str, name: str, *flags: str, **attrs) -> Option:
    """An option whose value reaches the command as `group[name]` (`name` is also its click
    parameter name)."""
    return Option(group, name, click.option(*flags, name, **attrs))


def grouped(options: Sequence[Option]):
    """Decorator: the options on a command, in this order; the command receives one dict per
    group, keyword = the group's name."""

    def decorate(command):
        @functools.wraps(command)
        def wrapper(*args, **kwargs):
            for opt in options:
                kwargs.setdefault(opt.group, {})[opt.name] = kwargs.pop(opt.name)
            return command(*args, **kwargs)

        for opt in reversed(options):
            wrapper = opt.decorator(wrapper)
        return wrapper

    return decorate


# The LLM transport: one server (or local model) serves an LLM generator, an LLM acceptability
# check and llm: judges alike. Each row: name, flag, click type, help where an LLM generates
# (`generate`), help where LLM judges label (`evaluate`, `run`).
_LLM_TRANSPORT = (
    (
        "llm_base_url",
        "--llm-base-url",
        None,
        "OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (default: "
        "$TRANSNLI_LLM_BASE_URL, $OPENAI_BASE_URL, else api.openai.com).",
        "llm: models: OpenAI-compatible base URL, e.g. http://localhost:8000/v1 "
        "(default: $TRANSNLI_LLM_BASE_URL, $OPENAI_BASE_URL, else api.openai.com).",
    ),
    (
        "llm_api_key_env",
        "--llm-api-key-env",
        None,
        "Name of the environment variable holding the API key (default OPENAI_API_KEY; may be "
        "unset for local servers).",
        "llm: models: name of the environment variable with the API key (default OPENAI_API_KEY).",
    ),
    (
        "llm_concurrency",
        "--llm-concurrency",
        click.IntRange(min=1),
        "Parallel requests (openai) or generation batch size (hf-*).",
        "llm: models: parallel requests (default 8).",
    ),
    (
        "llm_timeout",
        "--llm-timeout",
        click.FloatRange(min=0, min_open=True),
        "Seconds per request before it is retried.",
        "llm: models: seconds per request (default 60).",
    ),
    (
        "llm_max_retries",
        "--llm-max-retries",
        click.IntRange(min=0),
        "Retries on 429, 5xx, timeouts (exponential backoff, Retry-After honoured).",
        "llm: models: retries on 429, 5xx and timeouts (default 5).",
    ),
    (
        "llm_temperature",
        "--llm-temperature",
        click.FloatRange(0, 2),
        "Sampling temperature (default 0).",
        "llm: models: temperature (default 0).",
    ),
    (
        "llm_max_tokens",
        "--llm-max-tokens",
        click.IntRange(min=0),
        "Completion token limit (0: none).",
        "llm: models: completion token limit (default 128; 0: none).",
    ),
)


def llm_transport_options(for_judges: bool) -> list[Option]:
    """The --llm-* transport options, group "llm" (None: not given); `for_judges` words their
    help for LLM judges (evaluate, run) instead of an LLM generator."""
    return [
        option("llm", name, flag, type=kind, default=None, help=judges if for_judges else gen)
        for name, flag, kind, gen, judges in _LLM_TRANSPORT
    ]


def given(values: dict) -> dict:
    """The options given (not None)."""
    return {k: v for k, v in values.items() if v is not None}


class _ClickLogHandler(logging.Handler):
    """Warnings of the evaluator (logger "transnli") to stderr, through click."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"warning: {record.getMessage()}", err=True)


class _NoticeHandler(logging.Handler):
    """Announcements of slow one-time work (transnli.common.notice) to stderr, as they are."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(record.getMessage(), err=True)


def setup_logging(notices: bool = True) -> None:
    """The library's warnings (logger "transnli") reach the user as "warning: ..." on stderr, and
    with `notices` (not -q) the announcements of slow one-time work as they are."""
    from transnli.common.notice import LOGGER

    logger = logging.getLogger("transnli")
    if not any(isinstance(h, _ClickLogHandler) for h in logger.handlers):
        logger.addHandler(_ClickLogHandler(level=logging.WARNING))
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)
    notice = logging.getLogger(LOGGER)
    for handler in [h for h in notice.handlers if isinstance(h, _NoticeHandler)]:
        notice.removeHandler(handler)
    notice.addHandler(_NoticeHandler(level=logging.INFO))
    notice.setLevel(logging.INFO if notices else logging.WARNING)


def echo_err(line: str) -> None:
    click.echo(line, err=True)


def resumable_on_interrupt(command):
    """Ctrl-C ends the command with exit status 130 (as the shell reports SIGINT) and says how
    to go on, instead of click's bare "Aborted!" and status 1."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("\ninterrupted; run the same command again to resume", err=True)
            raise click.exceptions.Exit(130) from None

    return wrapper
