"""Sentence families and their consistency metrics: pure graph logic over labels (no I/O, no
models).

A *family* is every sentence generated from one source pair (P, H): P, H, each accepted H' and the
negation H¬ of H (pipeline "negation"). A model labels every ordered pair of members, which gives
a label graph: `graph[i][j]` = M(member i, member j) (None on the diagonal and where the model gave
no label). On that graph:

- the four transitive rules of rules.py hold for every chain a -> b -> c of distinct members, not
  only (P, H, H') (see docs/families.md for why one-directional E and C keep them sound);
- stran(K): the share of K-member sub-families in which the rules hold. Where the model left pairs
  unlabelled, a sub-family holds when some labelling of those pairs satisfies every chain (like
  the paper's cycle check on partial graphs), so a violation may need more than three sentences;
- scomm: contradiction is symmetric, C(a,b) iff C(b,a), over unordered pairs;
- sneg: H¬ flips M(P,H) (E <-> C, N stays N), and (H,H¬) is mutual contradiction.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations, permutations

from transnli.generator.record import stable_id

from .labels import FLIP, C, E, Graph, N
from .repair import repair
from .rules import applicable_rule

P_ROLE, H_ROLE, H2_ROLE, NEG_ROLE = "P", "H", "H'", "Hneg"
NEGATION_PIPELINE = "negation"
STRAN_KS = (3, 4, 5)
STRAN_SAMPLES = 1000  # the paper's M: enough for about +-3 points at 95% (its appendix I)
STRAN_SEED = 0
SNEG_KEYS = ("e_to_c", "c_to_e", "n_to_n")
SNEG_NAMES = {
    "e_to_c": "E(P,H) => C(P,H¬)",
    "c_to_e": "C(P,H) => E(P,H¬)",
    "n_to_n": "N(P,H) => N(P,H¬)",
    "mutual_c": "(H,H¬) mutual C",
}
_SNEG_KEY_OF = {E: "e_to_c", C: "c_to_e", N: "n_to_n"}


@dataclass(frozen=True)
class Member:
    text: str
    role: str  # P, H, H' or Hneg


@dataclass(frozen=True)
class Family:
    dataset: str
    source_id: str
    members: tuple[Member, ...]  # P, H, then H' and H¬ in first-seen order; texts are distinct
    gold_label: str | None = None  # gold label of (P, H)

    @property
    def id(self) -> str:
        return stable_id("family", self.dataset, self.source_id, self.premise, self.hypothesis)

    @property
    def premise(self) -> str:
        return self.members[0].text

    @property
    def hypothesis(self) -> str:
        return self.members[1].text

    @property
    def size(self) -> int:
        return len(self.members)

    def texts(self) -> list[str]:
        return [m.text for m in self.members]

    def index(self, role: str) -> list[int]:
        return [i for i, m in enumerate(self.members) if m.role == role]

    def pairs(self) -> list[tuple[str, str]]:
        """Every ordered pair of distinct members, row by row."""
        t = self.texts()
        return [(t[i], t[j]) for i, j in permutations(range(len(t)), 2)]

    def graph(self, label_of) -> list[list[str | None]]:
        """The label graph from `label_of((a, b)) -> label or None`."""
        t = self.texts()
        return [
            [None if i == j else label_of((t[i], t[j])) for j in range(len(t))]
            for i in range(len(t))
        ]


def build_families(triples: Iterable) -> list[Family]:
    """Group triples into families, in first-seen order.

    A triple needs `dataset`, `source_id`, `premise`, `hypothesis`, `modified` (or
    `modified_hypothesis`), `pipeline` and `gold_label`. The key is (dataset, source_id, P, H):
    the source id when there is one, the pair itself when not (P and H are always part of it, so
    one source id that somehow holds two pairs still gives two families). A triple of pipeline
    "negation" adds its sentence as H¬, any other as an H'. A sentence equal to one already in the
    family is not added twice (its pairs would be pairs of identical sentences)."""
    order: dict[tuple, dict] = {}
    for t in triples:
        modified = getattr(t, "modified", None) or t.modified_hypothesis
        key = (t.dataset, t.source_id or "", t.premise, t.hypothesis)
        fam = order.get(key)
        if fam is None:
            fam = order[key] = {"members": {t.premise: P_ROLE}, "gold": t.gold_label}
            fam["members"].setdefault(t.hypothesis, H_ROLE)
        if fam["gold"] is None:
            fam["gold"] = t.gold_label
        role = NEG_ROLE if getattr(t, "pipeline", "") == NEGATION_PIPELINE else H2_ROLE
        fam["members"].setdefault(modified, role)
    out = []
    for (dataset, source_id, premise, hypothesis), fam in order.items():
        if premise == hypothesis:  # a degenerate pair: no family to speak of
            continue
        members = tuple(Member(text, role) for text, role in fam["members"].items())
        out.append(Family(dataset, source_id, members, fam["gold"]))
    return out


def family_pairs(families: Iterable[Family]) -> list[tuple[str, str]]:
    """The distinct ordered pairs that label every family, in first-seen order."""
    seen: dict[tuple[str, str], None] = {}
    for f in families:
        for p in f.pairs():
            seen.setdefault(p, None)
    return list(seen)


def pair_cost(n_members: int) -> int:
    """Ordered pairs a family of n members needs: n(n-1), i.e. (k+2)(k+1) for k generated
    sentences."""
    return n_members * (n_members - 1)


# --------------------------------------------------------------------------- rules over chains
@dataclass(frozen=True)
class ChainOutcome:
    chain: tuple[int, int, int]  # member indices a, b, c
    rule: str
    violated: bool


def chain_outcomes(graph: Graph, members: Sequence[int] | None = None) -> list[ChainOutcome]:
    """Every chain a -> b -> c of distinct members whose rule antecedent holds and whose M(a,c)
    is known: M(a,b) plays M(P,H), (b,c) plays (H,H'), M(a,c) plays M(P,H')."""
    idx = range(len(graph)) if members is None else members
    out = []
    for a, b, c in permutations(idx, 3):
        ph, hh2, h2h, ph2 = graph[a][b], graph[b][c], graph[c][b], graph[a][c]
        if ph is None or hh2 is None or h2h is None or ph2 is None:
            continue
        rule = applicable_rule(ph, hh2, h2h)
        if rule is not None:
            out.append(ChainOutcome((a, b, c), rule.key, bool(rule.violated_by(ph2))))
    return out


def is_consistent(graph: Graph, members: Sequence[int] | None = None) -> bool:
    """Whether the rules hold among `members` (all when None): no chain violates a rule and, where
    the model left pairs unlabelled, some labelling of those pairs makes every chain hold.

    With every pair labelled this is "no chain a -> b -> c violates a rule". With gaps it is the
    counterpart of the logical-consistency paper's cycle check on partial graphs (a partial
    ranking is transitive when it can be completed to one): a 0/1 program (repair.py) decides
    whether a completion exists, so a violation may span four or more sentences (E(a,b), b = c,
    c = d, C(a,d) with (a,c) unlabelled: (a,c) must be E by a -> b -> c, then a -> c -> d
    breaks)."""
    idx = list(range(len(graph)) if members is None else members)
    if all(graph[a][b] is not None for a in idx for b in idx if a != b):
        return not any(o.violated for o in chain_outcomes(graph, idx))
    sub = [[graph[a][b] for b in idx] for a in idx]
    return not repair(sub, max_members=None).changed


# --------------------------------------------------------------------------- stran(K) sampling
def _unrank_combination(n: int, k: int, rank: int) -> tuple[int, ...]:
    """The `rank`-th k-subset of range(n) in lexicographic order."""
    out = []
    x = 0
    for i in range(k):
        while True:
            count = math.comb(n - x - 1, k - i - 1)
            if rank < count:
                out.append(x)
                x += 1
                break
            rank -= count
            x += 1
    return tuple(out)


def sample_subfamilies(
    sizes: Sequence[int], k: int, limit: int = STRAN_SAMPLES, seed: int | str = STRAN_SEED
) -> list[tuple[int, tuple[int, ...]]]:
    """K-member sub-families as (family index, member indices): all of them when there are at
    most `limit`, else `limit` drawn uniformly without replacement from all K-subsets of all
    families (a fixed seed: every model of a dataset is judged on the same sub-families)."""
    counts = [math.comb(n, k) if n >= k else 0 for n in sizes]
    total = sum(counts)
    if total <= limit:
        ranks = range(total)
    else:
        ranks = sorted(random.Random(f"stran:{seed}:{k}").sample(range(total), limit))
    out = []
    fam, start = 0, 0
    for r in ranks:
        while r >= start + counts[fam]:
            start += counts[fam]
            fam += 1
        out.append((fam, _unrank_combination(sizes[fam], k, r - start)))
    return out


# --------------------------------------------------------------------------- scomm, sneg
@dataclass(frozen=True)
class CommCounts:
    pairs: int = 0  # unordered pairs with both labels known
    asymmetric: int = 0  # C one way, not C the other way
    contradiction_cases: int = 0  # pairs with C in at least one order
    entail_contradict: int = 0  # E one way and C the other (a subset of asymmetric)
    equivalent: int = 0  # mutual E: symmetric by definition, counted for reference


def scomm_counts(graph: Graph) -> CommCounts:
    pairs = asym = cases = ec = eq = 0
    for a, b in combinations(range(len(graph)), 2):
        x, y = graph[a][b], graph[b][a]
        if x is None or y is None:
            continue
        pairs += 1
        if C in (x, y):
            cases += 1
            if x != y:
                asym += 1
                ec += E in (x, y)
        eq += x == y == E
    return CommCounts(pairs, asym, cases, ec, eq)


def sneg_outcomes(family: Family, graph: Graph) -> list[tuple[str, bool]]:
    """(check, violated) for each H¬ of the family: the flip of M(P,H) and (H,H¬) mutual C.
    Checks whose labels are missing are left out."""
    p, h = 0, 1
    out = []
    for n in family.index(NEG_ROLE):
        ph, pn = graph[p][h], graph[p][n]
        if ph is not None and pn is not None:
            out.append((_SNEG_KEY_OF[ph], pn != FLIP[ph]))
        hn, nh = graph[h][n], graph[n][h]
        if hn is not None and nh is not None:
            out.append(("mutual_c", not (hn == nh == C)))
    return out
