"""The LLM judge: parsing replies into NLI labels, the llm: backend against a scripted
OpenAI-compatible server, and `transnli evaluate --model llm:openai:NAME` end to end."""

import json

import pytest
from click.testing import CliRunner
from llm_fakes import FakeLLM
from transnli.evaluator.backends import BackendOptions, create_backend
from transnli.evaluator.backends.llm import parse_judge_reply
from transnli.evaluator.errors import BackendError
from transnli.evaluator.metrics import TripleLabels, dataset_metrics, rule_outcome

from transnli.cli import main

E, N, C = "entailment", "neutral", "contradiction"


@pytest.mark.parametrize(
    "reply,label",
    [
        ("entailment", E),
        ("Entailment.", E),
        ("ENTAILMENT", E),
        ("**neutral**", N),
        ("C", C),
        ("  Contradiction!\n", C),
        ('"neutral"', N),
        ("Answer: contradiction", C),
        ("The answer is: Entailment.", E),
        ("Label: neutral", N),
        ("Final answer: **Contradiction**", C),
        ("I think it is entailment.", E),
        ("The hypothesis contradicts the premise.", C),
        ("The premise entails the hypothesis.", E),
        ("Contradiction. The man cannot be asleep and awake at once, so it is not entailment.", C),
        ("The premise does not entail the hypothesis; it contradicts it.", C),
        ("It could be entailment or neutral, but the final answer is neutral.", N),
        ("<think>Is it entailment? No: the dog is young, not old.</think>\ncontradiction", C),
        ("Relationship: Neutral", N),
    ],
)
def test_parser_reads_varied_replies(reply, label):
    assert parse_judge_reply(reply) == label


@pytest.mark.parametrize(
    "reply",
    [
        None,
        "",
        "   ",
        "I cannot tell.",
        "yes",
        "entailment/neutral",
        "The premise does not entail the hypothesis.",  # not E, but N or C? never guessed
        "Neither entailment nor contradiction.",
        "Entailment? Hmm. Actually contradiction.",
        "<think>entailment</think>",
        "It might be entailment or contradiction.",
    ],
)
def test_parser_never_guesses(reply):
    assert parse_judge_reply(reply) is None


def test_rules_skip_triples_without_a_label():
    # (P,H') unparseable where rule 2's antecedent holds: skipped, not a violation
    row = TripleLabels(E, C, C, None, unlabelled=("p_h2",))
    assert rule_outcome(row).rule is None
    rows = [
        row,
        TripleLabels(E, C, C, N),
        TripleLabels(None, C, C, E, gold=N, unlabelled=("p_h",)),
        TripleLabels(E, E, E, E, gold=E),
    ]
    m = dataset_metrics(rows)
    assert m["rules"]["rule2"]["cases"] == 1 and m["rules"]["rule2"]["violations"] == 1
    assert m["rules"]["rule1"]["cases"] == 1 and m["extras"]["substitution"]["cases"] == 1
    assert m["accuracy"] == 1.0 and m["accuracy_pairs"] == 1  # the unlabelled (P,H) is not judged
    assert m["unlabelled"] == {"p_h": 1, "h_h2": 0, "h2_h": 0, "p_h2": 1}


# -- the backend and the CLI -----------------------------------------------------------------------
T = [  # premise, hypothesis, modified, gold
    (
        "A man is sleeping on a bench in the park.",
        "A man is sleeping on a bench.",
        "A man is awake on a bench.",
        E,
    ),
    (
        "The old dog walks slowly down the road.",
        "The old dog walks slowly.",
        "The young dog walks slowly.",
        E,
    ),
    ("A girl smiles.", "A tall girl is happy.", "A short girl is happy.", N),
    ("Two kids play.", "Children are playing.", "Children are working.", C),
]
REPLIES = {
    (T[0][0], T[0][1]): "Entailment.",
    (T[0][1], T[0][2]): "The answer is: Contradiction.",
    (T[0][2], T[0][1]): "contradiction",
    (T[0][0], T[0][2]): "**Contradiction**",  # rule 2 holds
    (T[1][0], T[1][1]): "entailment",
    (T[1][1], T[1][2]): "CONTRADICTION",
    (T[1][2], T[1][1]): "Contradiction. A dog cannot be both old and young.",
    (T[1][0], T[1][2]): "Neutral",  # rule 2 violated
    (T[2][0], T[2][1]): "I am not sure.",  # unparseable: no label for (P,H)
    (T[2][1], T[2][2]): "contradiction",
    (T[2][2], T[2][1]): "contradiction",
    (T[2][0], T[2][2]): "entailment",
    (T[3][0], T[3][1]): "entailment",
    (T[3][1], T[3][2]): "Label: contradiction",
    (T[3][2], T[3][1]): "contradiction",
    (T[3][0], T[3][2]): "It might be entailment or contradiction.",  # unparseable (P,H')
}


