"""The pair judge: a causal language model fine-tuned to read H and H' together and say whether H'
is good (docs/judging.md: coherent English whose meaning differs from H).

The linear judge (transnli.generator.judge) reads frozen states of each side; what it still keeps
is about the pair (a fluent swap in the wrong sense, a swap that breaks world knowledge, one that
leaves the claim unchanged), which needs attention over both sentences at once. Here the model
reads one prompt that shows both, with the swapped span marked in each (`pair_prompt`); a LoRA
adapter on its attention and MLP projections (peft) and a linear head on the last token's final
hidden state are trained end to end for the decision, and the head's score is calibrated by Platt
scaling on candidates held out from training.

A trained pair judge is a folder that its libraries load:

    FOLDER/pair_judge.json     format, the base model it was trained on, the template, the
                               calibration, the threshold, the training record and its figures
    FOLDER/adapter/            the LoRA adapter: PeftModel.from_pretrained(base, FOLDER/adapter)
    FOLDER/head.safetensors    the head: "weight" [1, width], "bias" [1]

A stacked folder also holds a linear judge file, named by pair_judge.json's 'stack': the two
probabilities are averaged, the mean mapped by the stack's own calibration (fitted on genres
neither judge saw), and the card's precision estimate for the stack is validated the same way
(stack.precision_estimate). A folder made ready to ship on its own (the one that ships) records
the same in 'release': the rule that chose its threshold, its figures on genres it never saw, and
its validated estimate (release.precision_estimate).

Scoring is deterministic: prompts are read in a fixed order (sorted by token length, then text)
in batches of the judge's own size, padded on the right (the last real token never sees the
padding: the model is causal), and each raw score is rounded to ROUND_DIGITS, so the caller's
batch size or worker never changes a probability. Training: `train_pair_judge`;
benchmarks/train_pair_judge.py runs it on the judged sets, for any causal LM, and validates it by
genres left out.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PAIR_JUDGE_FORMAT = "transnli-pair-judge-1"
META_FILE = "pair_judge.json"
ADAPTER_DIR = "adapter"
HEAD_FILE = "head.safetensors"
ROUND_DIGITS = 4
TEMPLATE = (
    "Original: {original}\n"
    "Changed: {changed}\n"
    "The word [{old}] was replaced by [{new}]. "
    "Is the changed sentence good English that says something different?"
)
#: the same pair in about two thirds of the tokens (52 against 76 on the test set's candidates):
#: the marked spans and the two words, no question; the adapter learns the task either way
COMPACT_TEMPLATE = "{original}\n{changed}\n{old} -> {new}"
#: the compact pair and the WordNet senses the swap stands on (`sense_fields`): what the word
#: meant for its antonym to hold, so a swap in another sense than the sentence's can be seen
SENSES_TEMPLATE = "{original}\n{changed}\n{old}: {old_sense}\n{new}: {new_sense}"
#: the templates a pair judge can be trained with, by name (a folder records the text itself)
TEMPLATES = {"question": TEMPLATE, "compact": COMPACT_TEMPLATE, "senses": SENSES_TEMPLATE}
#: what a senses template shows when WordNet holds no sense for the swap
NO_SENSE = "(no WordNet sense)"
#: how a stacked folder combines its pair judge with its linear judge (docs/quality-model.md)
STACK_COMBINE = "mean"
#: how a stacked folder's precision estimate may be made (transnli.generator.precision.METHODS)
ESTIMATE_METHODS = ("mean",)
AUTOCAST = (None, "bfloat16")  # PairJudgeTraining.autocast: none, or a torch dtype's name
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class PairJudgeError(ValueError):
    """A pair judge folder that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class PairJudgeTraining:
    """How a pair judge is trained (recorded in its folder)."""

    lora_rank: int = 8
    lora_alpha: int = 16
    target_modules: tuple[str, ...] = PROJECTIONS
    epochs: int = 2
    batch_size: int = 8
    learning_rate: float = 2e-4
    head_learning_rate: float = 1e-3
    max_tokens: int = 192
    seed: int = 0
    template: str = TEMPLATE
    # "bfloat16": the training forward runs under torch.autocast (float32 weights and optimiser):
    # 1.6-2 times as fast on a CPU with AVX-512 BF16 (Gemma 3 270M, Qwen2.5 1.5B;
    # docs/quality-model.md). Reading is float32 whatever this says: under bfloat16 a score moves
    # with what else is in its batch, and a judge's p must not
    autocast: str | None = None

    def validate(self) -> None:
        if self.autocast not in AUTOCAST:
            raise PairJudgeError(
                f"pair judge training: autocast must be one of {sorted(AUTOCAST, key=str)}, "
                f"got {self.autocast!r}"
            )
        if self.lora_rank < 1 or self.epochs < 1 or self.batch_size < 1 or self.max_tokens < 16:
            raise PairJudgeError(
                "pair judge training: lora_rank, epochs and batch_size must be >= 1 and "
                f"max_tokens >= 16, got {asdict(self)}"
            )
        for name in ("original", "changed", "old", "new"):
            if "{" + name + "}" not in self.template:
                raise PairJudgeError(f"pair judge template: it must contain {{{name}}}")


