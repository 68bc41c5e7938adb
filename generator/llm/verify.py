"""Verification of an LLM's replacement: parse the answer out of the reply, then check that it
meets the prompt's requirements (the paper's Table 7).

    verdict = verify_reply(reply_text, sentence, char_start, char_end)
    verdict.reason  # ok | unparseable | no_change | negation_added | multiple_words_changed
                    # | wrong_position

Parsing: `<think>` blocks, markdown, bullets and labels such as "Modified sentence:" are stripped;
every line, every quoted passage, and every piece of a line cut at an arrow, a dash or a bracket is
a candidate; the candidate whose words are closest to the original sentence (and differs from it,
when any does) is the answer. Lines labelled "Original" are skipped.

Checking works on word tokens (punctuation, quotation marks and case ignored; "n't" is a token of
its own), aligned with difflib:
- `no_change`: the same words as the original;
- `negation_added`: more negation words than the original (not, no, never, n't, without, none ...),
  checked before the count, so "is" -> "is not" is reported as negation;
- `multiple_words_changed`: more than one word substituted, or any word inserted or deleted
  (except that a/an before the word may change to agree with the new word, as the WordNet
  realiser does);
- `wrong_position`: exactly one word substituted, but not the quoted one;
- `ok`: exactly the quoted word substituted. `modified` is then the *original* sentence with just
  that word (and an agreeing article) replaced, so the model's other edits to spacing,
  punctuation or quotation marks never reach the triple.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

REASONS = (
    "ok",
    "unparseable",
    "no_change",
    "negation_added",
    "multiple_words_changed",
    "wrong_position",
)
NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "n't",
        "without",
        "none",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "cannot",
        "nowhere",
        "noone",
        "nay",
        "nope",
        "nevermore",
    }
)
ARTICLES = frozenset({"a", "an"})
MIN_SIMILARITY = 0.5

# Word tokens: "isn't" -> is, n't; "John's" -> John, 's; hyphenated words split (as spaCy does).
_TOKEN = re.compile(r"[^\W_]+(?=n['’]t\b)|n['’]t\b|(?<=[^\W_])['’][^\W_]+|[^\W_]+")
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
_FENCE = re.compile(r"^\s*```[\w-]*\s*$", re.M)
_LABEL = re.compile(
    r"""^\s*(?:[-*•>]+|\d+[.)])?\s*(?:\*\*|__|\*)?\s*
    (?P<label>(?:the\s+|my\s+)?(?:original|modified|new|changed|revised|resulting|opposite|rewritten|
        updated|final|edited|transformed|antonym|output|answer|result|sentence)
        (?:\s+(?:sentence|version|answer|text|output))?)
    \s*(?:\*\*|__|\*)?\s*[:：]\s*(?:\*\*|__|\*)?\s*""",
    re.I | re.X,
)
_BULLET = re.compile(r"^\s*(?:[-*•>]+|\d+[.)])\s+")
_ARROW = re.compile(r"\s*(?:->|→|=>|⟶)\s*")
_CUT = re.compile(
    r"\s+[-–—]\s+|\s+\(|\s*\[|\s+(?:because|since|as this|which|this changes|explanation)\b", re.I
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)]*\s+(?=[\"'“‘(]*[A-Z0-9])")
_QUOTED = re.compile(r"[\"“«]([^\"”»\n]{3,})[\"”»]")
_WRAP = "\"'“”‘’`*_ "


@dataclass(frozen=True)
class Tok:
    text: str
    start: int
    end: int

    @property
    def norm(self) -> str:
        return self.text.lower().replace("’", "'")


def tokenize(text: str) -> list[Tok]:
    return [Tok(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _norms(text: str) -> list[str]:
    return [t.norm for t in tokenize(text)]


def similarity(a: list[str], b: list[str]) -> float:
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


# -- parsing ---------------------------------------------------------------------------------------
def _strip_wrapping(text: str) -> str:
    text = text.strip()
    prev = None
    while prev != text:
        prev = text
        text = text.strip().strip(_WRAP).strip()
        if text.endswith((":",)):
            text = text[:-1]
    return text


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


def candidates(reply: str, n_sentences: int = 1) -> list[str]:
    """Every passage of `reply` that could be the answer, in reply order (deduplicated)."""
    text = _FENCE.sub("", _THINK.sub("", reply)).replace("**", "").replace("__", "")
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _LABEL.match(line)
        if m:
            if "original" in m.group("label").lower():
                continue
            line = line[m.end() :]
        else:
            line = _BULLET.sub("", line)
        pieces = [line, *(p for p in _ARROW.split(line) if p)] if _ARROW.search(line) else [line]
        for piece in pieces:
            found = [piece]
            cut = _CUT.search(piece)
            if cut and cut.start() > 0:
                found.append(piece[: cut.start()])
            sents = _sentences(piece)
            if len(sents) > n_sentences:
                found += [
                    " ".join(sents[i : i + n_sentences])
                    for i in range(len(sents) - n_sentences + 1)
                ]
            found += [q.group(1) for q in _QUOTED.finditer(piece) if " " in q.group(1).strip()]
            out += [_strip_wrapping(f) for f in found]
    return [c for c in dict.fromkeys(out) if c]


def parse_answer(reply: str | None, original: str) -> tuple[str | None, float]:
    """(the answer sentence, its similarity to the original), or (None, best similarity seen)."""
    if not reply or not reply.strip():
        return None, 0.0
    orig = _norms(original)
    n_sent = max(1, len(_sentences(original)))
    best: tuple[bool, float, int] | None = None
    answer = None
    for rank, cand in enumerate(candidates(reply, n_sent)):
        toks = _norms(cand)
        if not toks:
            continue
        sim = similarity(orig, toks)
        key = (
            toks != orig,
            sim,
            -rank,
        )  # a changed sentence first, then the closest, then the first
        if best is None or key > best:
            best, answer = key, cand
    if best is None or best[1] < MIN_SIMILARITY:
        return None, best[1] if best else 0.0
    return answer, best[1]


# -- checking --------------------------------------------------------------------------------------
@dataclass
class Verdict:
    reason: str
    answer: str | None = None
    modified: str | None = None
    old_word: str | None = None
    new_word: str | None = None
    similarity: float = 0.0
    changes: list[dict[str, Any]] = field(default_factory=list)
    negations_added: list[str] = field(default_factory=list)
    article: tuple[str, str] | None = None

    @property
    def passed(self) -> bool:
        return self.reason == "ok"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"passed": self.passed, "verdict": self.reason}
        if self.new_word is not None:
            d["old_word"], d["new_word"] = self.old_word, self.new_word
        if self.changes:
            d["changes"] = self.changes
        if self.negations_added:
            d["negations_added"] = self.negations_added
        if self.article:
            d["article"] = list(self.article)
        d["similarity"] = round(self.similarity, 4)
        return d


def _match_case(new: str, old: str) -> str:
    letters = [c for c in old if c.isalpha()]
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return new.upper()
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    if old.islower() and (new.isupper() or (new[:1].isupper() and new[1:].islower())):
        return new.lower()  # the model's capitals ("AWAKE", "Awake"), not a proper noun's
    return new


def target_index(tokens: list[Tok], char_start: int, char_end: int) -> int:
    """The token overlapping [char_start, char_end) (the quoted word), or -1."""
    for i, t in enumerate(tokens):
        if t.start < char_end and char_start < t.end:
            return i
    return -1


def check_answer(
    answer: str | None, original: str, char_start: int, char_end: int, similarity_: float = 0.0
) -> Verdict:
    if answer is None:
        return Verdict("unparseable", similarity=similarity_)
    a_toks, b_toks = tokenize(original), tokenize(answer)
    a, b = [t.norm for t in a_toks], [t.norm for t in b_toks]
    sim = similarity(a, b)
    v = Verdict("ok", answer=answer, similarity=sim)
    added = Counter(w for w in b if w in NEGATIONS) - Counter(w for w in a if w in NEGATIONS)
    subs: list[tuple[int, int]] = []  # (original index, answer index)
    other = False
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 - i1 == j2 - j1:
            pairs = [
                (i, j) for i, j in zip(range(i1, i2), range(j1, j2), strict=True) if a[i] != b[j]
            ]
            subs += pairs
            v.changes += [
                {
                    "op": "replace",
                    "position": i,
                    "original": a_toks[i].text,
                    "answer": b_toks[j].text,
                }
                for i, j in pairs
            ]
        else:
            other = True
            v.changes.append(
                {
                    "op": op,
                    "position": i1,
                    "original": " ".join(t.text for t in a_toks[i1:i2]),
                    "answer": " ".join(t.text for t in b_toks[j1:j2]),
                }
            )
    if not v.changes:
        v.reason = "no_change"
        return v
    if added:
        v.reason = "negation_added"
        v.negations_added = sorted(added.elements())
        return v
    target = target_index(a_toks, char_start, char_end)
    article = None
    if len(subs) == 2 and not other:
        (i0, j0), (i1, j1) = subs
        if i1 == i0 + 1 and {a[i0], b[j0]} == ARTICLES:
            article, subs = (i0, j0), [(i1, j1)]
    if other or len(subs) != 1:
        v.reason = "multiple_words_changed"
        return v
    ((i, j),) = subs
    if i != target:
        v.reason = "wrong_position"
        return v
    old, new = a_toks[i], b_toks[j]
    v.old_word, v.new_word = old.text, _match_case(new.text, old.text)
    text = original[: old.start] + v.new_word + original[old.end :]
    if article is not None:
        ao, an = a_toks[article[0]], b_toks[article[1]]
        new_article = _match_case(an.text, ao.text)
        text = text[: ao.start] + new_article + text[ao.end :]
        v.article = (ao.text, new_article)
    v.modified = text
    return v


def verify_reply(reply: str | None, original: str, char_start: int, char_end: int) -> Verdict:
    """Parse `reply` and check it against `original`, whose word at [char_start, char_end) was
    quoted."""
    answer, sim = parse_answer(reply, original)
    return check_answer(answer, original, char_start, char_end, sim)
