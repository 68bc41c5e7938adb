"""Prompt templates, shipped as text files in `resources/prompts/`.

A template holds `{name}` placeholders that are replaced literally (no str.format, so braces in a
sentence are safe). `replace_antonym.txt` is the paper's prompt; its `{sentence}` is the sentence
with the chosen word in quotation marks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from transnli.resources import resource_path

REPLACE_ANTONYM = "replace_antonym"
NLI_JUDGE = "nli_judge"
QUOTE = '"'
_FIELD = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:12]

    @property
    def id(self) -> str:
        """name@sha: changes whenever the wording does (recorded on every record)."""
        return f"{self.name}@{self.sha}"

    @property
    def fields(self) -> set[str]:
        return set(_FIELD.findall(self.text))

    def render(self, **values: str) -> str:
        missing = self.fields - set(values)
        if missing:
            raise KeyError(f"prompt {self.name}: no value for {', '.join(sorted(missing))}")
        return _FIELD.sub(
            lambda m: values[m.group(1)] if m.group(1) in values else m.group(0), self.text
        )


def load_template(name_or_path: str) -> PromptTemplate:
    """A shipped template by name (``replace_antonym``) or any text file by path."""
    p = Path(name_or_path)
    if p.suffix == ".txt" and p.is_file():
        return PromptTemplate(p.stem, p.read_text(encoding="utf-8").strip())
    res = resource_path("prompts", f"{name_or_path}.txt")
    if not res.is_file():
        raise FileNotFoundError(f"no prompt template {name_or_path!r} in resources/prompts")
    return PromptTemplate(name_or_path, res.read_text(encoding="utf-8").strip())


def quote_word(sentence: str, char_start: int, char_end: int, quote: str = QUOTE) -> str:
    """The sentence with the word at [char_start, char_end) in quotation marks."""
    return (
        f"{sentence[:char_start]}{quote}{sentence[char_start:char_end]}{quote}{sentence[char_end:]}"
    )


def replacement_prompt(
    template: PromptTemplate, sentence: str, char_start: int, char_end: int
) -> str:
    return template.render(
        sentence=quote_word(sentence, char_start, char_end), word=sentence[char_start:char_end]
    )


def judge_prompt(template: PromptTemplate, premise: str, hypothesis: str) -> str:
    return template.render(premise=premise, hypothesis=hypothesis)