def swapped_spans(original: str, changed: str) -> tuple[int, int, int]:
    """(start, end in original, end in changed): the smallest run of whole words where the two
    sentences differ (common prefix and suffix, widened to word boundaries)."""
    start = 0
    limit = min(len(original), len(changed))
    while start < limit and original[start] == changed[start]:
        start += 1
    tail = 0
    while (
        tail < limit - start
        and original[len(original) - 1 - tail] == changed[len(changed) - 1 - tail]
    ):
        tail += 1
    while start > 0 and original[start - 1].isalnum():
        start -= 1
    end_o, end_c = len(original) - tail, len(changed) - tail
    while end_o < len(original) and original[end_o].isalnum():
        end_o += 1
        end_c += 1
    return start, end_o, end_c


def sense_fields(old: str, new: str) -> dict[str, str]:
    """{old_sense, new_sense}: WordNet's definitions of the senses in which `new` is the antonym
    of `old` (transnli.generator.wordnet.antonym_senses), or NO_SENSE for both."""
    from transnli.generator.wordnet import antonym_senses

    senses = antonym_senses(old, new)
    old_sense, new_sense = senses if senses else (NO_SENSE, NO_SENSE)
    return {"old_sense": old_sense, "new_sense": new_sense}


def pair_prompt(original: str, changed: str, template: str = TEMPLATE) -> str:
    """The one text the model reads for a pair: both sentences, the swapped span bracketed in
    each, the words themselves, and (when the template asks for them) the senses of the swap."""
    start, end_o, end_c = swapped_spans(original, changed)
    old, new = original[start:end_o], changed[start:end_c]
    senses = sense_fields(old, new) if "{old_sense}" in template else {}
    return template.format(
        original=f"{original[:start]}[{old}]{original[end_o:]}",
        changed=f"{changed[:start]}[{new}]{changed[end_c:]}",
        old=old,
        new=new,
        **senses,
    )


@dataclass
class PairJudgeModel:
    """A base causal LM with its LoRA adapter (a peft model) and the head."""

    model: Any  # peft.PeftModel over a transformers causal LM
    head: Any  # torch.nn.Linear(width, 1)
    tokenizer: Any
    max_tokens: int = 192

    def raw_scores(self, prompts: Sequence[str], batch_size: int = 16) -> list[float]:
        """The head's score of each prompt, rounded, independent of `prompts`' order and of
        what else is in the call (fixed batches over the sorted distinct prompts)."""
        import torch

        distinct = sorted(set(prompts), key=lambda p: (len(self.encode(p)), p))
        scores: dict[str, float] = {}
        self.model.eval()
        with torch.inference_mode():
            for lo in range(0, len(distinct), batch_size):
                chunk = distinct[lo : lo + batch_size]
                values = self.logits(chunk).tolist()
                for prompt, value in zip(chunk, values, strict=True):
                    scores[prompt] = round(value, ROUND_DIGITS)
        return [scores[p] for p in prompts]

    def encode(self, prompt: str) -> list[int]:
        return self.tokenizer(prompt, truncation=True, max_length=self.max_tokens)["input_ids"]

    def logits(self, prompts: Sequence[str], autocast: str | None = None):
        """The head's raw score of each prompt (a tensor, with gradients when training); the base
        model's forward under torch.autocast in the dtype `autocast` names (training only)."""
        import torch

        batch = self.tokenizer(
            list(prompts),
            padding=True,
            padding_side="right",  # per call: a tokenizer shared with a scorer keeps its own
            truncation=True,
            max_length=self.max_tokens,
            return_tensors="pt",
        )
        device = self.head.weight.device
        ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
        body = self.model.get_base_model().model
        dtype = getattr(torch, autocast or "float32")
        with torch.autocast(device.type, dtype=dtype, enabled=autocast is not None):
            hidden = body(input_ids=ids, attention_mask=mask).last_hidden_state
        last = mask.sum(dim=1) - 1  # right padding: the last real token of each row
        states = hidden[torch.arange(hidden.shape[0], device=device), last]
        return self.head(states.float()).squeeze(-1)  # float32: scores are never bf16-rounded


