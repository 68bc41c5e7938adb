"""Acceptability checks: is the modified sentence acceptable English?

Backends: ``cola`` (the paper's: a transformers sequence classifier fine-tuned on CoLA, default
textattack/bert-base-uncased-CoLA, judged by P(acceptable) >= threshold), ``link-grammar`` (CMU's
Link Grammar parser, offline: a sentence it cannot parse without skipping words is suspect) and
``none``.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transnli.generator.checks.base import (
    BackendUnavailable,
    CheckResult,
    SwitchedOff,
    ThreadedCheck,
    ThreadPool,
    check_lengths,
)
from transnli.generator.checks.linkgrammar_c import NullCount
from transnli.generator.checks.registry import register_check
from transnli.generator.memory import release_free_memory

DEFAULT_COLA_MODEL = "textattack/bert-base-uncased-CoLA"

_ACCEPTABLE_NAMES = {"acceptable", "grammatical", "correct", "good"}
_UNACCEPTABLE_NAMES = {"unacceptable", "ungrammatical", "incorrect", "bad", "not_acceptable"}


# -------------------------------------------------------------------------------------- CoLA
@register_check("acceptability", "cola")
class ColaAcceptability:
    """A CoLA classifier: the candidate is acceptable when P(acceptable) >= threshold.

    model: hub id or local folder (a folder is loaded with local_files_only). The acceptable
    class is taken from ``config.id2label`` when its names say so ("acceptable"/"unacceptable",
    ...); otherwise it is ``acceptable_label`` (default 1, right for the textattack checkpoints,
    whose labels are LABEL_0/LABEL_1). A single-logit head is read as sigmoid(logit).
    The candidate is judged alone (acceptability is absolute in the paper); originals are unused.
    Inference is batched under torch.inference_mode, sentences sorted by token length so that a
    batch pads little; results come back in input order."""

    @classmethod
    def from_options(
        cls,
        *,
        cola_model: str | None = None,
        cola_threshold: float = 0.5,
        device: str = "auto",
        batch_size: int = 32,
        **kw: Any,
    ) -> ColaAcceptability:
        """The cola_* / device / batch_size options are this backend's; the rest go to __init__."""
        return cls(
            cola_model or DEFAULT_COLA_MODEL,
            threshold=cola_threshold,
            batch_size=batch_size,
            device=device,
            **kw,
        )

    def __init__(
        self,
        model: str = DEFAULT_COLA_MODEL,
        *,
        threshold: float = 0.5,
        batch_size: int = 32,
        device: str = "auto",
        max_length: int = 128,
        acceptable_label: int | None = None,
        local_files_only: bool | None = None,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"cola threshold must be in [0, 1], got {threshold}")
        if batch_size < 1 or max_length < 2:
            raise ValueError("batch_size must be >= 1 and max_length >= 2")
        self.model_name = str(model)
        self.threshold = float(threshold)
        self.batch_size = int(batch_size)
        self.max_length = int(max_length)
        how = (
            f"on a machine with network run `huggingface-cli download {DEFAULT_COLA_MODEL}` "
            "(or `hf download ...`), copy the folder here and pass --cola-model PATH; or switch "
            "with --acceptability link-grammar (offline) or --acceptability none"
        )
        try:
            import torch
            import transformers  # noqa: F401
        except ImportError as e:
            raise BackendUnavailable(
                f"acceptability backend 'cola' needs torch and transformers ({e}). "
                "pip install torch transformers, or use --acceptability link-grammar"
            ) from e
        self._torch = torch
        self.device = _resolve_device(torch, device)

        path = Path(self.model_name).expanduser()
        self._folder: Path | None = path if path.is_dir() else None
        if self._folder is None and _looks_like_path(self.model_name):
            raise BackendUnavailable(
                f"acceptability backend 'cola': model folder {self.model_name} does not exist. "
                f"To get the paper's model: {how}"
            )
        try:
            if self._folder is not None:
                self._load(str(self._folder), local_files_only=True)
            else:
                self._load_hub(self.model_name, bool(local_files_only))
        except BackendUnavailable:
            raise
        except Exception as e:  # noqa: BLE001 - OSError offline, ValueError for odd folders...
            first_line = str(e).splitlines()[0][:300] if str(e) else ""
            raise BackendUnavailable(
                f"acceptability backend 'cola': the model {self.model_name!r} could not be loaded "
                f"({type(e).__name__}: {first_line}). To fix: {how}"
            ) from e
        self.model.to(self.device)
        self.model.eval()
        self.num_labels = int(self.model.config.num_labels)
        self.acceptable_index = self._acceptable_index(acceptable_label)
        self._version: str | None = None

    def _load(self, source: str, *, local_files_only: bool) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local_files_only)
        self.model = AutoModelForSequenceClassification.from_pretrained(
            source, local_files_only=local_files_only
        )

    def _load_hub(self, model_id: str, local_files_only: bool) -> None:
        """The Hugging Face cache first (no network at all); the hub only when it answers.
        Offline, huggingface_hub retries for most of a minute before giving up: a quick probe
        of the endpoint makes a missing model fail at once instead."""
        try:
            self._load(model_id, local_files_only=True)
            return
        except Exception as cached_error:  # noqa: BLE001
            if local_files_only or _hub_offline():
                raise cached_error from None
        reachable, why = _hub_reachable()
        if not reachable:
            raise OSError(
                f"{model_id} is not in the Hugging Face cache and the hub cannot be reached ({why})"
            )
        self._load(model_id, local_files_only=False)

    def _acceptable_index(self, acceptable_label: int | None) -> int:
        if self.num_labels == 1:
            return 0
        if acceptable_label is not None:
            if not 0 <= acceptable_label < self.num_labels:
                raise ValueError(
                    f"acceptable_label {acceptable_label} out of range for {self.num_labels} labels"
                )
            return acceptable_label
        id2label = {int(k): str(v).strip().lower() for k, v in self.model.config.id2label.items()}
        hits = [i for i, n in id2label.items() if n in _ACCEPTABLE_NAMES]
        if len(hits) == 1:
            return hits[0]
        others = [i for i, n in id2label.items() if n in _UNACCEPTABLE_NAMES]
        if self.num_labels == 2 and len(others) == 1:
            return 1 - others[0]
        return 1  # LABEL_0/LABEL_1 (textattack): 1 = acceptable

    def scores(self, sentences: Sequence[str]) -> list[float]:
        """P(acceptable) for each sentence, in input order."""
        torch = self._torch
        unique = list(dict.fromkeys(sentences))
        if not unique:
            return []
        lengths = self.tokenizer(unique, truncation=True, max_length=self.max_length)["input_ids"]
        order = sorted(range(len(unique)), key=lambda i: (len(lengths[i]), i))
        probs: dict[str, float] = {}
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                texts = [unique[i] for i in order[start : start + self.batch_size]]
                enc = self.tokenizer(
                    texts,
                    truncation=True,
                    max_length=self.max_length,
                    padding=True,
                    return_tensors="pt",
                ).to(self.device)
                logits = self.model(**enc).logits.float()
                if self.num_labels == 1:
                    p = torch.sigmoid(logits[:, 0])
                else:
                    p = torch.softmax(logits, dim=-1)[:, self.acceptable_index]
                for text, value in zip(texts, p.cpu().tolist(), strict=True):
                    probs[text] = float(value)
        return [probs[s] for s in sentences]

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
        check_lengths(originals, candidates)
        results = []
        for p in self.scores(candidates):
            score = round(p, 6)
            passed = p >= self.threshold
            reason = "" if passed else f"cola: P(acceptable) {score:.3f} < {self.threshold}"
            results.append(
                CheckResult("cola", passed, {"score": score, "threshold": self.threshold}, reason)
            )
        return results

    def version(self) -> str:
        """Model name and a short fingerprint: the hub revision when loaded from the hub, else a
        hash of the folder's config and weights files."""
        if self._version is None:
            rev = getattr(self.model.config, "_commit_hash", None)
            if rev and self._folder is None:
                tag = str(rev)[:12]
            else:
                tag = _fingerprint(self._folder) if self._folder else "unknown"
            self._version = f"{self.model_name}@{tag}"
        return self._version


