"""Which judgements of a review log count: pure rules over a log line and the run's triples.

A judgement counts only when
- the triple at its `index` is still the one it judged: same content digest (the sha256 of its
  three sentences, transnli.review.log.triple_digest) and the same id as its `item`; a triple that
  is gone (a shorter triples.jsonl), changed or moved (a line deleted or edited above it), or a
  line whose `item` or `index` was edited, is reported and never counted;
- it belongs to the order it declares: for the random sample, the index is one of
  `random.Random(sample_seed).sample(range(sample_of), sample_size)` and `sample_of` is the run's
  number of triples (the sample can be drawn again, so a judgement of a hand-picked triple cannot
  pass for a random one); `all` and `uncertain` cover every triple.
Everything that does not count is reported with its log line, so `review --agreement`, the
reviewed export and its card say what they left out.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transnli.generator.run_folder import TRIPLES
from transnli.review.errors import ReviewError
from transnli.review.index import LineIndex
from transnli.review.log import LOG, read_log, triple_digest

RANDOM, ALL, UNCERTAIN = "random", "all", "uncertain"
ORDERS = (RANDOM, ALL, UNCERTAIN)


def random_sample(n: int, seed: int, size: int) -> list[int]:
    """The random order's sample of `size` of `n` triples (deterministic for the same three)."""
    return random.Random(seed).sample(range(n), min(size, n))


@dataclass(frozen=True)
class TripleKey:
    """What identifies a triple to its judgements: its id and content digest."""

    id: Any
    digest: str

    @classmethod
    def of(cls, triple: dict[str, Any]) -> TripleKey:
        return cls(triple.get("id"), triple_digest(triple))


def triple_problem(judgement: dict[str, Any], key: TripleKey | None, n: int) -> str | None:
    """Why a judgement is not one of the triple whose key is `key` (the record at its index;
    None when there is none), or None when it is."""
    index = judgement["index"]
    if "digest" not in judgement:
        return "it has no content digest (an older transnli wrote it): judge the triple again"
    if key is None:
        return f"record {index} is not in triples.jsonl ({n} triples): the triple it judged is gone"
    if key.digest != judgement["digest"]:
        return f"the triple at record {index} is not the one it judged (the sentences differ)"
    if judgement["item"] != key.id:
        return f"item {judgement['item']!r} is not the id of record {index} ({key.id!r})"
    return None


@dataclass
class SampleRule:
    """Whether a judgement belongs to the order it declares (random samples drawn once each)."""

    n: int
    drawn: dict[tuple[int, int], frozenset[int]] = field(default_factory=dict)

    def problem(self, judgement: dict[str, Any]) -> str | None:
        kind = judgement.get("sample")
        if kind not in ORDERS:
            return f"its sample {kind!r} is not one of {', '.join(ORDERS)}"
        of = judgement.get("sample_of")
        if of is None:
            return "it does not say how many triples its order was drawn from (no sample_of)"
        if of != self.n:
            return f"its order was drawn from {of} triples, and the run has {self.n}"
        if kind != RANDOM:
            return None
        seed, size = judgement.get("sample_seed"), judgement.get("sample_size")
        if seed is None or size is None:
            return "it does not say which random sample it is of (no sample_seed or sample_size)"
        if (seed, size) not in self.drawn:
            self.drawn[seed, size] = frozenset(random_sample(self.n, seed, size))
        if judgement["index"] not in self.drawn[seed, size]:
            return (
                f"record {judgement['index']} is not in the random sample it declares "
                f"(seed {seed}, size {size})"
            )
        return None


@dataclass(frozen=True)
class CheckedReview:
    """The standing judgements of a log, split into those that count and the reports of those
    that do not."""

    counted: list[dict[str, Any]]
    problems: list[str]  # "LOG:LINE: why; not counted"

    def samples(self) -> list[tuple[int, int]]:
        """(seed, size) of the random samples the counted judgements come from."""
        return sorted(
            {(j["sample_seed"], j["sample_size"]) for j in self.counted if j["sample"] == RANDOM}
        )


def check_judgements(
    numbered: Iterable[tuple[int, dict[str, Any]]],
    key_at: Callable[[int], TripleKey],
    n: int,
    log: Path | str,
) -> CheckedReview:
    """Split (line number, standing judgement) pairs of `log` by the rules above; `key_at(i)`
    is the key of record i of the run's `n` triples."""
    rule = SampleRule(n)
    counted, problems = [], []
    for lineno, judgement in numbered:
        index = judgement["index"]
        key = key_at(index) if index < n else None
        problem = triple_problem(judgement, key, n) or rule.problem(judgement)
        if problem:
            problems.append(f"{log}:{lineno}: {problem}; not counted")
        else:
            counted.append(judgement)
    return CheckedReview(counted, problems)


def load_checked(run_dir: Path, *, required: bool = False) -> CheckedReview:
    """RUN/review.jsonl checked against RUN/triples.jsonl. `required`: refuse (one line) a log
    with no judgement, or none that counts, as a reviewed export or publish must."""
    log = read_log(run_dir / LOG)
    triples = run_dir / TRIPLES
    if not triples.is_file():
        raise ReviewError(
            f"{triples} is missing; give the --out folder of a `transnli generate` run"
        )
    index = LineIndex(triples)
    checked = check_judgements(
        log.standing.numbered(), lambda i: TripleKey.of(index.record(i)), len(index), log.path
    )
    if required and not checked.counted:
        if not checked.problems:
            raise ReviewError(
                f"{log.path} holds no judgement; judge some triples with `transnli review "
                f"{run_dir}` first"
            )
        raise ReviewError(
            f"{log.path} holds no judgement of a triple of this run ({len(checked.problems)} "
            f"not counted; the first: {checked.problems[0]}); is it another run's review?"
        )
    return checked
