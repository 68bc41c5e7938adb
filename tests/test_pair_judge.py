"""The pair judge (transnli.generator.pair_judge): a LoRA adapter and a head fine-tuned on prompts
that show H and H' together, saved as a folder peft loads, scored deterministically."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("peft")
torch = pytest.importorskip("torch")

from tiny_lm import WORDS, build_tiny_causal_lm, write_pairs  # noqa: E402
from transnli.generator.pair_judge import (  # noqa: E402
    HEAD_FILE,
    META_FILE,
    NO_SENSE,
    ROUND_DIGITS,
    TEMPLATE,
    TEMPLATES,
    PairJudgeError,
    PairJudgeTraining,
    load_pair_judge,
    new_pair_judge,
    pair_prompt,
    save_pair_judge,
    swapped_spans,
    train_pair_judge,
)
from transnli.generator.wordnet import antonym_senses  # noqa: E402

pytestmark = pytest.mark.slow

#: the stacked folder the project measured beside the shipped lone judge (docs/quality-model.md)
MEASURED_STACK = (
    Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "pair_judge_stack_gemma3_270m"
)

TRAINING = PairJudgeTraining(epochs=6, batch_size=4, head_learning_rate=2e-2, max_tokens=48)
# good when the soup became cold, bad when it became warm: learnable from the changed word alone
PAIRS = [
    (f"{a} soup is hot .", f"{a} soup is {b} .")
    for a in ("the", "a", "his", "big", "small", "the big")
    for b in ("cold", "warm")
]
LABELS = [int(m.endswith("cold .")) for _, m in PAIRS]
STACK = {"linear_judge": "judge.json", "combine": "mean"}


def meta(**changes):
    doc = {
        "template": TEMPLATE,
        "max_tokens": TRAINING.max_tokens,
        "calibration": {"a": 1.0, "b": 0.0},
        "threshold": 0.5,
        "language_model": "tiny",
    }
    doc.update(changes)
    return doc


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    words = [*WORDS, "original", ":", "[", "]", "word", "was", "replaced", "by"]
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"), max_positions=64, words=words)


@pytest.fixture(scope="module")
def trained(tiny_lm_dir, tmp_path_factory):
    judge = new_pair_judge(tiny_lm_dir, TRAINING)
    prompts = [pair_prompt(h, m) for h, m in PAIRS]
    losses = train_pair_judge(judge, prompts, LABELS, TRAINING)
    folder = save_pair_judge(tmp_path_factory.mktemp("judges") / "pair", judge, meta())
    return judge, losses, folder


@pytest.mark.parametrize(
    "original, changed, spans",
    [
        ("The soup is hot.", "The soup is cold.", (12, 15, 16)),
        ("He is happy today.", "He is unhappy today.", (6, 11, 13)),
        ("Buy cheap shoes here.", "Buy expensive shoes here.", (4, 9, 13)),
    ],
)
def test_the_swapped_span_is_the_whole_words_that_differ(original, changed, spans):
    assert swapped_spans(original, changed) == spans


def test_the_prompt_marks_the_swap_in_both_sentences():
    prompt = pair_prompt("He is happy today.", "He is unhappy today.")
    assert "Original: He is [happy] today." in prompt
    assert "Changed: He is [unhappy] today." in prompt
    assert "[happy] was replaced by [unhappy]" in prompt
    compact = pair_prompt("He is happy today.", "He is unhappy today.", TEMPLATES["compact"])
    assert compact == "He is [happy] today.\nHe is [unhappy] today.\nhappy -> unhappy"


def test_the_senses_template_shows_the_wordnet_senses_the_swap_stands_on():
    prompt = pair_prompt(
        "We ran extensive experiments.", "We ran intensive experiments.", TEMPLATES["senses"]
    )
    original, changed, old, new = prompt.split("\n")
    assert (original, changed) == (
        "We ran [extensive] experiments.",
        "We ran [intensive] experiments.",
    )
    # the only sense in which these two are antonyms is farming's: a wrong-sense swap here
    assert old.startswith("extensive: of agriculture;")
    assert new.startswith("intensive: of agriculture;")


@pytest.mark.parametrize(
    "old, new, first_words",
    [
        ("larger", "smaller", "above average in size"),  # inflected: large / small
        ("a new", "an old", "not of long duration"),  # the article that agrees is not the word
        ("got", "took away", "go or come after"),  # a phrasal antonym: take_away
        ("men", "women", "an adult person who is male"),  # a plural noun
        ("huge", "small", "unusually great in size"),  # a satellite: through its head, large
    ],
)
def test_a_swap_is_found_in_wordnet_by_its_surface_forms(old, new, first_words):
    assert antonym_senses(old, new)[0].startswith(first_words)


def test_a_swap_wordnet_does_not_hold_says_so_in_the_prompt():
    assert antonym_senses("cannot", "hirenot") is None
    prompt = pair_prompt("I cannot go.", "I hirenot go.", TEMPLATES["senses"])
    assert prompt.endswith(f"cannot: {NO_SENSE}\nhirenot: {NO_SENSE}")


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_named_template_is_one_a_judge_can_be_trained_with(name):
    PairJudgeTraining(template=TEMPLATES[name]).validate()


def test_training_learns_the_decision(trained):
    judge, losses, _ = trained
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0]
    raw = judge.raw_scores([pair_prompt(h, m) for h, m in PAIRS])
    good = [r for r, y in zip(raw, LABELS, strict=True) if y]
    bad = [r for r, y in zip(raw, LABELS, strict=True) if not y]
    assert min(good) > max(bad)


def test_training_under_bfloat16_autocast_learns_it_too_and_reads_in_float32(tiny_lm_dir):
    """Autocast speeds the training only: the weights stay float32, and the judge is read in
    float32 (under bfloat16 a real model's score moves with what else is in its batch)."""
    training = replace(TRAINING, autocast="bfloat16")
    judge = new_pair_judge(tiny_lm_dir, training)
    prompts = [pair_prompt(h, m) for h, m in PAIRS]
    losses = train_pair_judge(judge, prompts, LABELS, training)
    assert losses[-1] < losses[0]
    raw = judge.raw_scores(prompts)
    good = [r for r, y in zip(raw, LABELS, strict=True) if y]
    bad = [r for r, y in zip(raw, LABELS, strict=True) if not y]
    assert min(good) > max(bad)
    assert {p.dtype for p in judge.model.parameters()} == {torch.float32}
    with torch.inference_mode():
        in_float32 = judge.logits(prompts).tolist()
        in_bfloat16 = judge.logits(prompts, "bfloat16")
    assert in_bfloat16.dtype == torch.float32  # the head reads outside the autocast
    assert in_bfloat16.tolist() != in_float32  # the autocast does change the forward
    assert raw == [round(x, ROUND_DIGITS) for x in in_float32]


def test_an_unknown_autocast_is_refused_naming_the_choices():
    with pytest.raises(PairJudgeError, match="autocast must be one of"):
        PairJudgeTraining(autocast="float16").validate()


class Interrupted(Exception):
    pass


def test_an_interrupted_training_resumes_from_its_checkpoint_to_the_same_weights(
    trained, tiny_lm_dir, tmp_path
):
    """A long fine-tuning killed mid-run (a session's end, a crash) goes on from its checkpoint
    and gives exactly the judge an uninterrupted run gives: same scores, same epoch losses."""
    judge, losses, _ = trained
    prompts = [pair_prompt(h, m) for h, m in PAIRS]
    checkpoint = tmp_path / "run.checkpoint"

    def stop_at_step_7(step, _loss):
        if step == 7:
            raise Interrupted

    first = new_pair_judge(tiny_lm_dir, TRAINING)
    with pytest.raises(Interrupted):
        train_pair_judge(
            first, prompts, LABELS, TRAINING, stop_at_step_7, checkpoint, checkpoint_every=2
        )
    steps = []
    resumed = new_pair_judge(tiny_lm_dir, TRAINING)
    again = train_pair_judge(
        resumed,
        prompts,
        LABELS,
        TRAINING,
        lambda step, _loss: steps.append(step),
        checkpoint,
        checkpoint_every=2,
    )
    assert steps[0] == 7  # steps 1-6 came from the checkpoint
    assert again == losses
    assert resumed.raw_scores(prompts) == judge.raw_scores(prompts)
    # a checkpoint of other rows is refused rather than mixed in
    with pytest.raises(PairJudgeError, match="another training run"):
        train_pair_judge(
            new_pair_judge(tiny_lm_dir, TRAINING), prompts, LABELS[::-1], TRAINING, None, checkpoint
        )


def test_the_folder_is_a_peft_adapter_and_loads_to_the_same_scores(trained, tiny_lm_dir):
    judge, _, folder = trained
    config = json.loads((folder / "adapter" / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA" and config["r"] == TRAINING.lora_rank
    # the same bytes whatever the process's hash seed, and no card template naming local paths
    assert config["target_modules"] == sorted(TRAINING.target_modules)
    assert config["base_model_name_or_path"] == Path(tiny_lm_dir).name
    assert sorted(p.name for p in (folder / "adapter").iterdir()) == [
        "adapter_config.json",
        "adapter_model.safetensors",
    ]
    loaded = load_pair_judge(folder, tiny_lm_dir)
    prompts = [pair_prompt(h, m) for h, m in PAIRS]
    assert loaded.model.raw_scores(prompts) == judge.raw_scores(prompts)
    assert loaded.threshold == 0.5


def test_a_judge_on_a_model_already_loaded_shares_its_weights_and_leaves_it_alone(
    trained, tiny_lm_dir
):
    """A stack's pair judge reads the linear judge's language model: the same scores as on a
    model of its own, no second copy of any weight, and the model it was given still computes
    what it did (the adapter wraps the judge's layers, not the model's)."""
    from transformers import AutoTokenizer
    from transnli.generator.pair_judge import load_base

    folder = trained[2]
    _, model = load_base(tiny_lm_dir)
    # the scorer's tokenizer as it loads it: padding on the left, which the judge must not use
    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir, padding_side="left")
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.inference_mode():
        before = model(input_ids=ids).logits
    shared = load_pair_judge(folder, tiny_lm_dir, loaded=model, loaded_tokenizer=tokenizer)
    assert shared.model.tokenizer is tokenizer and tokenizer.padding_side == "left"
    prompts = [pair_prompt(h, m) for h, m in PAIRS]
    assert shared.model.raw_scores(prompts) == load_pair_judge(
        folder, tiny_lm_dir
    ).model.raw_scores(prompts)
    judge_tensors = {p.data_ptr() for p in shared.model.model.parameters()}
    assert all(p.data_ptr() in judge_tensors for p in model.parameters())
    assert not any("lora" in name for name, _ in model.named_modules())
    with torch.inference_mode():
        assert torch.equal(model(input_ids=ids).logits, before)
    with pytest.raises(PairJudgeError, match="float32"):
        load_pair_judge(folder, tiny_lm_dir, loaded=model.to(torch.bfloat16))


def test_the_base_attends_with_sdpa_on_the_cpu_and_eagerly_elsewhere(tiny_lm_dir):
    """SDPA's memory-efficient CUDA kernel misreads padded batches of some lengths
    (common.devices.attention_implementation); off the CPU the judge's base attends eagerly, on
    it as transformers chooses (SDPA for this model). The meta device stands in for a GPU: the
    choice is made before the weights move."""
    from transnli.generator.pair_judge import load_base

    assert load_base(tiny_lm_dir, "cpu")[1].config._attn_implementation == "sdpa"
    on_meta = load_base(tiny_lm_dir, "meta")[1]
    assert on_meta.config._attn_implementation == "eager"
    assert next(on_meta.parameters()).device.type == "meta"


def test_a_pair_read_before_is_not_read_again_and_gets_the_same_probability(trained, tiny_lm_dir):
    """--lm-antonyms ranks a word's candidates with the check, which then reads the chosen one:
    the model reads each prompt once, within the judge's memory, and the numbers are the same."""
    judge = load_pair_judge(trained[2], tiny_lm_dir)
    judge.remembered = 4
    read: list[str] = []
    raw_scores = judge.model.raw_scores

    def counting(prompts, batch_size=16):
        read.extend(prompts)
        return raw_scores(prompts, batch_size)

    judge.model.raw_scores = counting
    first = judge.probabilities(PAIRS[:3])
    assert judge.probabilities([PAIRS[2], PAIRS[0], PAIRS[3]]) == [first[2], first[0]] + [
        load_pair_judge(trained[2], tiny_lm_dir).probabilities([PAIRS[3]])[0]
    ]
    assert len(read) == 4 and len(set(read)) == 4
    judge.probabilities(PAIRS[4:6])  # six prompts seen, four remembered: the two oldest go
    judge.probabilities([PAIRS[1]])
    assert len(read) == 7 and read[-1] == read[1]


def test_probabilities_do_not_depend_on_batch_size_or_order(trained, tiny_lm_dir):
    loaded = load_pair_judge(trained[2], tiny_lm_dir)
    expected = loaded.probabilities(PAIRS)
    for size in (1, 3, 16):
        loaded.batch_size = size
        assert loaded.probabilities(PAIRS) == expected
        assert loaded.probabilities(PAIRS[::-1]) == expected[::-1]
        assert loaded.probabilities(PAIRS[:2]) == expected[:2]
    assert all(0.0 <= p <= 1.0 for p in expected)


@pytest.mark.parametrize(
    "change, field",
    [
        ({"calibration": {"a": float("nan"), "b": 0.0}}, "calibration"),
        ({"calibration": {"a": "1", "b": 0.0}}, "calibration"),
        ({"threshold": 2.0}, "threshold"),
        ({"template": "H: {original}"}, "template"),
        ({"max_tokens": "many"}, "max_tokens"),
        ({"format": "other"}, "format"),
        ({"stack": {"linear_judge": "../judge.json", "combine": "mean"}}, "stack.linear_judge"),
        ({"stack": {"linear_judge": "", "combine": "mean"}}, "stack.linear_judge"),
        ({"stack": {"linear_judge": "judge.json", "combine": "max"}}, "stack.combine"),
        ({"stack": "judge.json"}, "stack.linear_judge"),
        ({"stack": {**STACK, "calibration": {"a": 0.0, "b": 0.1}}}, "stack.calibration"),
        ({"stack": {**STACK, "calibration": {"a": 1.0}}}, "stack.calibration"),
        ({"stack": {**STACK, "precision_estimate": {"method": "em"}}}, "stack.precision_estimate"),
        (
            {"stack": {**STACK, "precision_estimate": {"method": "mean", "max_abs_error": 1.5}}},
            "stack.precision_estimate",
        ),
        ({"release": ["threshold"]}, "release"),
        ({"release": {"precision_estimate": {"method": "em"}}}, "release.precision_estimate"),
    ],
)
def test_a_damaged_judge_file_is_refused_naming_the_field(
    trained, tiny_lm_dir, tmp_path, change, field
):
    import shutil

    folder = tmp_path / "pair"
    shutil.copytree(trained[2], folder)
    doc = json.loads((folder / META_FILE).read_text())
    doc.update(change)
    (folder / META_FILE).write_text(json.dumps(doc))
    with pytest.raises(PairJudgeError, match=f"field '{field}'"):
        load_pair_judge(folder, tiny_lm_dir)


def test_a_head_for_another_model_or_a_missing_adapter_is_refused(trained, tiny_lm_dir, tmp_path):
    import shutil

    from safetensors.torch import save_file

    folder = tmp_path / "pair"
    shutil.copytree(trained[2], folder)
    save_file({"weight": torch.zeros(1, 24), "bias": torch.zeros(1)}, str(folder / HEAD_FILE))
    with pytest.raises(PairJudgeError, match=r"weight' \[1, 16\]"):
        load_pair_judge(folder, tiny_lm_dir)
    shutil.rmtree(folder / "adapter")
    with pytest.raises(PairJudgeError, match="no adapter_config.json"):
        load_pair_judge(folder, tiny_lm_dir)


def test_a_trained_judge_is_never_overwritten(trained):
    judge, _, folder = trained
    before = (folder / HEAD_FILE).read_bytes()
    with pytest.raises(PairJudgeError, match="already exists"):
        save_pair_judge(folder, judge, meta())
    assert (folder / HEAD_FILE).read_bytes() == before


def test_a_generation_with_the_pair_judge_records_its_probability(
    trained, tiny_lm_dir, tmp_path, monkeypatch
):
    from click.testing import CliRunner

    from transnli.cli import main

    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "cache"))
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    out = tmp_path / "run"
    args = [
        "generate", str(pairs), "--out", str(out), "--preset", "default", "--grammar", "none",
        "--filters", "none", "--acceptability", "pair-judge", "--lm", str(tiny_lm_dir),
        "--judge-model", str(trained[2]), "--judge-threshold", "0.0", "--device", "cpu", "--quiet",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    triples = [json.loads(x) for x in (out / "triples.jsonl").read_text().splitlines()]
    assert triples
    loaded = load_pair_judge(trained[2], tiny_lm_dir)
    for t in triples:
        check = t["checks"]["acceptability"]
        assert check["backend"] == "pair-judge" and check["passed"]
        assert (
            check["p_good"]
            == loaded.probabilities([(t["hypothesis"], t["modified_hypothesis"])])[0]
        )
    config = json.loads((out / "config.json").read_text())
    assert "pair-judge" in json.dumps(config["resources"]["checks"]["acceptability"])
    mean = sum(t["checks"]["acceptability"]["p_good"] for t in triples) / len(triples)
    # the card states the judge's probabilities, and claims no precision it has not validated
    exported = CliRunner().invoke(main, ["export", str(out), "--to", "card"])
    assert exported.exit_code == 0, exported.output
    card = (out / "hub" / "README.md").read_text()
    assert f"pair judge (`{trained[2].name}`)" in card
    assert "no precision is estimated for this run" in card
    assert f"is good is {mean:.3f} over {len(triples)} triples" in card  # the pair judge's own
    assert "Estimated precision" not in card
    # without a folder the shipped one is used: trained for Gemma, so with this model it is
    # refused in one line that says what to name, before any run folder is written
    bare = [a for a in args if a not in ("--judge-model", str(trained[2]))]
    refused = CliRunner().invoke(main, [*bare[:3], str(tmp_path / "other"), *bare[4:]])
    assert refused.exit_code != 0 and "--judge-model" in refused.output
    assert "pair_judge_gemma3_270m" in refused.output and "Traceback" not in refused.output
    assert not (tmp_path / "other").exists()


def stacked_folder(trained, where, calibration=None):
    """The trained pair judge with a tiny linear judge file beside it, stacked (and the mean
    mapped by `calibration`, when given)."""
    import shutil

    from tiny_lm import tiny_judge

    folder = where / "stacked"
    shutil.copytree(trained[2], folder)
    (folder / "linear.json").write_text(json.dumps(tiny_judge(seed=3)))
    doc = json.loads((folder / META_FILE).read_text())
    doc["stack"] = {"linear_judge": "linear.json", "combine": "mean"}
    if calibration is not None:
        doc["stack"]["calibration"] = calibration
    (folder / META_FILE).write_text(json.dumps(doc))
    return folder


def mapped_mean(p_pair: float, p_linear: float, calibration: dict | None) -> float:
    mean = (p_pair + p_linear) / 2
    if calibration is None:
        return round(mean, 4)
    z = calibration["a"] * math.log(mean / (1 - mean)) + calibration["b"]
    return round(1 / (1 + math.exp(-z)), 4)


@pytest.mark.parametrize("calibration", [None, {"a": 1.5, "b": 0.4}])
def test_a_stacked_folder_averages_the_pair_and_the_linear_judge(
    trained, tiny_lm_dir, tmp_path, monkeypatch, calibration
):
    """A folder whose 'stack' names a linear judge file: each candidate's p_good is the mean of
    the pair judge's and the linear judge's probabilities (mapped by the stack's calibration when
    the folder has one), each of which is on the record and equals what that judge gives alone;
    the language model's scores are kept too."""
    from click.testing import CliRunner
    from transnli.generator.checks.judge_acceptability import JudgeAcceptability

    from transnli.cli import main

    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "cache"))
    folder = stacked_folder(trained, tmp_path, calibration)
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    out = tmp_path / "run"
    args = [
        "generate", str(pairs), "--out", str(out), "--preset", "default", "--grammar", "none",
        "--filters", "none", "--acceptability", "pair-judge", "--lm", str(tiny_lm_dir),
        "--judge-model", str(folder), "--judge-threshold", "0.0", "--device", "cpu", "--quiet",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    triples = [json.loads(x) for x in (out / "triples.jsonl").read_text().splitlines()]
    assert triples
    pairs_seen = [(t["hypothesis"], t["modified_hypothesis"]) for t in triples]
    alone = load_pair_judge(trained[2], tiny_lm_dir).probabilities(pairs_seen)
    linear = JudgeAcceptability.from_options(
        lm=str(tiny_lm_dir), judge_model=str(folder / "linear.json"), device="cpu"
    )
    _, linear_p = linear.probabilities(pairs_seen)
    linear.close()
    for t, p_pair, p_linear in zip(triples, alone, linear_p, strict=True):
        check = t["checks"]["acceptability"]
        assert (check["p_pair"], check["p_linear"]) == (p_pair, p_linear)
        assert check["p_good"] == mapped_mean(p_pair, p_linear, calibration)
        assert math.isfinite(check["d"])
    config = json.loads((out / "config.json").read_text())
    assert "stacked with judge" in json.dumps(config["resources"]["checks"]["acceptability"])
    (folder / "linear.json").unlink()
    refused = CliRunner().invoke(main, [*args[:3], str(tmp_path / "again"), *args[4:]])
    assert refused.exit_code != 0 and "linear.json" in refused.output
    assert "Traceback" not in refused.output


def test_the_shipped_pair_judge_ships_alone_with_its_threshold_rule_and_figures():
    """The folder that ships (the default preset's judge) reads without loading weights, stacks
    no linear judge, and carries its threshold rule, its figures on genres it was never trained
    on and the card's validated estimate."""
    from transnli.generator.pair_judge import (
        default_pair_judge_path,
        read_pair_judge_meta,
        stacked_judge_file,
    )

    folder = default_pair_judge_path()
    meta = read_pair_judge_meta(folder)
    assert stacked_judge_file(folder, meta) is None and "stack" not in meta
    assert meta["language_model"] == "gemma3-270m" and 0.3 <= meta["threshold"] < 0.7
    release = meta["release"]
    assert "80%" in release["threshold_rule"] and release["threshold_rows"]["kept"] > 0
    genres = release["validation"]["genres"]
    assert "test" in genres and not set(genres) & {"wordnet", "news", "recipes"}
    assert all(g["at_threshold"]["threshold"] == meta["threshold"] for g in genres.values())
    assert release["validation"]["pooled_at_threshold"]["kept"] > 0
    assert 0 < release["precision_estimate"]["max_abs_error"] < 0.5


def test_the_measured_stack_is_a_folder_whose_files_are_the_ones_it_names():
    """The stacked folder kept beside it names its linear judge by digest and carries its
    threshold rule and its figures on genres it was never trained on."""
    from transnli.common.digest import sha256_file
    from transnli.generator.pair_judge import read_pair_judge_meta, stacked_judge_file

    meta = read_pair_judge_meta(MEASURED_STACK)
    linear = stacked_judge_file(MEASURED_STACK, meta)
    assert sha256_file(linear) == meta["stack"]["linear_judge_sha256"]
    assert meta["language_model"] == "gemma3-270m" and 0.5 <= meta["threshold"] < 0.7
    validation = meta["stack"]["validation"]
    assert "test" in validation["genres"] and not set(validation["genres"]) & {"wordnet", "news"}
    assert validation["pooled_at_threshold"]["kept"] > 0


def test_a_folder_may_not_record_both_a_stack_and_a_release(tmp_path):
    import shutil

    from transnli.generator.pair_judge import read_pair_judge_meta

    folder = tmp_path / "both"
    shutil.copytree(MEASURED_STACK, folder)
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    meta["release"] = {}
    (folder / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(PairJudgeError, match="'stack' and 'release' exclude each other"):
        read_pair_judge_meta(folder)


def test_doctor_checks_a_named_pair_judge_without_loading_it(
    trained, tiny_lm_dir, tmp_path, monkeypatch
):
    """`doctor --judge-model FOLDER`: a trained folder that fits the installed LM is usable; one
    whose head was trained for another width, or whose file is damaged, makes doctor exit 1 with
    the reason; a linear judge file is checked the same way."""
    import shutil

    from click.testing import CliRunner
    from safetensors.torch import save_file
    from transnli.common.lm import conversion

    from transnli.cli import main

    monkeypatch.setattr(conversion, "default_model_folder", lambda cache=None: tiny_lm_dir)
    good = CliRunner().invoke(main, ["doctor", "--json", "--judge-model", str(trained[2])])
    row = {r["name"]: r for r in json.loads(good.stdout)}[f"judge: {trained[2]}"]
    assert row["usable"] and "fits" in row["detail"], row
    wide = tmp_path / "wide"
    shutil.copytree(trained[2], wide)
    save_file({"weight": torch.zeros(1, 24), "bias": torch.zeros(1)}, str(wide / HEAD_FILE))
    damaged = tmp_path / "damaged"
    shutil.copytree(trained[2], damaged)
    (damaged / META_FILE).write_text(json.dumps({**meta(threshold=2.0), "format": "x"}))
    not_json = tmp_path / "judge.json"
    not_json.write_text("{")
    for path, why in (
        (wide, "trained for hidden states of width 24"),
        (damaged, "field 'format'"),
        (not_json, "line 1: not valid JSON"),
    ):
        result = CliRunner().invoke(main, ["doctor", "--judge-model", str(path)])
        assert result.exit_code == 1 and why in result.output, (path, result.output)


def test_a_pair_judge_that_gives_no_number_is_an_error_not_a_rejection(trained, tiny_lm_dir):
    """Non-finite outputs (damaged weights) would reject every candidate as p(good) = nan and end
    as "0 triples": the check stops with one line instead."""
    from transnli.generator.checks.pair_judge_acceptability import PairJudgeAcceptability
    from transnli.generator.errors import ResourceError

    judge = load_pair_judge(trained[2], tiny_lm_dir)
    judge.model.raw_scores = lambda prompts, batch_size=16: [float("nan")] * len(prompts)
    check = PairJudgeAcceptability(judge)
    with pytest.raises(ResourceError, match="not a number for 2 of 2 candidates"):
        check.check_many([h for h, _ in PAIRS[:2]], [m for _, m in PAIRS[:2]])


def pair_judged(*p_good: float) -> list[dict]:
    """Accepted records as a pair-judge run writes them (only what the card reads)."""
    return [{"checks": {"acceptability": {"backend": "pair-judge", "p_good": p}}} for p in p_good]


@pytest.mark.parametrize("which", ["shipped", "stack"])
def test_a_card_estimates_its_precision_and_says_what_was_measured(which):
    """The card of a run with the shipped folder (lone) or the measured stack states the estimate
    the folder validated (the mean p_good, its interval widened by the recorded largest error on
    genres never seen) and, at the folder's own threshold, the precision people measured for it
    on such genres; at another threshold only the estimate."""
    from transnli.generator.card_quality import card_quality, quality_text
    from transnli.generator.pair_judge import (
        default_pair_judge_path,
        measured_record,
        read_pair_judge_meta,
    )

    folder = default_pair_judge_path() if which == "shipped" else MEASURED_STACK
    record = measured_record(read_pair_judge_meta(folder))
    pooled = record["validation"]["pooled_at_threshold"]
    error = record["precision_estimate"]["max_abs_error"]
    named = None if which == "shipped" else str(MEASURED_STACK)
    cfg = {"acceptability": "pair-judge", "judge_model": named, "judge_threshold": None}
    records = {"test": pair_judged(0.9, 0.8, 0.7), "rejected": pair_judged(0.2)}
    text = "".join(quality_text(card_quality(records, cfg)))
    assert "**Estimated precision: 0.800**" in text
    low = 0.8 - 1.96 * math.sqrt(0.09 + 0.16 + 0.21) / 3 - error
    assert f"(95% interval {low:.3f}-" in text, text
    assert f"Judge folder: `{folder.name}`" in text
    judge = "the stacked pair judge" if which == "stack" else "the pair judge"
    assert f"The probability is {judge}'s that H' is good" in text
    assert f"{pooled['good']} of the {pooled['kept']} triples it kept were good" in text
    assert "no precision is estimated" not in text
    other = "".join(quality_text(card_quality(records, {**cfg, "judge_threshold": 0.99})))
    assert "triples it kept were good" not in other and "Estimated precision" in other


def test_a_card_of_a_pair_judge_without_a_validated_estimate_claims_none(tmp_path):
    """A folder that records no validated estimate: its probabilities are given, no precision
    is estimated from them, and what people measured for it is still stated."""
    import shutil

    from transnli.generator.card_quality import card_quality, quality_text
    from transnli.generator.pair_judge import META_FILE

    folder = tmp_path / "stack"
    shutil.copytree(MEASURED_STACK, folder)
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    del meta["stack"]["precision_estimate"]
    (folder / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    cfg = {"acceptability": "pair-judge", "judge_model": str(folder), "judge_threshold": None}
    text = "".join(quality_text(card_quality({"test": pair_judged(0.9, 0.8)}, cfg)))
    assert "mean of its probabilities that H' is good is 0.850 over 2 triples" in text
    assert "**no precision is estimated for this run**" in text
    assert "triples it kept were good" in text and "Estimated precision" not in text


def test_a_card_names_the_one_genre_a_stack_was_measured_on(tmp_path):
    """A folder measured on one left-out genre: the card names that genre and gives no range by
    genre; measured on several, it gives their count and the range."""
    import shutil

    from transnli.generator.card_quality import card_quality, quality_text
    from transnli.generator.pair_judge import META_FILE

    folder = tmp_path / "stack"
    shutil.copytree(MEASURED_STACK, folder)
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    at = {"threshold": meta["threshold"], "kept": 10, "good": 8, "precision": 0.8}
    meta["stack"]["validation"]["pooled_at_threshold"] = at
    cfg = {"acceptability": "pair-judge", "judge_model": str(folder), "judge_threshold": None}

    def card_with(genres: dict) -> str:
        meta["stack"]["validation"]["genres"] = genres
        (folder / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
        return "".join(quality_text(card_quality({"test": pair_judged(0.7)}, cfg)))

    one = card_with({"test": {"at_threshold": at}})
    assert "on a genre it was never trained on (test): 8 of the 10 triples" in one
    assert "by genre" not in one
    two = {"test": {"at_threshold": at}, "legal": {"at_threshold": {**at, "precision": 0.7}}}
    assert "on 2 genres it was never trained on" in card_with(two)
    assert "(0.800; 0.700-0.800 by genre;" in card_with(two)


def test_a_linear_judge_file_named_as_a_pair_judge_is_refused_with_the_option_it_needs(tmp_path):
    """The default preset's check is the pair judge: a judge file named with --judge-model is
    refused in one line that says which acceptability backend runs it."""
    from transnli.generator.pair_judge import read_pair_judge_meta

    path = tmp_path / "judge.json"
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(PairJudgeError, match="runs with --acceptability judge"):
        read_pair_judge_meta(path)
