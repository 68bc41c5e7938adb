"""A minimal ctypes binding to the link-grammar C library: how many words must a parse skip?

Why not the SWIG binding Debian ships (python3-link-grammar): its calls hold the GIL for the whole
parse, so parsing could never share the CPU with anything else in the process, and it is built
for one Python version only. A ctypes call releases the GIL while the C function runs, and the
library is thread-safe as used here (a dictionary is shared read-only; each parse runs with parse
options of its own, which hold the parse timer, and each thread has its own error handler, which
the library keeps per thread). So the acceptability check parses on several threads while harper
or spaCy use the other cores.

Only the handful of functions the check needs are declared. The parse options are the ones
Debian's Python binding sets by default (plus ours), so null counts are the same as through it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import threading
from dataclasses import dataclass
from typing import NamedTuple

_SONAMES = ("liblink-grammar.so.5", "liblink-grammar.so")
_log = logging.getLogger("linkgrammar")


class LinkGrammarUnavailable(RuntimeError):
    """The C library or the dictionary cannot be loaded."""


class _ErrInfo(ctypes.Structure):
    # lg_errinfo in link-includes.h
    _fields_ = [
        ("severity", ctypes.c_int),
        ("severity_label", ctypes.c_char_p),
        ("text", ctypes.c_char_p),
    ]


_HANDLER_TYPE = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ErrInfo), ctypes.c_void_p)
_QUIET_SEVERITIES = (4, 5, 6)  # lg_Info, lg_Debug, lg_Trace


@_HANDLER_TYPE
def _route_message(info, _data) -> None:
    """The library prints its notes (locale, dictionary) to stdout by default, which would corrupt
    a command's output: send them to Python logging instead."""
    err = info.contents
    level = logging.DEBUG if err.severity in _QUIET_SEVERITIES else logging.WARNING
    _log.log(level, "%s", (err.text or b"").decode("utf-8", "replace").strip())


_lib_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


def load_library() -> ctypes.CDLL:
    """liblink-grammar, with the signatures of the functions used here (loaded once)."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        names = list(_SONAMES)
        found = ctypes.util.find_library("link-grammar")
        if found:
            names.insert(0, found)
        errors = []
        lib = None
        for name in names:
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError as e:
                errors.append(str(e))
        if lib is None:
            raise LinkGrammarUnavailable(
                "the link-grammar C library is not installed (" + "; ".join(errors) + ")"
            )
        p, i, s = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
        for name, restype, argtypes in (
            ("linkgrammar_get_version", s, []),
            ("linkgrammar_get_dict_version", s, [p]),
            ("lg_error_set_handler", p, [_HANDLER_TYPE, p]),
            ("dictionary_create_lang", p, [s]),
            ("dictionary_delete", None, [p]),
            ("parse_options_create", p, []),
            ("parse_options_delete", i, [p]),
            ("parse_options_timer_expired", i, [p]),
            ("sentence_create", p, [s, p]),
            ("sentence_delete", None, [p]),
            ("sentence_parse", i, [p, p]),
            ("sentence_num_valid_linkages", i, [p]),
            ("sentence_null_count", i, [p]),
        ):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        for name in _OPTION_SETTERS:
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = None, [p, i]
        _lib = lib
        return lib


def route_messages(lib: ctypes.CDLL) -> None:
    """Route the calling thread's link-grammar messages to logging (the handler is per thread)."""
    lib.lg_error_set_handler(_route_message, None)


# Each setter takes (Parse_Options, int). The values mirror Debian's Python binding's defaults
# (verbosity 0, islands not allowed, short_length 16, no spell guessing, classic parser,
# repeatable random sampling), so that results match what that binding gave.
_OPTION_SETTERS = (
    "parse_options_set_verbosity",
    "parse_options_set_linkage_limit",
    "parse_options_set_min_null_count",
    "parse_options_set_max_null_count",
    "parse_options_set_islands_ok",
    "parse_options_set_short_length",
    "parse_options_set_all_short_connectors",
    "parse_options_set_display_morphology",
    "parse_options_set_spell_guess",
    "parse_options_set_use_sat_parser",
    "parse_options_set_max_parse_time",
    "parse_options_set_repeatable_rand",
)


@dataclass(frozen=True)
class ParseSettings:
    max_null_count: int = 999
    max_parse_time: int = 3  # seconds
    # The null count is known before linkages are extracted: one is enough.
    linkage_limit: int = 1

    def values(self) -> dict[str, int]:
        return {
            "parse_options_set_verbosity": 0,
            "parse_options_set_linkage_limit": self.linkage_limit,
            "parse_options_set_min_null_count": 0,
            "parse_options_set_max_null_count": self.max_null_count,
            "parse_options_set_islands_ok": 0,
            "parse_options_set_short_length": 16,
            "parse_options_set_all_short_connectors": 0,
            "parse_options_set_display_morphology": 1,
            "parse_options_set_spell_guess": 0,
            "parse_options_set_use_sat_parser": 0,
            "parse_options_set_max_parse_time": self.max_parse_time,
            "parse_options_set_repeatable_rand": 1,
        }


