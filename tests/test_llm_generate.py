"""The LLM pipeline: clients against a scripted OpenAI-compatible server (real HTTP), the reply
cache, tiny local transformers models, and `transnli generate --pipeline llm` end to end."""

import json
import time

import pytest
from click.testing import CliRunner
from llm_fakes import FakeLLM, build_tiny_gpt2, build_tiny_t5
from transnli.common.llm.base import all_unreachable
from transnli.common.llm.hf import HFCausalClient, HFSeq2SeqClient
from transnli.common.llm.openai_chat import OpenAIChatClient, parse_retry_after
from transnli.common.llm.reply_cache import CachedClient, ReplyCache
from transnli.generator.llm.verify import REASONS, verify_reply

from transnli.cli import main

# Keyed by the word in quotation marks (see llm_fakes.replacement).
SCRIPT = {
    "man": ("good", "woman"),
    "sleeping": ("explain", "awake"),
    "bench": ("two", "chair", "man", "woman"),
    "old": ("quoted", "young"),
    "dog": ("wrong", "old", "young"),
    "walks": ("negate",),
    "slowly": ("status", 429, 1, "quickly"),
    "tall": ("malformed",),
    "girl": ("sleep", 1.2, "boy"),
    "happy": ("raw", "I am sorry, I cannot help with that."),
}
PAIRS = [
    {
        "premise": "A man is sleeping on a bench in the park.",
        "hypothesis": "A man is sleeping on a bench.",
        "label": "entailment",
        "id": "p1",
    },
    {
        "premise": "The old dog walks slowly down the road.",
        "hypothesis": "The old dog walks slowly.",
        "label": "entailment",
        "id": "p2",
    },
    {
        "premise": "A girl is smiling.",
        "hypothesis": "A tall girl is happy.",
        "label": "neutral",
        "id": "p3",
    },
    {
        "premise": "Kids are outside.",
        "hypothesis": "The child plays with a red ball.",
        "label": "neutral",
        "id": "p4",
    },
]
EXPECTED = {  # word -> verdict (unscripted words: the model echoes the sentence)
    "man": "ok",
    "sleeping": "ok",
    "bench": "multiple_words_changed",
    "old": "ok",
    "dog": "wrong_position",
    "walks": "negation_added",
    "slowly": "ok",
    "tall": "request_failed",
    "girl": "request_failed",
    "happy": "unparseable",
    "child": "no_change",
    "plays": "no_change",
    "red": "no_change",
    "ball": "no_change",
}


@pytest.fixture
def fake():
    server = FakeLLM(SCRIPT)
    yield server
    server.close()


@pytest.fixture(autouse=True)
def llm_cache(tmp_path, monkeypatch):
    path = tmp_path / "llm-cache.sqlite3"
    monkeypatch.setenv("TRANSNLI_LLM_CACHE", str(path))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return path


def prompt_for(sentence, word):
    start = sentence.index(word)
    return f'Change the meaning...\n\n{sentence[:start]}"{word}"{sentence[start + len(word) :]}'


def client(fake, **kw):
    kw.setdefault("backoff", 0.01)
    return OpenAIChatClient("fake-1", base_url=fake.url, **kw)


# -- the OpenAI-compatible client -----------------------------------------------------------------
def test_good_reply_usage_and_request_shape(fake):
    c = client(fake, max_tokens=77)
    (r,) = c.complete_many([prompt_for("A man is sleeping on a bench.", "man")])
    assert r.ok and r.text == "A woman is sleeping on a bench." and r.attempts == 1
    assert r.prompt_tokens > 0 and r.completion_tokens == 7
    body = fake.bodies[0]
    assert body["model"] == "fake-1" and body["temperature"] == 0.0 and body["max_tokens"] == 77
    assert body["messages"] == [
        {"role": "user", "content": prompt_for("A man is sleeping on a bench.", "man")}
    ]
    assert "Authorization" not in fake.headers[0]  # no key: fine for local servers


def test_api_key_comes_from_the_named_variable(fake, monkeypatch):
    monkeypatch.setenv("MY_LLM_KEY", "sk-test-123")
    client(fake, api_key_env="MY_LLM_KEY").complete_many(["x"])
    assert fake.headers[0]["Authorization"] == "Bearer sk-test-123"


