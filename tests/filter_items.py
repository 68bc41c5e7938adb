"""Filter items built from spaCy's parse of a sentence, for the tests of the candidate filters (the
`tagger` fixture is in conftest.py)."""

from __future__ import annotations

from transnli.generator.filters import FilterItem


def item(tagger, text: str, word: str, antonym: str, antonym_pos: str = "a") -> FilterItem:
    """`word` (its first occurrence) in `text` replaced by `antonym`, as the generator builds it."""
    sent = tagger.tag([text])[0]
    tok = next(t for t in sent.tokens if t.text == word)
    modified = text[: tok.idx] + antonym + text[tok.idx + len(word) :]
    return FilterItem(sent, tok, antonym, antonym_pos, modified)


def verdicts(flt, tagger, cases) -> list[bool]:
    """Whether `flt` passes each (text, word, antonym[, antonym_pos]) case."""
    return [v.passed for v in flt.judge_many([item(tagger, *case) for case in cases])]