def load_tokenizer(lm_folder: str | Path):
    """The base model's tokenizer, with a padding token (PairJudgeModel pads on the right: the
    head reads the last real token)."""
    from transformers import AutoTokenizer
    from transnli.common.lm.memory import drop_build_tables

    tokenizer = AutoTokenizer.from_pretrained(lm_folder)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    drop_build_tables(tokenizer)  # 140 MB for Gemma's, never read once the tokenizer is built
    return tokenizer


def load_base(lm_folder: str | Path, device: str = "cpu"):
    """The tokenizer and the float32 causal LM of a local folder."""
    import torch
    from transformers import AutoModelForCausalLM
    from transnli.common.devices import attention_implementation, resolve_device
    from transnli.common.lm.conversion import quiet_transformers

    tokenizer = load_tokenizer(lm_folder)
    with quiet_transformers():  # its "Loading weights" bar is not ours: the run's is
        model = AutoModelForCausalLM.from_pretrained(
            lm_folder,
            dtype=torch.float32,
            attn_implementation=attention_implementation(resolve_device(device)),
        )
    return tokenizer, model.to(device)


def sharing_weights(model):
    """A second module tree over the very tensors of `model` (parameters and buffers): peft then
    wraps the copy's layers with the adapter and leaves `model`'s own untouched, so a judge stacked
    with a language model already loaded adds the adapter's few MB, not a second model."""
    import copy

    memo = {id(t): t for t in (*model.parameters(), *model.buffers())}
    return copy.deepcopy(model, memo)


def hidden_width(model) -> int:
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else None
    return int((config or model.config).hidden_size)


def new_pair_judge(lm_folder: str | Path, training: PairJudgeTraining, device: str = "cpu"):
    """A trainable PairJudgeModel: the base LM with a fresh LoRA adapter and a zero head."""
    import torch
    from peft import LoraConfig, get_peft_model

    training.validate()
    torch.manual_seed(training.seed)
    tokenizer, base = load_base(lm_folder, device)
    config = LoraConfig(
        r=training.lora_rank,
        lora_alpha=training.lora_alpha,
        lora_dropout=0.0,
        target_modules=list(training.target_modules),
    )
    model = get_peft_model(base, config)
    head = torch.nn.Linear(hidden_width(base), 1).to(device)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    return PairJudgeModel(model, head, tokenizer, training.max_tokens)


def training_fingerprint(
    prompts: Sequence[str], labels: Sequence[int], training: PairJudgeTraining
) -> str:
    """What a checkpoint belongs to: the settings and every (prompt, label), in order."""
    digest = hashlib.sha256(json.dumps(asdict(training), sort_keys=True).encode())
    for prompt, label in zip(prompts, labels, strict=True):
        digest.update(f"{int(label)}\t{prompt}\n".encode())
    return digest.hexdigest()


def save_checkpoint(path: Path, judge: PairJudgeModel, optimiser, state: dict[str, Any]) -> None:
    """The trainable weights, the optimiser's moments and where the loop stands, written through a
    temporary file renamed into place (an interruption leaves the previous checkpoint whole)."""
    import torch

    named = judge.model.named_parameters()
    trainable = {n: p.detach().clone() for n, p in named if p.requires_grad}
    partial = path.with_name(path.name + ".partial")
    torch.save(
        {
            **state,
            "adapter": trainable,
            "head": judge.head.state_dict(),
            "optimiser": optimiser.state_dict(),
        },
        partial,
    )
    os.replace(partial, path)


