"""LLM-based antonym replacement (the paper's LLM pipeline). The clients it sends prompts through
are shared with the evaluator's LLM judge and live in `transnli.common.llm`.

- `prompting`: the prompt templates shipped in `resources/prompts/`.
- `verify`: the answer parsed out of a reply and checked (one word changed, at the quoted
  position, no negation added).
- `pipeline`: `LLMPipeline`, which picks words exactly as the WordNet pipeline does.
"""
