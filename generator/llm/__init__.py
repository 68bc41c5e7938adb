"""LLM-based antonym replacement (the paper's LLM pipeline) and the clients it shares with the
evaluator's LLM judge.

- `clients`: one small interface, `LLMClient.complete_many(prompts) -> list[LLMReply]`, with an
  OpenAI-compatible HTTP backend and two local transformers backends, and a SQLite reply cache.
- `prompting`: the prompt templates shipped in `resources/prompts/`.
- `verify`: the answer parsed out of a reply and checked (one word changed, at the quoted
  position, no negation added).
- `pipeline`: `LLMPipeline`, which picks words exactly as the WordNet pipeline does.
"""