def load_checkpoint(path: Path, judge: PairJudgeModel, optimiser, fingerprint: str) -> dict:
    """Restore a checkpoint of this very run into the judge and the optimiser; its loop state."""
    import torch

    try:
        saved = torch.load(path, map_location=judge.head.weight.device, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file gets the same clear error
        raise PairJudgeError(f"{path}: not a readable training checkpoint ({exc})") from exc
    if saved.get("fingerprint") != fingerprint:
        raise PairJudgeError(
            f"{path}: a checkpoint of another training run (its rows or settings differ); "
            "remove it to start afresh"
        )
    with torch.no_grad():
        for name, param in judge.model.named_parameters():
            if param.requires_grad:
                param.copy_(saved["adapter"][name])
    judge.head.load_state_dict(saved["head"])
    optimiser.load_state_dict(saved["optimiser"])
    return {k: saved[k] for k in ("step", "losses", "epoch_total")}


def train_pair_judge(
    judge: PairJudgeModel,
    prompts: Sequence[str],
    labels: Sequence[int],
    training: PairJudgeTraining,
    progress: Callable[[int, float], None] | None = None,
    checkpoint: Path | None = None,
    checkpoint_every: int = 200,
) -> list[float]:
    """Fine-tune the adapter and the head on (prompt, label) with a binary cross-entropy, in
    shuffled batches of a fixed seed; returns each epoch's mean loss. `progress(step, loss)` is
    called after every step it trains.

    With `checkpoint`, the state is saved there every `checkpoint_every` steps and after the last,
    and a run that finds a checkpoint of the same rows and settings resumes from it: the batches
    come in the same order and the weights come out as an uninterrupted run's would."""
    import torch

    if len(prompts) != len(labels) or not prompts:
        raise PairJudgeError("pair judge training needs as many labels as prompts, at least one")
    generator = torch.Generator().manual_seed(training.seed)
    adapter = [p for p in judge.model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(
        [
            {"params": adapter, "lr": training.learning_rate},
            {"params": judge.head.parameters(), "lr": training.head_learning_rate},
        ]
    )
    fingerprint = training_fingerprint(prompts, labels, training) if checkpoint else ""
    done = {"step": 0, "losses": [], "epoch_total": 0.0}
    if checkpoint is not None and Path(checkpoint).is_file():
        done = load_checkpoint(Path(checkpoint), judge, optimiser, fingerprint)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    target = torch.tensor(list(labels), dtype=torch.float32, device=judge.head.weight.device)
    losses, step = list(done["losses"]), 0
    last = training.epochs * -(-len(prompts) // training.batch_size)
    for epoch in range(training.epochs):
        judge.model.train()
        # drawn for every epoch, finished or not, so a resumed run sees the same orders
        order = torch.randperm(len(prompts), generator=generator).tolist()
        total = done["epoch_total"] if epoch == len(done["losses"]) else 0.0
        for lo in range(0, len(order), training.batch_size):
            step += 1
            if step <= done["step"]:
                continue
            rows = order[lo : lo + training.batch_size]
            loss = loss_fn(
                judge.logits([prompts[i] for i in rows], training.autocast), target[rows]
            )
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * len(rows)
            if checkpoint is not None and (step % checkpoint_every == 0 or step == last):
                state = {"fingerprint": fingerprint, "step": step, "losses": losses}
                save_checkpoint(Path(checkpoint), judge, optimiser, {**state, "epoch_total": total})
            if progress is not None:
                progress(step, loss.item())
        if epoch >= len(losses):
            losses.append(total / len(order))
    judge.model.eval()
    return losses


def platt(raw: Sequence[float], labels: Sequence[int]) -> dict[str, float]:
    """Platt scaling: p = sigmoid(a * raw + b), fitted by logistic regression on held-out scores."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1e6).fit(np.asarray(raw, dtype=float)[:, None], list(labels))
    return {"a": round(float(model.coef_[0, 0]), 6), "b": round(float(model.intercept_[0]), 6)}


def calibrated(raw: float, calibration: dict[str, float]) -> float:
    z = calibration["a"] * raw + calibration["b"]
    return round(1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0))), ROUND_DIGITS)


def save_pair_judge(folder: str | Path, judge: PairJudgeModel, meta: dict[str, Any]) -> Path:
    """Write the judge folder (adapter, head, pair_judge.json last) through a temporary folder
    renamed into place: an interrupted write never leaves a folder that looks complete."""
    from safetensors.torch import save_file

    folder = Path(folder)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    judge.model.save_pretrained(partial / ADAPTER_DIR)
    tidy_adapter(partial / ADAPTER_DIR)
    head = {
        "weight": judge.head.weight.detach().cpu().contiguous(),
        "bias": judge.head.bias.detach().cpu().contiguous(),
    }
    save_file(head, str(partial / HEAD_FILE))
    doc = {"format": PAIR_JUDGE_FORMAT, **meta}
    validate_meta(doc, partial / META_FILE)
    (partial / META_FILE).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    if folder.exists():
        raise PairJudgeError(f"{folder}: already exists; a trained judge is never overwritten")
    os.replace(partial, folder)
    return folder


def tidy_adapter(adapter: Path) -> None:
    """Make peft's saved adapter the same bytes on every run and every machine: peft writes
    target_modules from a set (its order follows the process's hash seed), the base model as
    the absolute path of this user's converted copy, and a model card template that is empty
    but for that path (pair_judge.json holds the provenance). The base keeps its folder name,
    which names the conversion and its digest."""
    config = adapter / "adapter_config.json"
    doc = json.loads(config.read_text(encoding="utf-8"))
    if isinstance(doc.get("target_modules"), list):
        doc["target_modules"] = sorted(doc["target_modules"])
    if isinstance(doc.get("base_model_name_or_path"), str):
        doc["base_model_name_or_path"] = Path(doc["base_model_name_or_path"]).name
    config.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (adapter / "README.md").unlink(missing_ok=True)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def validate_meta(doc: Any, where: Path) -> None:
    """Every field scoring needs, checked; one PairJudgeError line naming the field."""
    if not isinstance(doc, dict):
        raise PairJudgeError(f"{where}: not a JSON object")
    if doc.get("format") != PAIR_JUDGE_FORMAT:
        raise PairJudgeError(f"{where}: field 'format' must be {PAIR_JUDGE_FORMAT!r}")
    calibration = doc.get("calibration")
    if not isinstance(calibration, dict) or not all(
        _finite(calibration.get(k)) for k in ("a", "b")
    ):
        raise PairJudgeError(f"{where}: field 'calibration' must hold finite numbers 'a' and 'b'")
    threshold = doc.get("threshold")
    if not _finite(threshold) or not 0.0 < threshold < 1.0:
        raise PairJudgeError(f"{where}: field 'threshold' must be a number between 0 and 1")
    template = doc.get("template")
    if not isinstance(template, str) or not all(
        "{" + k + "}" in template for k in ("original", "changed", "old", "new")
    ):
        raise PairJudgeError(
            f"{where}: field 'template' must be a string with {{original}}, {{changed}}, "
            "{old} and {new}"
        )
    max_tokens = doc.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 16:
        raise PairJudgeError(f"{where}: field 'max_tokens' must be an integer >= 16")
    if "stack" in doc:
        validate_stack(doc["stack"], where)
    if "release" in doc:
        if "stack" in doc:
            raise PairJudgeError(
                f"{where}: fields 'stack' and 'release' exclude each other (a stack records "
                "its measurements in 'stack')"
            )
        validate_release(doc["release"], where)


def validate_stack(stack: Any, where: Path) -> None:
    """A folder's optional 'stack': the linear judge file (in the folder) whose probability is
    averaged with the pair judge's, the optional map of that mean ('calibration') and the
    validated precision estimate ('precision_estimate')."""
    name = stack.get("linear_judge") if isinstance(stack, dict) else None
    if not isinstance(name, str) or not name or Path(name).name != name or name.startswith("."):
        raise PairJudgeError(
            f"{where}: field 'stack.linear_judge' must name a judge file in the folder"
        )
    if stack.get("combine") != STACK_COMBINE:
        raise PairJudgeError(f"{where}: field 'stack.combine' must be {STACK_COMBINE!r}")
    calibration = stack.get("calibration")
    if calibration is not None and not (
        isinstance(calibration, dict)
        and all(_finite(calibration.get(k)) for k in ("a", "b"))
        and calibration["a"] > 0
    ):
        raise PairJudgeError(
            f"{where}: field 'stack.calibration' must hold finite numbers 'a' (> 0) and 'b'"
        )
    validate_estimate(stack.get("precision_estimate"), "stack.precision_estimate", where)


def validate_release(release: Any, where: Path) -> None:
    """A lone folder's optional 'release': how its threshold was chosen ('threshold_rule',
    'threshold_rows'), what it measured on genres it never saw ('validation') and the card's
    validated precision estimate ('precision_estimate')."""
    if not isinstance(release, dict):
        raise PairJudgeError(f"{where}: field 'release' must be a JSON object")
    validate_estimate(release.get("precision_estimate"), "release.precision_estimate", where)


def validate_estimate(estimate: Any, name: str, where: Path) -> None:
    """A validated precision estimate (absent is allowed): its method and its largest error."""
    if estimate is not None and not (
        isinstance(estimate, dict)
        and estimate.get("method") in ESTIMATE_METHODS
        and _finite(estimate.get("max_abs_error"))
        and 0.0 <= estimate["max_abs_error"] < 1.0
    ):
        raise PairJudgeError(
            f"{where}: field '{name}' must hold 'method' (one of "
            f"{', '.join(ESTIMATE_METHODS)}) and 'max_abs_error' (a number from 0 to 1)"
        )


def measured_record(meta: dict[str, Any]) -> dict[str, Any]:
    """Where a folder records its threshold's rule, its figures on genres it never saw and the
    card's validated estimate: a stacked folder's 'stack', a lone folder's 'release' ({} when
    it has neither: a folder as training wrote it)."""
    return meta.get("stack") or meta.get("release") or {}


def stacked_judge_file(folder: str | Path, meta: dict[str, Any]) -> Path | None:
    """The linear judge file a stacked folder averages with its pair judge; None when alone."""
    stack = meta.get("stack")
    return Path(folder) / stack["linear_judge"] if stack else None


def stack_probability(
    p_linear: float, p_pair: float, calibration: dict[str, float] | None = None
) -> float:
    """The stacked judge's probability: the mean of the two calibrated probabilities, mapped by
    the folder's stack calibration when it has one (Platt scaling of the mean's log-odds, fitted
    on genres the two judges never saw: the mean of two calibrated probabilities is pulled towards
    0.5, so alone it understates how sure they are; docs/quality-model.md)."""
    if calibration is None:
        return round((p_linear + p_pair) / 2, ROUND_DIGITS)
    z = calibration["a"] * stack_log_odds(p_linear, p_pair) + calibration["b"]
    return round(1 / (1 + math.exp(-max(min(z, 60.0), -60.0))), ROUND_DIGITS)


def stack_log_odds(p_linear: float, p_pair: float) -> float:
    """The log-odds of the mean of the two probabilities: what a stack calibration maps (and what
    benchmarks/fit_stack_calibration.py fits it on)."""
    edge = 10.0 ** -(ROUND_DIGITS + 2)
    mean = min(max((p_linear + p_pair) / 2, edge), 1 - edge)
    return math.log(mean / (1 - mean))


def stack_calibration(meta: dict[str, Any]) -> dict[str, float] | None:
    """The map a stacked folder applies to the mean of its two probabilities (None: the mean)."""
    return (meta.get("stack") or {}).get("calibration")


def default_pair_judge_path() -> Path:
    """The pair judge folder that ships with transnli: the compact-template judge, alone (the
    default preset's judge; docs/quality-model.md, "The pair judge")."""
    from transnli.resources import resource_path

    return Path(resource_path("models", "pair_judge_gemma3_270m"))


@dataclass
class PairJudge:
    """A loaded pair judge: calibrated probabilities that each (H, H') is good."""

    model: PairJudgeModel
    meta: dict[str, Any]
    source: Path
    batch_size: int = 16
    #: prompts whose raw score is kept for a later call (the most recent ones): `--lm-antonyms`
    #: ranks a word's candidates and the check then reads the chosen one again
    remembered: int = 4096
    seen: OrderedDict[str, float] = field(default_factory=OrderedDict, repr=False)

    @property
    def threshold(self) -> float:
        return float(self.meta["threshold"])

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Each pair's calibrated probability; a prompt read before is not read again (a score
        does not depend on what else a call holds, so this changes no number)."""
        prompts = [pair_prompt(h, m, self.meta["template"]) for h, m in pairs]
        new = [p for p in dict.fromkeys(prompts) if p not in self.seen]
        if new:
            self.seen.update(zip(new, self.model.raw_scores(new, self.batch_size), strict=True))
        raw = []
        for prompt in prompts:
            self.seen.move_to_end(prompt)
            raw.append(self.seen[prompt])
        while len(self.seen) > self.remembered:
            self.seen.popitem(last=False)
        return [calibrated(r, self.meta["calibration"]) for r in raw]


def read_pair_judge_meta(folder: str | Path) -> dict[str, Any]:
    """The judge folder's validated pair_judge.json, once its adapter and head files are seen to
    be there; reads no weights (doctor uses it as it is)."""
    folder = Path(folder)
    meta_path = folder / META_FILE
    if folder.is_file():
        raise PairJudgeError(
            f"{folder}: a file, not a pair judge folder (a linear judge file runs with "
            "--acceptability judge)"
        )
    if not meta_path.is_file():
        raise PairJudgeError(f"{folder}: not a pair judge folder (no {META_FILE})")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PairJudgeError(f"{meta_path}: not readable JSON ({exc})") from exc
    validate_meta(meta, meta_path)
    if not (folder / ADAPTER_DIR / "adapter_config.json").is_file():
        raise PairJudgeError(f"{folder / ADAPTER_DIR}: no adapter_config.json (not a peft adapter)")
    if not (folder / HEAD_FILE).is_file():
        raise PairJudgeError(f"{folder}: no {HEAD_FILE} (the judge's head)")
    linear = stacked_judge_file(folder, meta)
    if linear is not None and not linear.is_file():
        raise PairJudgeError(f"{linear}: the linear judge named by field 'stack' is missing")
    return meta


def load_pair_judge(
    folder: str | Path,
    lm_folder: str | Path,
    device: str = "cpu",
    loaded=None,
    loaded_tokenizer=None,
) -> PairJudge:
    """The judge in `folder` on the base model in `lm_folder`; every problem is one
    PairJudgeError line naming the file. `loaded`: that base model, already loaded in float32
    (a language model check's); the judge then shares its weights (`sharing_weights`)
    and gives the same scores as on a model of its own. `loaded_tokenizer`: that model's
    tokenizer, used as it is when it has a padding token (a second Gemma tokenizer is 138 MB)."""
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file

    folder = Path(folder)
    meta = read_pair_judge_meta(folder)
    if loaded is None:
        tokenizer, base = load_base(lm_folder, device)
    else:
        if loaded.dtype != torch.float32:
            raise PairJudgeError(
                f"{folder}: the pair judge reads its base model in float32, not {loaded.dtype}"
            )
        device = loaded.device
        shareable = loaded_tokenizer is not None and loaded_tokenizer.pad_token_id is not None
        tokenizer = loaded_tokenizer if shareable else load_tokenizer(lm_folder)
        base = sharing_weights(loaded)
    try:
        with warnings.catch_warnings():  # a deprecation inside peft's own call, not the user's
            warnings.simplefilter("ignore", FutureWarning)
            model = PeftModel.from_pretrained(base, folder / ADAPTER_DIR)
        tensors = load_file(str(folder / HEAD_FILE))
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PairJudgeError(f"{folder}: the adapter or head cannot be read: {first}") from exc
    width = hidden_width(base)
    weight, bias = tensors.get("weight"), tensors.get("bias")
    if weight is None or bias is None or tuple(weight.shape) != (1, width):
        raise PairJudgeError(
            f"{folder / HEAD_FILE}: the head must hold 'weight' [1, {width}] and 'bias' [1] for "
            f"the base model in {lm_folder} (trained for another model?)"
        )
    if not bool(torch.isfinite(weight).all() and torch.isfinite(bias).all()):
        raise PairJudgeError(f"{folder / HEAD_FILE}: the head holds a non-finite number")
    head = torch.nn.Linear(width, 1).to(device)
    with torch.no_grad():
        head.weight.copy_(weight)
        head.bias.copy_(bias)
    judge = PairJudgeModel(model.eval(), head, tokenizer, int(meta["max_tokens"]))
    return PairJudge(judge, meta, folder)