def test_429_then_success_honours_retry_after(fake):
    c = client(fake, backoff=5.0)  # Retry-After: 0 must win over the 5 s backoff
    t0 = time.perf_counter()
    (r,) = c.complete_many([prompt_for("The old dog walks slowly.", "slowly")])
    assert time.perf_counter() - t0 < 2
    assert r.ok and r.text == "The old dog walks quickly." and r.attempts == 2
    assert c.usage.retries == 1 and c.usage.requests == 2


def test_5xx_retries_give_up_with_an_error(fake):
    fake.respond = lambda prompt: ("status", 503, 99, "never")
    c = client(fake, max_retries=2)
    (r,) = c.complete_many(["p"])
    assert not r.ok and r.error_kind == "http" and "503" in r.error and r.attempts == 3


def test_client_errors_are_not_retried(fake):
    fake.respond = lambda prompt: ("status", 401, 99, "never")
    (r,) = client(fake, max_retries=3).complete_many(["p"])
    assert r.error_kind == "auth" and "OPENAI_API_KEY" in r.error and len(fake.prompts) == 1
    assert all_unreachable([r]) is r


def test_malformed_json_is_an_error_not_a_crash(fake):
    (r,) = client(fake).complete_many([prompt_for("A tall girl is happy.", "tall")])
    assert not r.ok and r.error_kind == "malformed" and len(fake.prompts) == 1


def test_timeout_is_retried_then_reported(fake):
    c = client(fake, timeout=0.3, max_retries=1)
    t0 = time.perf_counter()
    (r,) = c.complete_many([prompt_for("A tall girl is happy.", "girl")])
    assert time.perf_counter() - t0 < 2
    assert not r.ok and r.error_kind == "timeout" and r.attempts == 2


def test_unreachable_server_is_fatal():
    c = OpenAIChatClient(
        "m", base_url="http://127.0.0.1:9/v1", max_retries=1, backoff=0.01, timeout=1
    )
    replies = c.complete_many(["a", "b"])
    assert all(r.error_kind == "connection" for r in replies) and all_unreachable(replies)


def test_concurrency_is_bounded_and_order_kept(fake):
    fake.respond = lambda prompt: ("sleep", 0.15, f"reply to {prompt}")
    prompts = [f"p{i}" for i in range(6)]
    replies = client(fake, concurrency=2).complete_many(prompts)
    assert [r.text for r in replies] == [f"reply to {p}" for p in prompts]
    assert fake.max_in_flight == 2


def test_retry_after_parsing():
    assert parse_retry_after("0") == 0 and parse_retry_after("2.5") == 2.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == pytest.approx(
        10.0
    )


# -- the reply cache ------------------------------------------------------------------------------
def test_cache_serves_reruns_and_never_stores_failures(fake, tmp_path):
    prompts = [
        prompt_for("A man is sleeping on a bench.", "man"),
        prompt_for("A tall girl is happy.", "tall"),
        prompt_for("A man is sleeping on a bench.", "man"),
    ]
    cached = CachedClient(client(fake), ReplyCache(tmp_path / "c.sqlite3"))
    first = cached.complete_many(prompts)
    assert len(fake.prompts) == 2  # the duplicate prompt is asked once
    assert first[0].ok and not first[0].cached and not first[1].ok
    again = CachedClient(client(fake), ReplyCache(tmp_path / "c.sqlite3")).complete_many(prompts)
    assert len(fake.prompts) == 3  # only the failed prompt is asked again
    assert again[0].cached and again[0].text == first[0].text
    assert (again[0].prompt_tokens, again[0].completion_tokens) == (
        first[0].prompt_tokens,
        first[0].completion_tokens,
    )
    hotter = CachedClient(client(fake, temperature=0.7), ReplyCache(tmp_path / "c.sqlite3"))
    hotter.complete_many(prompts[:1])
    assert len(fake.prompts) == 4  # other generation parameters: another key


# -- local transformers models (tiny, untrained: their output is noise; the plumbing is checked) --
@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory):
    return build_tiny_t5(tmp_path_factory.mktemp("t5") / "tiny-t5")


def test_hf_seq2seq_client_generates_and_answers_are_verified(tiny_t5, tmp_path):
    c = HFSeq2SeqClient(str(tiny_t5), device="cpu", batch_size=2, max_new_tokens=6)
    prompts = [prompt_for("A man is sleeping on a bench.", w) for w in ("man", "sleeping", "bench")]
    replies = c.complete_many(prompts)
    assert len(replies) == 3 and all(r.ok and isinstance(r.text, str) for r in replies)
    assert all(0 < r.completion_tokens <= 6 and r.prompt_tokens > 10 for r in replies)
    assert c.model_identity.startswith("tiny-t5@")
    for r in replies:
        s = "A man is sleeping on a bench."
        assert verify_reply(r.text, s, 9, 17).reason in REASONS
    cached = CachedClient(
        HFSeq2SeqClient(str(tiny_t5), device="cpu", max_new_tokens=6),
        ReplyCache(tmp_path / "hf.sqlite3"),
    )
    a = cached.complete_many(prompts[:2])
    b = cached.complete_many(prompts[:2])
    assert [x.text for x in a] == [x.text for x in b] and all(x.cached for x in b)  # greedy: stable


