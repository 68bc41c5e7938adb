"""The LLM acceptability check (`--acceptability llm`) against a scripted OpenAI-compatible
server."""

import pytest
from llm_fakes import FakeLLM
from transnli.common.llm.base import LLMError
from transnli.common.llm.clients import make_client
from transnli.generator.build import build_checks
from transnli.generator.checks.llm_acceptability import LLMAcceptability, parse_acceptability_reply
from transnli.generator.config import ConfigError, resolve_config

REPLIES = {
    "The restaurant is noisy and full.": "natural: yes\nmeaning_changed: yes",
    "The waiter sharpens the tray.": "**natural:** no\n**meaning_changed:** yes",
    "The soup is hot and tasty.": "<think>same claim?</think>\nnatural: yes\nmeaning_changed: no",
    "He was a shy woman.": "I think it is fine.",
}


def respond(prompt):
    candidate = prompt.split("\nB: ", 1)[1].split("\n", 1)[0].strip()
    return REPLIES[candidate]


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_LLM_CACHE", str(tmp_path / "llm-cache.sqlite3"))
    fake = FakeLLM(respond=respond)
    yield fake
    fake.close()


def test_reply_parsing_is_strict():
    assert parse_acceptability_reply("natural: yes\nmeaning_changed: no") == (True, False)
    assert parse_acceptability_reply("Natural: No.\nMeaning changed: YES") == (False, True)
    assert parse_acceptability_reply("natural: yes") is None
    assert parse_acceptability_reply("natural: yes\nnatural: no\nmeaning_changed: yes") is None
    assert parse_acceptability_reply("It is natural and the meaning changed.") is None


def test_llm_check_judges_caches_and_keeps_the_reply(server):
    client = make_client("openai", "judge-1", base_url=server.url, max_retries=0)
    check = LLMAcceptability(client)
    originals = [
        "The restaurant is quiet and full.",
        "The waiter carries the tray.",
        "The soup is warm and tasty.",
        "He was a shy man.",
    ]
    candidates = list(REPLIES)
    results = check.check_many(originals, candidates)
    assert [r.passed for r in results] == [True, False, False, False]
    assert results[1].reason == "the LLM judged it not natural"
    assert results[2].reason == "the LLM judged the meaning unchanged"
    assert (
        results[3].details["outcome"] == "unparseable"
        and results[3].details["reply"] == REPLIES[candidates[3]]
    )
    assert results[0].to_dict()["reply"] == REPLIES[candidates[0]]
    asked = len(server.prompts)
    again = check.check_many(originals, candidates)  # from the reply cache: no new request
    assert [r.to_dict() for r in again] == [r.to_dict() for r in results] and len(
        server.prompts
    ) == asked
    assert check.version().startswith("llm openai:judge-1 prompt acceptability_judge@")


def test_failed_request_stops_instead_of_rejecting(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_LLM_CACHE", str(tmp_path / "c.sqlite3"))
    client = make_client("openai", "m", base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(LLMError, match="request failed"):
        LLMAcceptability(client).check_many(["A dog."], ["A cat."])


def test_config_builds_the_llm_check_and_needs_a_model(server):
    config = resolve_config(
        "default", acceptability="llm", llm_model="judge-1", llm_base_url=server.url
    )
    assert [c.backend for c in build_checks(config)] == ["harper", "llm"]
    with pytest.raises(ConfigError, match="acceptability llm needs an LLM"):
        resolve_config("default", acceptability="llm")