class NullCount(NamedTuple):
    """What one parse found: `value`, the fewest words the parser had to skip (None: no parse
    within the searched range of skipped words, or none in time); `timed_out`, the parse ran
    past the time limit (then value is None)."""

    value: int | None
    timed_out: bool = False


class NullCountParser:
    """Parses sentences with one shared dictionary; safe to call from several threads at once.

    null_count(text): the fewest words the parser must skip to parse `text` (0 = fully parsed),
    or None when it finds no parse within the settings (empty text, timed out, or more than
    max_null_count skipped words). parse(text, highest) searches only up to `highest` skipped
    words (the library tries 0, 1, 2, ... and stops at the first that parses) and says whether it
    timed out. A search always starts at 0: told to start higher, link-grammar 5.12 prunes
    differently and finds no parse for some sentences that a search from 0 parses (one of
    WordNet's examples parses with 2 skipped words from 0, with none from 1 or 2).

    A parse needs parse options of its own (they carry its timer). They are lent from a free list
    for one parse at a time rather than kept per thread, because threads come and go: the library
    keeps a count table per thread, as large as the largest the thread has needed (tens of MB
    after one hard sentence), until the thread ends, so callers parse on threads that end now and
    then (ThreadPool's fresh_threads). Creating options sets the library's process-wide verbosity
    to 1 for a moment, which makes a parse running then on another thread log "No complete
    linkages found.": `reserve(n)` creates them beforehand, while nothing parses."""

    def __init__(self, language: str = "en", settings: ParseSettings | None = None) -> None:
        self._lib = load_library()
        route_messages(self._lib)
        self.settings = settings or ParseSettings()
        self.language = language
        self._dict = self._lib.dictionary_create_lang(language.encode())
        if not self._dict:
            raise LinkGrammarUnavailable(
                f"link-grammar dictionary {language!r} could not be loaded"
            )
        self._routed = threading.local()  # the error handler is per thread
        self._options_lock = threading.Lock()
        self._all_options: list[int] = []
        self._free_options: list[int] = []
        self.reserve(1)

    def _new_options(self) -> int:
        opts = self._lib.parse_options_create()
        for setter, value in self.settings.values().items():
            getattr(self._lib, setter)(opts, value)
        self._all_options.append(opts)
        return opts

    def reserve(self, n: int) -> None:
        """Have options for `n` parses at once (call while no thread parses)."""
        with self._options_lock:
            while len(self._all_options) < n:
                self._free_options.append(self._new_options())

    def _borrow_options(self) -> int:
        with self._options_lock:
            return self._free_options.pop() if self._free_options else self._new_options()

    def _return_options(self, opts: int) -> None:
        with self._options_lock:
            self._free_options.append(opts)

    def null_count(self, text: str) -> int | None:
        return self.parse(text).value

    def parse(self, text: str, highest: int | None = None) -> NullCount:
        """Parse `text` allowing up to `highest` skipped words (None: the settings'
        max_null_count)."""
        if highest is None:
            highest = self.settings.max_null_count
        if highest < 0:
            raise ValueError(f"highest null count must be >= 0, got {highest}")
        # The library aborts the process on an empty string: never send one.
        if not text.strip():
            return NullCount(None)
        if not self._dict:
            raise RuntimeError("NullCountParser used after close()")
        lib = self._lib
        if not getattr(self._routed, "done", False):
            route_messages(lib)
            self._routed.done = True
        sent = lib.sentence_create(text.encode("utf-8"), self._dict)
        if not sent:
            return NullCount(None)
        opts = self._borrow_options()
        try:
            # The options are this parse's alone until returned (min_null_count stays 0).
            lib.parse_options_set_max_null_count(opts, highest)
            rc = lib.sentence_parse(sent, opts)
            if lib.parse_options_timer_expired(opts):
                return NullCount(None, timed_out=True)
            if rc < 0 or lib.sentence_num_valid_linkages(sent) == 0:
                return NullCount(None)
            return NullCount(int(lib.sentence_null_count(sent)))
        finally:
            lib.sentence_delete(sent)
            self._return_options(opts)

    def library_version(self) -> str:
        return (self._lib.linkgrammar_get_version() or b"").decode().removeprefix("link-grammar-")

    def dictionary_version(self) -> str:
        return (self._lib.linkgrammar_get_dict_version(self._dict) or b"").decode()

    def close(self) -> None:
        """Free the dictionary and the parse options (call when no thread parses any more)."""
        with self._options_lock:
            for opts in self._all_options:
                self._lib.parse_options_delete(opts)
            self._all_options.clear()
            self._free_options.clear()
        if self._dict:
            self._lib.dictionary_delete(self._dict)
            self._dict = None

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        with contextlib.suppress(Exception):
            self.close()