def test_hf_causal_client_generates(tmp_path):
    folder = build_tiny_gpt2(tmp_path / "tiny-gpt2")
    c = HFCausalClient(str(folder), device="cpu", batch_size=4, max_new_tokens=5)
    replies = c.complete_many(["A man is sleeping", 'change the word " awake " please'])
    assert all(r.ok and r.completion_tokens <= 5 for r in replies)
    assert c.params()["chat_template"] is False


def test_a_local_llm_attends_as_transformers_chooses_on_the_cpu_and_eagerly_elsewhere(
    tmp_path, monkeypatch
):
    """As the language model and the pair judge do (common.devices.attention_implementation): the
    meta device stands in for a GPU, the choice being made before the weights move."""
    import transformers

    folder = build_tiny_gpt2(tmp_path / "tiny-gpt2")
    loaded = []
    original = transformers.AutoModelForCausalLM.from_pretrained

    def recording(*args, **kwargs):
        model = original(*args, **kwargs)
        loaded.append(model.config._attn_implementation)
        return model

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", recording)
    HFCausalClient(str(folder), device="cpu").prepare()
    HFCausalClient(str(folder), device="meta").prepare()
    assert loaded == ["sdpa", "eager"]


# -- transnli generate --pipeline llm, end to end --------------------------------------------------
def write_pairs(path, pairs):
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    return str(path)


def generate(args, expect_ok=True):
    result = CliRunner().invoke(main, ["generate", *args, "-q"])
    if expect_ok:
        assert result.exit_code == 0, result.output
    return result


def llm_args(fake, *extra):
    return [
        "--pipeline",
        "llm",
        "--llm-base-url",
        fake.url,
        "--llm-model",
        "fake-1",
        "--llm-timeout",
        "0.4",
        "--llm-max-retries",
        "1",
        "--grammar",
        "none",
        "--acceptability",
        "none",
        *extra,
    ]


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """One run over PAIRS, shared by the assertions below (the scripted timeout costs ~2 s)."""
    tmp = tmp_path_factory.mktemp("llm_e2e")
    mp = pytest.MonkeyPatch()
    mp.setenv("TRANSNLI_LLM_CACHE", str(tmp / "cache.sqlite3"))
    server = FakeLLM(SCRIPT)
    try:
        src = write_pairs(tmp / "pairs.jsonl", PAIRS)
        result = generate([src, "--out", str(tmp / "out"), *llm_args(server)])
        n_requests = len(server.prompts)
        yield {
            "out": tmp / "out",
            "src": src,
            "tmp": tmp,
            "server": server,
            "result": result,
            "n_requests": n_requests,
        }
    finally:
        server.close()
        mp.undo()


def test_generate_llm_writes_triples_and_rejects_with_reasons(e2e):
    out = e2e["out"]
    triples, rejected = read(out / "triples.jsonl"), read(out / "rejected.jsonl")
    got = {r["word"]: "ok" for r in triples} | {r["word"]: r["reason"] for r in rejected}
    assert got == EXPECTED
    by_word = {r["word"]: r for r in triples}
    assert by_word["sleeping"]["modified_hypothesis"] == "A man is awake on a bench."
    assert by_word["old"]["modified_hypothesis"] == "The young dog walks slowly."
    assert by_word["slowly"]["modified_hypothesis"] == "The old dog walks quickly."
    for t in triples:
        assert t["pipeline"] == "llm" and t["checks"]["llm_answer"]["passed"] is True
        assert t["antonym"] == t["llm"]["answer"].split()[t["word_index"]].strip('".')
        assert t["hypothesis"][: t["char_start"]] == t["modified_hypothesis"][: t["char_start"]]
        assert set(t["llm"]) >= {
            "backend",
            "model",
            "prompt_id",
            "reply",
            "answer",
            "verdict",
            "tokens",
            "wordnet",
        }
        assert t["llm"]["backend"] == "openai" and t["llm"]["model"] == "fake-1"
    for r in rejected:
        assert r["rejected_by"] == "llm_answer" and r["checks"]["llm_answer"]["passed"] is False
    assert "error" in next(r for r in rejected if r["word"] == "girl")["llm"]
    # word order is input order
    assert [r["word"] for r in rejected][:2] == ["bench", "dog"]


