"""`transnli publish EVAL`: an evaluation folder uploaded to a local server that speaks the
Hub's API (tests/fake_hub.py) with the real huggingface_hub client: exactly the expected files,
an evaluation card that lists the models, describes the rules and links the triples, and a
second publish that changes nothing. Also: `publish` tells a generation run from an evaluation
folder, and says so when a folder is neither."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from click.testing import CliRunner
from fake_hub import FakeHub
from transnli.evaluator.eval_card import model_source
from transnli.evaluator.model_checks import model_warnings
from transnli.evaluator.publish_eval import open_evaluation, stage
from transnli.evaluator.schedule import KIND_TITLES

from transnli.cli import main

# Two sentences families with the labels each model gives (E, N, C for entailment, neutral,
# contradiction) to (P,H), (H,H'), (H',H) and (P,H').
TRIPLES = [
    ("t1", "A man sleeps.", "A man rests.", "A woman rests.", "E", "C", "C", "C"),  # rule2 ok
    ("t2", "A man sleeps.", "The man is asleep.", "The man is awake.", "E", "C", "C", "N"),  # r2 x
    ("t3", "Kids play.", "Kids are happy.", "Kids are sad.", "N", "C", "C", "E"),  # rule4 violated
    ("t4", "Kids play.", "Kids run.", "Kids walk.", "N", "E", "E", "N"),  # rule3 ok
]
FULL = {"E": "entailment", "N": "neutral", "C": "contradiction"}
EXPECTED_FILES = {
    ".gitattributes",  # the Hub's own, kept
    "README.md",
    "summary.json",
    "report.md",
    "run_info.json",
    "samples.jsonl",
    "comparison.json",  # two models: the paired comparison
}


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    """A real `transnli evaluate` folder: two models (precomputed labels) on four triples."""
    root = tmp_path_factory.mktemp("eval")
    triples, labels = [], {}
    for tid, p, h, h2, *labs in TRIPLES:
        triples.append(
            {"id": tid, "premise": p, "hypothesis": h, "modified_hypothesis": h2, "dataset": "snli"}
        )
        for pair, lab in zip(((p, h), (h, h2), (h2, h), (p, h2)), labs, strict=True):
            labels[pair] = FULL[lab]
    (root / "triples.jsonl").write_text("".join(json.dumps(t) + "\n" for t in triples))
    (root / "labels.jsonl").write_text(
        "".join(
            json.dumps({"premise": a, "hypothesis": b, "label": lab}) + "\n"
            for (a, b), lab in labels.items()
        )
    )
    out = root / "ev"
    res = cli(
        "evaluate",
        root / "triples.jsonl",
        "-m",
        f"alpha=precomputed:{root / 'labels.jsonl'}",
        "-m",
        f"beta=precomputed:{root / 'labels.jsonl'}",
        "--out",
        out,
        "--cache-dir",
        root / "cache",
        "--no-progress",
    )
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def hub(monkeypatch):
    """The fake Hub, as the endpoint every HfApi() talks to, and a token in a named variable."""
    import huggingface_hub.constants

    server = FakeHub()
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", server.url)
    monkeypatch.setenv("TRANSNLI_TEST_TOKEN", "hf_write_token")
    yield server
    server.close()


def publish(folder, *extra):
    token = ("--token-env", "TRANSNLI_TEST_TOKEN")
    return cli("publish", folder, "--repo-id", "someone/results", *token, *extra)


def expected_files(folder):
    plots = {f"plots/{p.name}" for p in (folder / "plots").iterdir()}
    assert {p.rsplit(".", 1)[-1] for p in plots} == {"png", "svg", "pdf"}
    return EXPECTED_FILES | plots


def split_card(text):
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def test_an_evaluation_publishes_exactly_its_files_with_a_card(evaluation, hub):
    res = publish(evaluation, "--triples-repo-id", "someone/triples")
    assert res.exit_code == 0, res.output
    assert f"published {evaluation} to {hub.url}/datasets/someone/results" in res.output
    files = hub.files("someone/results")
    assert set(files) == expected_files(evaluation)
    for name in set(files) - {".gitattributes", "README.md"}:
        assert files[name] == (evaluation / name).read_bytes(), name  # sent unchanged
    assert set(hub.tokens) == {"hf_write_token"}
    meta, body = split_card(files["README.md"].decode())
    assert hub.cards[-1] == meta  # the Hub validated this front matter
    assert meta["configs"] == [
        {
            "config_name": "samples",
            "data_files": [{"split": "test", "path": "samples.jsonl"}],
            "default": True,
        }
    ]
    assert "transnli" in meta["tags"] and "license" not in meta
    # the models
    assert "## Models" in body
    for name in ("alpha", "beta"):
        assert f"| {name} | `precomputed:" in body
    # the triples, linked
    assert "[someone/triples](https://huggingface.co/datasets/someone/triples)" in body
    summary = json.loads((evaluation / "summary.json").read_text())
    assert f"`{summary['provenance']['triples_files'][0]['sha256']}`" in body
    # the rules, with the numbers of summary.json
    for key, rule in summary["rules"].items():
        assert f"- **{key}** `{rule['name']}`: {rule['definition']}" in body
    overall = summary["models"][0]["overall"]
    assert overall["rules"]["rule2"]["violations"] == 1 and overall["rules"]["rule2"]["cases"] == 2
    assert "| alpha | – (0/0) | 50.0% [9.5, 90.5] (1/2) | 0.0% [0.0, 79.3] (0/1) | " in body
    assert "| alpha | snli | 25.0% (1/4) | 75.0% (3/4) | – |" in body  # mutual E, mutual C
    assert 'datasets.load_dataset("someone/results", "samples", split="test")' in body
    assert "![violation heatmap](plots/violation_heatmap.png)" in body
    assert "@inproceedings{wu-last-2025-transitive" in body


def test_a_second_publish_is_idempotent_and_drops_only_its_own_stale_files(
    evaluation, hub, tmp_path
):
    folder = tmp_path / "ev"
    shutil.copytree(evaluation, folder)
    assert publish(folder).exit_code == 0
    repo = hub.repos["someone/results"]
    first = (list(repo.commits), dict(repo.files))
    res = publish(folder)
    assert res.exit_code == 0, res.output
    assert (repo.commits, repo.files) == first  # no commit, nothing changed
    # a file someone added on the Hub stays; a figure this evaluation no longer has goes
    repo.files["notes.md"] = b"my notes\n"
    (folder / "plots" / "mutual_rates.svg").unlink()
    assert publish(folder).exit_code == 0
    assert set(repo.files) == (expected_files(folder) | {"notes.md"})
    assert "plots/mutual_rates.svg" not in repo.files and len(repo.commits) == 3


def test_staging_is_deterministic_and_writes_nothing_into_the_evaluation(evaluation, tmp_path):
    before = sorted(p.relative_to(evaluation) for p in evaluation.rglob("*"))
    ev = open_evaluation(evaluation)
    one = stage(ev, tmp_path / "one", repo_id="a/b", triples_repo_id=None)
    two = stage(ev, tmp_path / "two", repo_id="a/b", triples_repo_id=None)
    assert one == two and "README.md" in one
    for name in one:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert sorted(p.relative_to(evaluation) for p in evaluation.rglob("*")) == before
    card = (tmp_path / "one" / "README.md").read_text()
    assert "not linked to a dataset on the Hub" in card and "--triples-repo-id" in card


def test_model_sources_link_hub_models_at_their_commit():
    commit = "0123456789abcdef0123456789abcdef01234567"
    hub_model = {"backend": "hf", "identity": f"hf|org/nli-model@{commit}|labels=c,n,e|dtype=x"}
    assert model_source(hub_model) == (
        "[org/nli-model](https://huggingface.co/org/nli-model) at commit `0123456789ab`"
    )
    local = {"backend": "hf", "identity": "hf|sha256:" + "ab" * 32 + "|labels=c,n,e"}
    assert model_source(local) == "local model folder (sha256 `abababababab…`)"


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ({}, "is neither a generation run"),
        ({"notes.txt": "x"}, "is neither a generation run"),
        ({"generate/x": "", "evaluate/y": ""}, "looks like the --out of `transnli run`"),
        ({"predictions.jsonl": ""}, "summary.json is missing: the evaluation in"),
        ({"summary.json": "[1]", "report.md": ""}, "summary.json is not a JSON object"),
        ({"summary.json": '{"models": []}', "report.md": ""}, "field provenance is missing"),
        ({"triples.jsonl": "", "summary.json": "{}"}, "holds both a generation run"),
        ({"triples.jsonl": "", "config.json": "{}"}, "not a finished transnli run"),
    ],
)
def test_publish_says_what_a_folder_is_not(tmp_path, hub, layout, message):
    folder = tmp_path / "folder"
    folder.mkdir()
    for name, text in layout.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    res = publish(folder)
    assert res.exit_code == 1 and message in res.output, res.output
    assert "Traceback" not in res.output and hub.repos == {}


def test_publish_options_that_do_not_fit(tmp_path, evaluation, hub):
    res = publish(tmp_path / "missing")
    assert res.exit_code == 1 and "is not a folder" in res.output
    res = publish(evaluation, "--triples-repo-id", "no-slash")
    assert res.exit_code == 1 and "--triples-repo-id 'no-slash' is not of the form USER/NAME" in (
        res.output
    )
    run = tmp_path / "run"
    run.mkdir()
    (run / "finished.json").write_text("{}")
    res = publish(run, "--triples-repo-id", "someone/triples")
    assert res.exit_code == 2 and "applies to an evaluation folder" in res.output
    assert hub.repos == {}


def test_an_unreachable_hub_is_one_line_naming_the_folder_to_publish_again(evaluation, monkeypatch):
    import socket

    import huggingface_hub.constants

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("TRANSNLI_TEST_TOKEN", "hf_write_token")
    res = publish(evaluation)
    assert res.exit_code == 1 and "cannot reach the Hugging Face Hub" in res.output
    assert f"publish {evaluation} again later" in res.output and "Traceback" not in res.output


# --------------------------------------------------------------------------- a complete card
def test_the_card_carries_the_comparison_and_the_alarm_and_comparison_json_is_uploaded(
    evaluation, hub
):
    res = publish(evaluation)
    assert res.exit_code == 0, res.output
    files = hub.files("someone/results")
    assert files["comparison.json"] == (evaluation / "comparison.json").read_bytes()
    _, body = split_card(files["README.md"].decode())
    comparison = json.loads((evaluation / "comparison.json").read_text())
    (conclusion,) = comparison["conclusions"]
    assert "## Paired comparison of the models" in body
    assert f"**{conclusion}.**" in body and "not informative" in conclusion
    assert "| no (0 discordant) |" in body  # the two models agree everywhere: no row informs
    assert "- `comparison.json`: the paired comparison of the models" in body
    assert "## No-knowledge alarm" in body
    summary = json.loads((evaluation / "summary.json").read_text())
    for entry in summary["alarms"]["results"]:
        bound = entry["m2_pairs"]["theta_star"] if "m2_pairs" in entry else entry["theta_star"]
        verdict = (
            "nothing proven"
            if bound >= 1
            else f"some model is at most {100 * bound:.1f}% accurate on some label"
        )
        assert f"| {entry['dataset']} | {KIND_TITLES[entry['pairs']]} | {entry['items']} |" in body
        assert verdict in body


def test_the_card_carries_the_reports_warnings(evaluation, tmp_path):
    ev = open_evaluation(evaluation)
    card = tmp_path / "plain"
    stage(ev, card, repo_id="a/b")
    assert "## Warnings" not in (card / "README.md").read_text()
    # both models below chance on gold, and one whose tokenizer does not know the words
    summary = json.loads(json.dumps(ev.summary))
    for model in summary["models"]:
        model["overall"].update(accuracy=0.2, accuracy_pairs=40)
    summary["provenance"]["models"][1]["unknown_tokens"] = 0.55
    warned = tmp_path / "warned"
    stage(ev.__class__(ev.dir, summary, ev.run_info, ev.comparison), warned, repo_id="a/b")
    body = (warned / "README.md").read_text()
    assert "## Warnings" in body
    assert body.index("## Warnings") < body.index("## Models")  # read before the numbers
    for line in model_warnings(summary):
        assert f"- {line}" in body
    assert "alpha is right on 20.0% of 40 gold-labelled (P,H) pairs, below chance" in body
    assert "beta is right on 20.0%" in body
    assert "beta's tokenizer maps 55.0% of the tokens" in body


def test_the_card_states_the_reviewed_precision_of_the_evaluated_triples(tmp_path, hub):
    from test_export import make_run, record
    from transnli.review.index import LineIndex
    from transnli.review.log import LOG, JudgementLog, Verdict
    from transnli.review.session import ReviewSession, SessionSettings

    run = make_run(tmp_path / "run", [record(i) for i in range(30)], [])
    session = ReviewSession(
        LineIndex(run / "triples.jsonl"),
        JudgementLog(run / LOG),
        SessionSettings(sample=10, seed=1),
    )
    for n, i in enumerate(session.order):  # 7 of the 10 of the random sample good
        session.judge(i, Verdict("good") if n < 7 else Verdict("bad", "polysemy"), "A")
    labels, pairs = tmp_path / "labels.jsonl", []
    for i in range(30):
        r = record(i)
        p, h, h2 = r.premise, r.hypothesis, r.modified_hypothesis
        pairs += [(p, h), (h, h2), (h2, h), (p, h2)]
    labels.write_text(
        "".join(
            json.dumps({"premise": a, "hypothesis": b, "label": "neutral"}) + "\n"
            for a, b in dict.fromkeys(pairs)
        )
    )
    out = tmp_path / "ev"
    res = cli("evaluate", run / "triples.jsonl", "-m", f"precomputed:{labels}", "--out", out,
              "--no-plots", "-q", "--no-cache")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert publish(out).exit_code == 0
    _, body = split_card(hub.files("someone/results")["README.md"].decode())
    assert "## Quality of the triples (human review)" in body
    assert (
        f"- `{run / 'triples.jsonl'}`: **precision 0.700** (95% Wilson interval 0.397-0.892)"
        in (body)
    )
    assert "7 of 10 triples of a seeded random sample judged good by 1 person" in body
    # triples changed since the evaluation: the review is not of the triples evaluated
    with open(run / "triples.jsonl", "a", encoding="utf-8") as fh:
        fh.write("\n")
    assert publish(out).exit_code == 0
    _, body = split_card(hub.files("someone/results")["README.md"].decode())
    assert "human review" not in body


def test_export_writes_the_evaluation_card_offline(evaluation, tmp_path):
    """`export EVAL --to card` once refused an evaluation ("not a finished transnli run"): it
    writes EVAL/hub, what `publish` would upload, with no network."""
    folder = tmp_path / "ev"
    shutil.copytree(evaluation, folder)
    res = cli("export", folder, "--to", "card", "--title", "My results")
    assert res.exit_code == 0, res.output
    hub = folder / "hub"
    written = {p.relative_to(hub).as_posix() for p in hub.rglob("*") if p.is_file()}
    assert written == expected_files(folder) - {".gitattributes"}
    n = len(written) - 1
    assert f"exported {hub} (the evaluation card README.md and {n} files)" in res.output
    staged = stage(open_evaluation(folder), tmp_path / "staged", repo_id=None, title="My results")
    assert set(staged) == written
    card = (hub / "README.md").read_text()
    assert card == (tmp_path / "staged" / "README.md").read_text() and "# My results" in card
    again = cli("export", folder, "--to", "card", "--title", "My results")
    assert again.exit_code == 0 and (hub / "README.md").read_text() == card  # deterministic
    wrong = cli("export", folder, "--to", "parquet")
    assert wrong.exit_code == 2 and "exports its card only (--to card)" in wrong.output
