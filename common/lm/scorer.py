"""A causal language model that scores sentences: per-token log-probabilities, in batches.

`CausalLMScorer.compare_many([(H, H'), ...])` gives log p(H) and log p(H') from the first token
where the two differ: the shared prefix has the same log-probabilities in both (the model is
causal), so it cancels in the difference d = log p(H') - log p(H): the transformer still reads
it, but the output layer never scores it. With Gemma 3's 262k-word vocabulary the output layer is
about half of the model's work, so it runs only at the positions scored, and over the vocabulary
in chunks (`OutputLayer`), so the full logits never sit in memory.

Determinism: sentences are grouped by token length (pairs by where they start to differ, with
their remainders padded on the right, which a causal model's scored positions never see), and
batches are formed in a fixed order, so the same sentences in the same call always meet the same
neighbours. A sentence's numbers can depend on its batch only through the shapes of the matrix
products, which change the last bits of float32 sums; each log-probability is
rounded to ROUND_DIGITS, which absorbs that except, rarely, at a rounding boundary. The score
cache then serves the first value computed, so a rerun repeats it."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transnli.common.devices import attention_implementation, resolve_device
from transnli.common.lm.conversion import quiet_transformers, resolve_model_folder
from transnli.common.lm.memory import drop_build_tables
from transnli.common.lm.model_folder import check_causal_lm, check_loaded
from transnli.common.lm.output_layer import OutputLayer
from transnli.common.lm.readings import (
    ROUND_DIGITS,
    PairReading,
    PairScore,
    SideStates,
    TokenScores,
)
from transnli.common.lm.score_cache import ScoreCache
from transnli.common.lm.settings import LMError, LMSettings, default_cache_dir, torch_dtype
from transnli.common.notice import announce

# What the loading announcement says (Gemma 3 270M on 2 busy cores: loaded in 10 s).
LOAD_TIME = "5-30 s"
#: what `measure_speed` times the model on: pairs of everyday sentences that differ from their
#: fifth word on, so that they make one batch, as a run's candidates do
SPEED_PAIRS = tuple(
    (
        f"The young man is {a} in the park today.",
        f"The young man is {b} in the park today.",
    )
    for a, b in (
        ("happy", "sad"),
        ("tall", "short"),
        ("early", "late"),
        ("rich", "poor"),
        ("awake", "asleep"),
        ("strong", "weak"),
        ("inside", "outside"),
        ("quiet", "loud"),
    )
)


@dataclass
class _Request:
    tokens: tuple[int, ...]
    start: int
    result: TokenScores | None = field(default=None)
    span_end: int = 0
    states: dict[int, SideStates] | None = field(default=None)


class CausalLMScorer:
    """Scores sentences with one causal LM. Build with `load(settings)`; `identity` is the
    provenance record (spec, weights' sha256, dtype) that a run writes beside its outputs."""

    def __init__(
        self, model, tokenizer, identity: dict[str, Any], settings: LMSettings, cache=None
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.identity = identity
        self.settings = settings
        self._cache = cache
        self.max_tokens = int(getattr(model.config, "max_position_embeddings", 0) or 1 << 30)
        config = (
            model.config.get_text_config() if hasattr(model.config, "get_text_config") else None
        )
        self.layers = int(getattr(config or model.config, "num_hidden_layers", 0))
        self._body = model.base_model
        # transformers 5.x renames the forward's `past_key_values` to `cache`
        parameters = inspect.signature(self._body.forward).parameters
        self._cache_kwarg = "cache" if "cache" in parameters else "past_key_values"
        self._output = OutputLayer.of(model)
        self.computed = 0  # sentences scored by the model (not served by the cache)
        self.cached = 0  # sentences served by the score cache
        # Called with the number of sentences the model has just scored, after each of its
        # batches (a progress bar inside a long call).
        self.progress: Callable[[int], None] | None = None

    @classmethod
    def load(cls, settings: LMSettings | None = None) -> CausalLMScorer:
        """The model `settings.spec` names, checked to be a causal LM with its tokenizer (one
        line, an LMError, for anything else)."""
        settings = settings or LMSettings()
        settings.validate()
        where, identity = resolve_model_folder(settings)
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        announce(f"loading the language model {settings.spec}", LOAD_TIME)
        device = resolve_device(settings.device)

        try:
            with quiet_transformers():
                check_causal_lm(where, AutoConfig.from_pretrained(where))
                tokenizer = AutoTokenizer.from_pretrained(where)
                model, info = AutoModelForCausalLM.from_pretrained(
                    where,
                    dtype=torch_dtype(settings.dtype),
                    attn_implementation=attention_implementation(device),
                    output_loading_info=True,
                )
        except LMError:
            raise
        except (OSError, ValueError, KeyError) as exc:  # transformers' own for a bad folder
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise LMError(f"language model {settings.spec} could not be loaded: {first}") from exc
        check_loaded(where, model, tokenizer, info)
        drop_build_tables(tokenizer)  # 140 MB for Gemma, unused once built (common/lm/memory.py)
        model.to(device).eval()
        identity = {**identity, "class": type(model).__name__, "dtype": settings.dtype}
        cache = None
        if settings.use_cache and identity.get("weights_sha256"):
            cache = ScoreCache(
                (Path(settings.cache_dir) if settings.cache_dir else default_cache_dir())
                / "lm-scores",
                identity,
            )
        return cls(model, tokenizer, identity, settings, cache)

    def measure_speed(self, pairs: Sequence[tuple[str, str]] = SPEED_PAIRS) -> float:
        """Sentences a second that `compare_many` scores here, timed on `pairs` after one pair
        to warm up, without the score cache (so a rerun measures the model again) and without
        reporting progress; the numbers scored are thrown away."""
        cache, progress, computed, cached = self._cache, self.progress, self.computed, self.cached
        self._cache, self.progress = None, None
        try:
            self.compare_many(pairs[:1])
            t0 = time.perf_counter()
            self.compare_many(pairs)
            seconds = time.perf_counter() - t0
        finally:
            self._cache, self.progress, self.computed = cache, progress, computed
            self.cached = cached
        return 2 * len(pairs) / max(seconds, 1e-6)

    def run_sentences(self, run: str) -> int | None:
        """How many sentences an earlier run of key `run` (its input, settings and these weights)
        had the model score into the score cache, all of them there still; None when unknown
        (no such run finished, or no cache)."""
        return None if self._cache is None else self._cache.run_sentences(run)

    def note_run(self, run: str, sentences: int) -> None:
        """Record that a run of key `run` had `sentences` scored, all now in the score cache."""
        if self._cache is not None:
            self._cache.note_run(run, sentences)

    def encode(self, sentence: str) -> tuple[int, ...]:
        """The sentence's token ids, starting with the BOS token the model scores from."""
        ids = self.tokenizer(sentence, add_special_tokens=True)["input_ids"]
        bos = self.tokenizer.bos_token_id
        if bos is not None and (not ids or ids[0] != bos):
            ids = [bos, *ids]
        if len(ids) > self.max_tokens:
            raise LMError(
                f"a sentence of {len(ids)} tokens is longer than the language model's "
                f"{self.max_tokens}-token context: {sentence[:60]!r}"
            )
        return tuple(ids)

    def score_sentences(self, sentences: Sequence[str]) -> list[TokenScores]:
        """Log-probabilities of every token after BOS, for each sentence."""
        return self.score_tokens([self.encode(s) for s in sentences], [1] * len(sentences))

    def compare_many(self, pairs: Sequence[tuple[str, str]]) -> list[PairScore]:
        """For each (H, H'): log p of each from the first token where they differ. The two share
        everything before that token, so the model reads that prefix once for both."""
        requests = self._read(pairs, ())
        return [
            PairScore(h.result.total, h2.result.total, h.start)  # type: ignore[union-attr]
            for h, h2 in requests
        ]

    def read_pairs(
        self, pairs: Sequence[tuple[str, str]], layers: Sequence[int]
    ) -> list[PairReading]:
        """compare_many's scores plus both sides' hidden states at each of `layers` (0 is the
        embeddings, i the output of block i): from the same forward pass, no extra model work."""
        layers = tuple(sorted(set(layers)))
        bad = [x for x in layers if not 0 <= x <= self.layers]
        if bad or not layers:
            raise LMError(f"the language model has layers 0-{self.layers}, not {bad or 'none'}")
        return [
            PairReading(
                h.result,  # type: ignore[arg-type]
                h2.result,  # type: ignore[arg-type]
                (h.span_end, h2.span_end),
                h.states,  # type: ignore[arg-type]
                h2.states,  # type: ignore[arg-type]
            )
            for h, h2 in self._read(pairs, layers)
        ]

    def _read(
        self, pairs: Sequence[tuple[str, str]], layers: tuple[int, ...]
    ) -> list[tuple[_Request, _Request]]:
        requests: list[tuple[_Request, _Request]] = []
        for original, modified in pairs:
            a, b = self.encode(original), self.encode(modified)
            start = first_scored(a, b)
            end_a, end_b = swapped_span_ends(a, b, start)
            requests.append(
                (_Request(a, start, span_end=end_a), _Request(b, start, span_end=end_b))
            )
        todo, apart = [], []
        for pair in requests:
            for r in pair:
                if self._cache is not None:
                    r.result = self._cache.get(r.tokens, r.start)
                    if layers and r.result is not None:
                        r.states = self._cache.get_states(r.tokens, r.start, r.span_end, layers)
            if any(r.result is None or (layers and r.states is None) for r in pair):
                h, h2 = pair
                # A tokenizer without BOS can differ at token 0: nothing before `start` is shared.
                (todo if h.tokens[: h.start] == h2.tokens[: h.start] else apart).append(pair)
        self.cached += 2 * (len(requests) - len(todo) - len(apart))  # before the model's work
        for batch in _shared_prefix_batches(todo, self.settings.batch_size):
            self._keep([r for pair in batch for r in pair], *self._forward_pairs(batch, layers))
        self._compute([r for pair in apart for r in pair], layers)
        self.computed += 2 * len(todo)
        return requests

    def score_tokens(
        self, token_lists: Sequence[tuple[int, ...]], starts: Sequence[int]
    ) -> list[TokenScores]:
        requests = [_Request(tuple(t), s) for t, s in zip(token_lists, starts, strict=True)]
        if self._cache is not None:
            for r in requests:
                r.result = self._cache.get(r.tokens, r.start)
        missing = [r for r in requests if r.result is None]
        self.cached += len(requests) - len(missing)
        self._compute(missing)
        return [r.result for r in requests]  # type: ignore[misc]

    def _compute(self, requests: list[_Request], layers: tuple[int, ...] = ()) -> None:
        for batch in _equal_shape_batches(requests, self.settings.batch_size):
            self._keep(batch, *self._forward(batch, layers))
        self.computed += len(requests)

    def _keep(
        self,
        requests: list[_Request],
        scores: list[TokenScores],
        states: list[dict[int, SideStates]] | None = None,
    ) -> None:
        for i, (r, result) in enumerate(zip(requests, scores, strict=True)):
            r.result = result
            if self._cache is not None:
                self._cache.put(r.tokens, r.start, result)
            if states is not None:
                r.states = states[i]
                if self._cache is not None:
                    self._cache.put_states(r.tokens, r.start, r.span_end, states[i])
        if self.progress is not None:
            self.progress(len(requests))

    def _forward(
        self, batch: list[_Request], layers: tuple[int, ...] = ()
    ) -> tuple[list[TokenScores], list[dict[int, SideStates]] | None]:
        import torch

        first = min(r.start for r in batch)
        ids = torch.tensor([r.tokens for r in batch], device=self.model.device)
        with torch.inference_mode():
            out = self._body(input_ids=ids, output_hidden_states=bool(layers))
            # Positions first-1 .. length-2 predict tokens first .. length-1.
            hidden = out.last_hidden_state[:, first - 1 : -1]
            logprobs = self._output.log_probs(hidden, ids[:, first:]).cpu().tolist()
            states = None
            if layers:
                states = [
                    {
                        x: _side_states(
                            out.hidden_states[x][i, 1 : r.start],
                            out.hidden_states[x][i, r.start :],
                            r.span_end - r.start,
                        )
                        for x in layers
                    }
                    for i, r in enumerate(batch)
                ]
        scores = [
            TokenScores.rounded(r.start, row[r.start - first :])
            for r, row in zip(batch, logprobs, strict=True)
        ]
        return scores, states

    def _forward_pairs(
        self, batch: list[tuple[_Request, _Request]], layers: tuple[int, ...] = ()
    ) -> tuple[list[TokenScores], list[dict[int, SideStates]] | None]:
        """Pairs with the same start: the prefix is read once, with its keys and values kept;
        then both sides' remainders, one row each, are read on top of them. A remainder is padded
        on the right to the batch's longest: a causal model's real positions never see what comes
        after them, so the padding changes nothing that is scored. With a layer, the remainders
        include their last token (which predicts nothing) so that its hidden state exists too."""
        import torch

        start = batch[0][0].start
        device = self.model.device
        prefix = torch.tensor([h.tokens[:start] for h, _ in batch], device=device)
        sides = [r for pair in batch for r in pair]  # h0, h0', h1, h1', ...
        wanted = bool(layers)
        last = 0 if wanted else 1  # how many final tokens the remainders leave out
        width = max(len(r.tokens) for r in sides) - start - last
        more = None
        with torch.inference_mode():
            out = self._body(input_ids=prefix, use_cache=True, output_hidden_states=wanted)
            hidden = [out.last_hidden_state[:, -1:].repeat_interleave(2, dim=0)]  # -> token start
            if width > 0:
                cache = getattr(out, "cache", None) or out.past_key_values
                cache.batch_repeat_interleave(2)
                pad = self.tokenizer.pad_token_id or 0
                rest = torch.tensor(
                    [
                        list(r.tokens[start : len(r.tokens) - last])
                        + [pad] * (width - len(r.tokens) + start + last)
                        for r in sides
                    ],
                    device=device,
                )
                more = self._body(
                    input_ids=rest,
                    use_cache=True,
                    output_hidden_states=wanted,
                    **{self._cache_kwarg: cache},
                )
                hidden.append(more.last_hidden_state)
            hidden = torch.cat(hidden, dim=1)
            rows, targets = [], []
            for i, r in enumerate(sides):
                n = len(r.tokens) - start
                rows.append(hidden[i, :n])
                targets.append(torch.tensor(r.tokens[start:], device=device))
            logprobs = self._output.log_probs(torch.cat(rows), torch.cat(targets)).cpu().tolist()
            states = None
            if wanted:
                # the prefix after BOS is read once per pair; the remainder once per side
                states = [
                    {
                        x: _side_states(
                            out.hidden_states[x][i // 2, 1:],
                            more.hidden_states[x][i, : len(r.tokens) - start],  # type: ignore[union-attr]
                            r.span_end - start,
                        )
                        for x in layers
                    }
                    for i, r in enumerate(sides)
                ]
        scores, at_ = [], 0
        for r in sides:
            n = len(r.tokens) - start
            scores.append(TokenScores.rounded(start, logprobs[at_ : at_ + n]))
            at_ += n
        return scores, states

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()


def first_scored(a: Sequence[int], b: Sequence[int]) -> int:
    """The token a pair is scored from: the first where the two differ (token 0 is BOS). A
    sentence that is a prefix of the other still scores its last token, so neither side is
    empty."""
    k = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        k += 1
    return max(1, min(k, len(a) - 1, len(b) - 1))


def swapped_span_ends(a: Sequence[int], b: Sequence[int], start: int) -> tuple[int, int]:
    """Where the swapped span ends (exclusive) in each of a pair's token lists: the tokens from
    `start` up to the shared suffix. Neither span is empty (a deletion keeps one token)."""
    room = min(len(a), len(b)) - start - 1
    suffix = 0
    while suffix < room and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    return len(a) - suffix, len(b) - suffix


def _side_states(prefix, remainder, span: int) -> SideStates:
    """prefix: [k, width] states of the tokens before `start` (BOS excluded); remainder:
    [n, width] states from `start` on; span: how many of the remainder's tokens were swapped."""
    import torch

    pooled = torch.cat([prefix, remainder]).float().mean(0)
    swapped = remainder[:span].float().mean(0)
    return SideStates(_rounded(swapped.tolist()), _rounded(pooled.tolist()))


def _rounded(values: Sequence[float]) -> tuple[float, ...]:
    return tuple(round(x, ROUND_DIGITS) for x in values)


def _equal_shape_batches(requests: Iterable[_Request], size: int) -> list[list[_Request]]:
    """Batches of requests of the same length (no padding), in a fixed order. Starts may differ: a
    batch keeps logits from its earliest start, and each request reads its own positions."""
    groups: dict[int, list[_Request]] = {}
    for r in requests:
        groups.setdefault(len(r.tokens), []).append(r)
    batches = []
    for key in sorted(groups):
        group = sorted(groups[key], key=lambda r: (r.start, r.tokens))
        batches += [group[i : i + size] for i in range(0, len(group), size)]
    return batches


def _shared_prefix_batches(
    pairs: Iterable[tuple[_Request, _Request]], size: int
) -> list[list[tuple[_Request, _Request]]]:
    """Batches of pairs with the same start (so one prefix tensor, no padding), pairs of similar
    length together (so little padding after it), in a fixed order."""
    groups: dict[int, list[tuple[_Request, _Request]]] = {}
    for pair in pairs:
        groups.setdefault(pair[0].start, []).append(pair)
    batches = []
    for start in sorted(groups):
        group = sorted(
            groups[start],
            key=lambda p: (max(len(p[0].tokens), len(p[1].tokens)), p[0].tokens, p[1].tokens),
        )
        batches += [group[i : i + size] for i in range(0, len(group), size)]
    return batches