def judge_respond(prompt):
    premise = prompt.split("Premise:", 1)[1].split("\n", 1)[0].strip()
    hypothesis = prompt.split("Hypothesis:", 1)[1].split("\n", 1)[0].strip()
    return REPLIES[(premise, hypothesis)]


@pytest.fixture
def judge(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_LLM_CACHE", str(tmp_path / "llm-cache.sqlite3"))
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "cache"))
    server = FakeLLM(respond=judge_respond)
    yield server
    server.close()


def test_backend_labels_pairs_and_counts_unparseable(judge):
    backend = create_backend(
        "llm:openai:judge-1", BackendOptions(extra={"llm_base_url": judge.url})
    )
    preds = backend.predict([(T[0][0], T[0][1]), (T[2][0], T[2][1]), (T[1][1], T[1][2])])
    assert [p.label for p in preds] == [E, None, C]
    d = backend.describe()
    assert d["unparseable"] == 1 and d["unparseable_examples"][0]["reply"] == "I am not sure."
    assert backend.identity.startswith("llm|openai|judge-1|nli_judge@")
    assert judge.bodies[0]["temperature"] == 0.0


def test_base_url_from_the_environment(judge, monkeypatch):
    monkeypatch.setenv("TRANSNLI_LLM_BASE_URL", judge.url)
    backend = create_backend("llm:judge-1", BackendOptions())  # a bare model means openai
    assert backend.predict([(T[0][0], T[0][1])])[0].label == E


def test_unreachable_judge_is_an_error():
    backend = create_backend(
        "llm:openai:m",
        BackendOptions(
            extra={
                "llm_base_url": "http://127.0.0.1:9/v1",
                "llm_max_retries": 0,
                "llm_cache": False,
            }
        ),
    )
    with pytest.raises(BackendError, match="cannot reach LLM server"):
        backend.predict([("a", "b")])


def test_evaluate_with_an_llm_judge_end_to_end(judge, tmp_path):
    triples = tmp_path / "demo.jsonl"
    triples.write_text(
        "".join(
            json.dumps(
                {
                    "premise": p,
                    "hypothesis": h,
                    "modified_hypothesis": m,
                    "gold_label": g,
                    "dataset": "demo",
                }
            )
            + "\n"
            for p, h, m, g in T
        )
    )
    out = tmp_path / "eval"
    args = [
        "evaluate",
        str(triples),
        "--model",
        "llm:openai:judge-1",
        "--llm-base-url",
        judge.url,
        "--out",
        str(out),
        "--no-plots",
        "--no-progress",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "2 without a label" in result.output
    summary = json.loads((out / "summary.json").read_text())
    (model,) = summary["models"]
    assert model["model"] == "llm:openai:judge-1" and model["unlabelled_pairs"] == 2
    (ds,) = model["datasets"]
    assert ds["dataset"] == "demo" and ds["n_triples"] == 4
    assert ds["rules"]["rule2"]["cases"] == 2 and ds["rules"]["rule2"]["violations"] == 1
    assert ds["mutual_contradiction_rate"] == 1.0
    assert ds["accuracy"] == pytest.approx(2 / 3)  # the unlabelled (P,H) is left out
    assert ds["unlabelled"]["p_h"] == 1 and ds["unlabelled"]["p_h2"] == 1
    described = summary["provenance"]["models"][0]
    assert described["backend"] == "llm" and described["unparseable"] == 2
    # the share it labelled is a warning of report.md (it once showed "0.0% (0/2)" and no word)
    report = (out / "report.md").read_text()
    assert "## Warnings" in report
    assert (
        "llm:openai:judge-1 labelled 87.5% of the 16 pairs it was asked (2 without a label: "
        "2 unparseable replies)" in report
    )
    n = len(judge.prompts)
    assert n == 16  # four pairs per triple, each unique pair once
    again = CliRunner().invoke(
        main, [*args[:-4], "--out", str(tmp_path / "eval2"), "--no-plots", "--no-progress"]
    )
    assert again.exit_code == 0, again.output
    assert len(judge.prompts) == n  # every reply served from the LLM reply cache
    assert "16 replies from the reply cache" in again.output