def _hub_offline() -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    try:
        from huggingface_hub import constants

        return bool(getattr(constants, "HF_HUB_OFFLINE", False))
    except ImportError:  # pragma: no cover
        return False


def _hub_reachable(timeout: float = 5.0) -> tuple[bool, str]:
    """Whether the Hugging Face endpoint answers at all (any HTTP status counts)."""
    import requests

    try:
        from huggingface_hub import constants

        endpoint = constants.ENDPOINT
    except ImportError:  # pragma: no cover
        endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    try:
        requests.head(endpoint, timeout=timeout, allow_redirects=False)
        return True, ""
    except requests.RequestException as e:
        return False, f"{endpoint}: {type(e).__name__}"


def _looks_like_path(name: str) -> bool:
    """A hub id is 'name' or 'owner/name'; anything else is meant as a folder."""
    return (
        name.startswith(("/", ".", "~")) or name.count("/") > 1 or os.sep != "/" and os.sep in name
    )


def _resolve_device(torch: Any, device: str) -> str:
    device = (device or "auto").lower()
    mps = getattr(torch.backends, "mps", None)
    mps_ok = bool(mps and mps.is_available())
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "mps" if mps_ok else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise BackendUnavailable(
            "acceptability backend 'cola': device cuda requested but torch sees no CUDA device "
            f"(torch {torch.__version__}); use --device cpu or --device auto"
        )
    if device == "mps" and not mps_ok:
        raise BackendUnavailable(
            "acceptability backend 'cola': device mps is not available; "
            "use --device cpu or --device auto"
        )
    return device


