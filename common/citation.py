"""How to cite transnli and the paper it follows, for the cards of a published triples dataset
(transnli.generator.publish) and of published evaluation results (transnli.evaluator.eval_card)."""

from __future__ import annotations

from typing import Any

PAPER_TITLE = "Transitive self-consistency evaluation of NLI models without gold labels"
PAPER_BIBTEX = """@inproceedings{wu-last-2025-transitive,
  title = {Transitive self-consistency evaluation of {NLI} models without gold labels},
  author = {Wu, Wei and Last, Mark},
  booktitle = {Proceedings of the 2025 Conference on Empirical Methods in Natural Language Processing},
  year = {2025},
  publisher = {Association for Computational Linguistics}
}"""  # noqa: E501


def tool_bibtex(config: dict[str, Any] | None) -> str:
    version = (config or {}).get("transnli_version", "")
    lines = [
        "@software{transnli,",
        "  title = {transnli: adversarial {NLI} test sets by antonym replacement and transitive "
        "self-consistency evaluation},",
    ]
    if version:
        lines.append(f"  version = {{{version}}},")
    lines += ["  license = {MIT},", "  note = {Python package transnli}", "}"]
    return "\n".join(lines)