def test_stats_carry_the_table_7_figures(e2e):
    s = json.loads((e2e["out"] / "stats.json").read_text())
    llm = s["llm"]
    assert llm["words_prompted"] == len(EXPECTED) == s["words_considered"]
    assert llm["request_failures"] == 2 and llm["answers"] == len(EXPECTED) - 2
    assert llm["answers_meeting_requirements"] == 4
    assert llm["answers_meeting_requirements_rate"] == pytest.approx(4 / 12, abs=1e-6)
    assert llm["answer_failures"] == {
        "unparseable": 1,
        "no_change": 4,
        "negation_added": 1,
        "multiple_words_changed": 1,
        "wrong_position": 1,
    }
    cmp = llm["compared_with_wordnet"]
    assert cmp["compared"] == cmp["same_as_wordnet"] + cmp["different_from_wordnet"] == 4
    assert cmp["different_from_wordnet"] >= 1  # "awake" is not WordNet's choice for "sleeping"
    assert llm["tokens"]["prompt"] > 0 and llm["tokens"]["completion"] > 0
    assert llm["tokens"]["total"] == llm["tokens"]["prompt"] + llm["tokens"]["completion"]
    assert llm["request_seconds"] >= 0 and llm["prompt"].startswith("replace_antonym@")
    # the general invariants hold with the LLM rejections in them
    skipped = sum(v for k, v in s.items() if k.startswith("skipped_"))
    assert s["words_considered"] == skipped + s["rejected_llm_answer"] + s["candidates_built"]
    assert (
        s["candidates_built"]
        == s["rejected_grammar"] + s["rejected_acceptability"] + s["triples_accepted"]
    )
    assert s["triples_accepted"] == 4 and s["rejected_llm_answer"] == 10


def test_config_records_the_llm_settings_without_secrets(e2e):
    c = json.loads((e2e["out"] / "config.json").read_text())
    cfg = c["config"]
    assert (
        cfg["pipeline"] == "llm"
        and cfg["llm_model"] == "fake-1"
        and cfg["llm_base_url"] == e2e["server"].url
    )
    assert cfg["llm_api_key_env"] == "OPENAI_API_KEY" and cfg["llm_temperature"] == 0.0
    assert c["resources"]["llm"]["backend"] == "openai" and c["resources"]["llm"][
        "prompt"
    ].startswith("replace_antonym@")
    assert "sk-" not in json.dumps(c)
    assert "LLM openai:fake-1: 4/12 answers" in e2e["result"].output


def test_rerun_is_served_from_the_cache(e2e, monkeypatch):
    monkeypatch.setenv("TRANSNLI_LLM_CACHE", str(e2e["tmp"] / "cache.sqlite3"))
    server = e2e["server"]
    before = len(server.prompts)
    out2 = e2e["tmp"] / "out2"
    result = generate([e2e["src"], "--out", str(out2), *llm_args(server, "--llm-timeout", "0.2")])
    asked = server.prompts[before:]
    # only the two failed requests are asked again (malformed once, timeout twice); nothing else
    assert len(asked) == 3 and all('"tall"' in p or '"girl"' in p for p in asked)
    assert "12 from the cache" in result.output
    for name in ("triples.jsonl", "stats.json"):
        assert (out2 / name).read_bytes() == (e2e["out"] / name).read_bytes(), name


def test_crash_mid_run_resumes_to_the_same_bytes(tmp_path, fake, monkeypatch):
    from transnli.generator.llm.pipeline import LLMPipeline

    src = write_pairs(tmp_path / "pairs.jsonl", PAIRS[:2] + PAIRS[3:])  # no slow prompt here
    clean = tmp_path / "clean"
    generate([src, "--out", str(clean), *llm_args(fake)])
    real, calls = LLMPipeline.process, []

    def crash_on_second_batch(self, pairs):
        calls.append(len(pairs))
        if len(calls) == 2:
            raise RuntimeError("simulated crash")
        return real(self, pairs)

    monkeypatch.setattr(LLMPipeline, "process", crash_on_second_batch)
    crashed = generate(
        [src, "--out", str(tmp_path / "r"), *llm_args(fake), "--batch-size", "1"], expect_ok=False
    )
    assert crashed.exit_code != 0 and (tmp_path / "r" / "progress.json").exists()
    monkeypatch.setattr(
        LLMPipeline, "process", real
    )  # not undo(): that would drop the cache env too
    resumed = generate([src, "--out", str(tmp_path / "r"), *llm_args(fake), "--batch-size", "1"])
    assert "Resuming" in resumed.output
    for name in ("triples.jsonl", "rejected.jsonl", "stats.json"):
        assert (tmp_path / "r" / name).read_bytes() == (clean / name).read_bytes(), name


