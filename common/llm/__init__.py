"""LLM clients, shared by the generator's LLM pipeline and the evaluator's LLM judge, one job a
module:

- `base`: the interface, `LLMClient.complete_many(prompts) -> list[LLMReply]`, its error
  (`LLMError`) and what a batch of replies means (`all_unreachable`, `none_answered`);
- `openai_chat`: any OpenAI-compatible ``/chat/completions`` endpoint over HTTP;
- `hf`: local transformers models (seq2seq and causal), greedy decoding in batches;
- `reply_cache`: the SQLite reply cache and `CachedClient`, which puts it in front of any client;
- `clients`: `make_client`, a client by backend name (`BACKENDS`).

A new backend is one module with an `LLMClient` subclass, named in `clients.BACKENDS` and
`clients.make_client`.
"""