def _fingerprint(folder: Path) -> str:
    """sha256 over config.json and the weight files (name and content), first 12 hex digits."""
    h = hashlib.sha256()
    files = [
        folder / "config.json",
        *sorted(folder.glob("*.safetensors")),
        *sorted(folder.glob("*.bin")),
    ]
    for f in files:
        if not f.is_file():
            continue
        h.update(f.name.encode())
        with f.open("rb") as fh:
            for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:12]


# ------------------------------------------------------------------------------ link-grammar
_LINK_GRAMMAR_FIX = (
    "apt-get install liblink-grammar5 link-grammar-dictionaries-en (Debian/Ubuntu). Or switch "
    "with --acceptability cola or --acceptability none"
)


# A parse that took this long built large tables (see LinkGrammarAcceptability).
_SLOW_PARSE_SECONDS = 0.02
# Sentences this long are parsed one at a time (see LinkGrammarAcceptability).
_LONG_SENTENCE_WORDS = 20


def _long_sentence(search: tuple[str, int]) -> bool:
    return len(search[0].split()) >= _LONG_SENTENCE_WORDS


@register_check("acceptability", "link-grammar")
class LinkGrammarAcceptability(ThreadedCheck):
    """CMU Link Grammar: a sentence needs ``null_count`` skipped words to parse (0 = fully parsed).

    relative=True (default): the candidate passes when it needs no more skipped words than its
    original. The paper's check is absolute, but link-grammar is stricter than a CoLA model on
    real NLI text: fragments ("A man on a bike."), transcribed speech ("uh-huh yeah i i think")
    and captions often do not fully parse (about a fifth of WordNet's own example sentences do
    not). In absolute mode all those hypotheses would lose every candidate, whatever the swap
    did; relative mode rejects what the swap broke, which is the question this check answers.
    relative=False: the paper's absolute reading, pass iff null_count == 0.

    A sentence that cannot be parsed at all (empty, the parse ran past ``parse_timeout`` seconds,
    or it needs more than ``max_null_count`` skipped words) has null_count None: it fails, except
    in relative mode when its original could not be parsed either.

    Each sentence is parsed only as far as the verdict needs (the parser tries 0, 1, 2, ...
    skipped words, and each further step costs more time and memory):
    1. every candidate with 0 skipped words: one that parses passes (details: ``null_count`` 0),
       whatever its original needs; in absolute mode one that does not fails;
    2. in relative mode, the originals of the others, up to ``max_null_count`` skipped words
       (details: ``null_count_original``);
    3. their candidates with up to as many skipped words as the original needs (m): one that
       parses within that passes, with its ``null_count``; one that does not fails with
       ``null_count`` None and ``null_count_above`` m (it needs more than m; how many more does
       not change the verdict). When the original needs none (m = 0) or has no parse (then every
       candidate passes), step 3 is not needed: ``null_count_above`` 0 records what step 1 found.
       The search starts at 0 again, not at 1: link-grammar 5.12 prunes differently when told
       that at least one word is skipped, and then finds no parse for some sentences that parse
       with 2 skipped words when searched from 0 (see NullCountParser).
    Verdicts are those of parsing every sentence up to the cap (same verdicts and same known
    counts on 20,000 WordNet examples), for less time and memory: a long candidate that the swap
    made worse is no longer searched up to the cap (measured: docs/speed.md, 'Acceptability check
    (link-grammar)').
    Results are cached per (sentence, skipped words searched up to): originals repeat a lot. A
    result never depends on what else is in the cache, so batches and worker processes give the same
    results.

    max_null_count (default 8): on long sentences it barely understands (WordNet's examples
    about quoted words: "`and' in `John and Mary' or ...", 26 words, 11 to 19 skipped) a parse is
    slow (docs/speed.md). Beyond 8 skipped words a parse says little about the swap, so such an
    original counts as unparseable and its candidates pass (as do those of an original that could
    not be parsed in time). On 5,000 WordNet examples 6 of 4,152 originals need more than 8; the cap
    changed no verdict and bounds the time a parse can take, so results depend less on the
    machine's speed than the wall-clock ``parse_timeout`` alone makes them. ``max_null_count=None``
    searches as far as the parser goes.

    threads: sentences parsed in parallel (the C library is called through ctypes, which lets go
    of the GIL, so parsing runs beside harper and spaCy); None: the CPUs available, at most 4.
    After a slow parse (20 ms or more) the memory it freed goes back to the OS at once, not after
    the batch: only slow parses build large tables (tens of MB for a long sentence), and the next
    one may run on the other thread, whose allocator would not reuse what the first freed.
    Sentences of 20 words or more are parsed one at a time (on one thread, while the others parse
    the shorter ones): long sentences build far larger tables than short ones, and a batch often
    holds several candidates of one long sentence, so this keeps the peak at one long parse for a
    little time (measured: docs/speed.md, 'Acceptability check (link-grammar)'). Only memory and
    time depend on the scheduling, never a result."""

    @classmethod
    def from_options(cls, **kw: Any) -> LinkGrammarAcceptability:
        """Takes the options its __init__ knows (relative, parse_timeout, ...); the run's options
        for the other backends (cola_*, lm*, device) are not this backend's: ignored."""
        own = inspect.signature(cls.__init__).parameters
        return cls(**{name: value for name, value in kw.items() if name in own})

    def __init__(
        self,
        *,
        relative: bool = True,
        parse_timeout: int = 3,
        language: str = "en",
        cache_size: int = 8192,  # a few batches' sentences: see transnli.generator.checks.grammar
        max_null_count: int | None = 8,
        threads: int | None = None,
    ) -> None:
        if max_null_count is not None and max_null_count < 0:
            raise ValueError(f"max_null_count must be >= 0 or None, got {max_null_count}")
        from transnli.generator.checks.linkgrammar_c import (
            LinkGrammarUnavailable,
            NullCountParser,
            ParseSettings,
        )

        settings = ParseSettings(
            max_null_count=999 if max_null_count is None else max_null_count,
            max_parse_time=max(1, int(parse_timeout)),
        )
        try:
            self._parser = NullCountParser(language, settings)
        except LinkGrammarUnavailable as e:
            raise BackendUnavailable(
                f"acceptability backend 'link-grammar': {e}. To fix: {_LINK_GRAMMAR_FIX}"
            ) from e
        self.max_null_count = max_null_count
        self._highest = settings.max_null_count
        self.relative = relative
        self.parse_timeout = parse_timeout
        self.language = language
        self._cache: dict[tuple[str, int], NullCount] = {}
        self._cache_size = cache_size
        # Fresh threads for every batch: link-grammar keeps each parsing thread's largest count
        # table (tens of MB after one hard sentence) until the thread ends.
        self._pool = ThreadPool(threads, "link-grammar", fresh_threads=True)
        self._parser.reserve(self._pool.threads)

    def set_threads(self, threads: int | None) -> None:
        super().set_threads(threads)
        self._parser.reserve(self._pool.threads)  # before any parse (see NullCountParser)

    def null_count(self, sentence: str) -> int | None:
        """Words the parser must skip to parse the sentence; None when it cannot parse it (within
        max_null_count skipped words and the time limit)."""
        key = (sentence, self._highest)
        return self._search([key])[key].value

    def _search(self, searches: Sequence[tuple[str, int]]) -> dict[tuple[str, int], NullCount]:
        """(sentence, highest) -> what the parser found with up to `highest` skipped words; the
        uncached ones are parsed in parallel."""
        todo = [k for k in dict.fromkeys(searches) if k not in self._cache]
        if todo:
            if len(self._cache) + len(todo) > self._cache_size:
                # Keep what this call is about to use; drop the rest (memory stays flat).
                keep = set(searches)
                self._cache = {k: v for k, v in self._cache.items() if k in keep}
            found_all = self._pool.map(self._parse, todo, one_at_a_time=_long_sentence)
            for key, found in zip(todo, found_all, strict=True):
                self._cache[key] = found
        return {k: self._cache[k] for k in searches}

    def _parse(self, search: tuple[str, int]) -> NullCount:
        started = time.perf_counter()
        found = self._parser.parse(*search)
        if time.perf_counter() - started >= _SLOW_PARSE_SECONDS:
            release_free_memory()  # see the class docstring
        return found

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
        check_lengths(originals, candidates)
        full = self._search([(c, 0) for c in candidates])  # step 1
        originals_found: dict[tuple[str, int], NullCount] = {}
        more: dict[tuple[str, int], NullCount] = {}
        if self.relative:
            unparsed = [
                (o, c)
                for o, c in zip(originals, candidates, strict=True)
                if full[(c, 0)].value != 0
            ]
            originals_found = self._search([(o, self._highest) for o, _ in unparsed])  # step 2
            more = self._search(
                [  # step 3
                    (c, m)
                    for o, c in unparsed
                    if not full[(c, 0)].timed_out
                    and (m := originals_found[(o, self._highest)].value)
                ]
            )
        results = []
        for orig, cand in zip(originals, candidates, strict=True):
            first = full[(cand, 0)]
            if first.value == 0:
                results.append(CheckResult("link-grammar", True, {"null_count": 0}))
                continue
            m = originals_found[(orig, self._highest)].value if self.relative else None
            if m:  # step 3 searched 0..m
                results.append(self._verdict(cand, more.get((cand, m), first), m, m))
            else:
                results.append(self._verdict(cand, first, 0, m))
        return results

    def _verdict(
        self, candidate: str, found: NullCount, searched_to: int, m: int | None
    ) -> CheckResult:
        """The result for a candidate that does not parse fully: `found` is its parse with up to
        `searched_to` skipped words; `m` the original's null count (absolute mode: None, and
        nothing passes)."""
        details: dict[str, Any] = {"null_count": found.value}
        if found.value is None and not found.timed_out:
            details["null_count_above"] = searched_to
        if self.relative:
            details["null_count_original"] = m
            # No parse of the candidate passes only when the original had none either.
            if m is None or found.value is not None:
                return CheckResult("link-grammar", True, details)
        if not candidate.strip():
            reason = "link-grammar: no parse (empty sentence)"
        elif found.timed_out:
            reason = "link-grammar: no parse (the parse timed out)"
        elif not self.relative:
            reason = "link-grammar: does not parse without leaving words unlinked"
        elif m == 0:
            reason = "link-grammar: word(s) left unlinked; the original parses with none"
        else:
            reason = f"link-grammar: more than {m} word(s) left unlinked, the original needs {m}"
        return CheckResult("link-grammar", False, details, reason)

    def version(self) -> str:
        mode = "relative" if self.relative else "absolute"
        if self.max_null_count is not None:
            mode += f", at most {self.max_null_count} unlinked"
        dict_version = ""
        with contextlib.suppress(Exception):
            dict_version = f", dict {self._parser.dictionary_version()}"
        return (
            f"link-grammar {self._parser.library_version()} ({self.language}{dict_version}, {mode})"
        )


# -------------------------------------------------------------------------------------- none
@register_check("acceptability", "none")
class NoAcceptability(SwitchedOff):
    """Acceptability checking switched off: every candidate passes."""