def test_wordnet_plus_llm_asks_only_where_wordnet_has_no_antonym(tmp_path, fake):
    fake.script = {
        "bench": ("good", "chair"),
        "dog": ("good", "cat"),
        "plays": ("good", "works"),
        "ball": ("negate",),
    }
    src = write_pairs(tmp_path / "pairs.jsonl", [PAIRS[0], PAIRS[1], PAIRS[3]])
    out = tmp_path / "out"
    generate([src, "--out", str(out), *llm_args(fake, "--pipeline", "wordnet+llm")])
    asked = sorted(p.rsplit('"', 2)[1] for p in fake.prompts)
    assert asked == ["ball", "bench", "dog", "plays"]  # no_antonym x3, no_pos_match x1
    triples = read(out / "triples.jsonl")
    assert {t["pipeline"] for t in triples} == {"wordnet", "llm"}
    llm_words = {t["word"] for t in triples if t["pipeline"] == "llm"}
    assert llm_words == {"bench", "dog", "plays"}
    assert all(
        t["llm"]["wordnet"]["status"] in ("no_antonym", "no_pos_match")
        for t in triples
        if t["pipeline"] == "llm"
    )
    s = json.loads((out / "stats.json").read_text())
    assert s["llm"]["mode"] == "wordnet+llm"
    assert s["llm"]["fallback_words"] == {"no_antonym": 3, "no_pos_match": 1}
    assert s["skipped_no_antonym"] == 0 and s["skipped_no_pos_match"] == 0
    assert s["llm"]["answer_failures"]["negation_added"] == 1
    assert s["llm"]["compared_with_wordnet"]["no_wordnet_antonym"] == {
        "no_antonym": 2,
        "no_pos_match": 1,
    }


def test_unreachable_server_stops_the_run_resumably(tmp_path):
    src = write_pairs(tmp_path / "pairs.jsonl", PAIRS[:1])
    result = generate(
        [
            src,
            "--out",
            str(tmp_path / "o"),
            "--pipeline",
            "llm",
            "--llm-base-url",
            "http://127.0.0.1:9/v1",
            "--llm-model",
            "m",
            "--llm-max-retries",
            "0",
            "--grammar",
            "none",
            "--acceptability",
            "none",
        ],
        expect_ok=False,
    )
    assert (
        result.exit_code != 0
        and "cannot reach LLM server at http://127.0.0.1:9/v1 (connection refused)" in result.output
        and "resume" in result.output
    )


def test_llm_pipeline_needs_a_model(tmp_path):
    src = write_pairs(tmp_path / "pairs.jsonl", PAIRS[:1])
    result = generate([src, "--out", str(tmp_path / "o"), "--pipeline", "llm"], expect_ok=False)
    assert result.exit_code != 0 and "--llm-model" in result.output


def test_generate_with_a_local_seq2seq_model(tiny_t5, tmp_path):
    src = write_pairs(tmp_path / "pairs.jsonl", PAIRS[:1])
    out = tmp_path / "o"
    generate(
        [
            src,
            "--out",
            str(out),
            "--pipeline",
            "llm",
            "--llm-backend",
            "hf-seq2seq",
            "--llm-model",
            str(tiny_t5),
            "--llm-max-tokens",
            "8",
            "--device",
            "cpu",
            "--grammar",
            "none",
            "--acceptability",
            "none",
        ]
    )
    records = read(out / "triples.jsonl") + read(out / "rejected.jsonl")
    assert len(records) == 3  # man, sleeping, bench: each prompted, answered and verified
    for r in records:
        assert r["llm"]["backend"] == "hf-seq2seq" and r["llm"]["reply"] is not None
        assert r["llm"]["verdict"] in REASONS
        assert r["llm"]["tokens"]["completion"] <= 8
    s = json.loads((out / "stats.json").read_text())
    assert s["llm"]["words_prompted"] == 3 and s["llm"]["request_failures"] == 0
