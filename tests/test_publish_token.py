"""Which token `transnli publish` sends (issue 27): `--token-env NAME` reads NAME and nothing else,
an unset or empty NAME is an error (before, HF_TOKEN was sent instead); with no variable named,
huggingface_hub's own token (HF_TOKEN, else the one `hf auth login` saved). Checked on the bearer
tokens the local fake Hub received, with the real client; and the generation run's upload through
the shared transport (transnli.common.hub) lands as before."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from fake_hub import FakeHub
from test_export import make_run, record, rejected_grammar

from transnli.cli import main


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """The fake Hub as every HfApi()'s endpoint; no token anywhere until a test sets one."""
    import huggingface_hub.constants

    server = FakeHub()
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", server.url)
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE", "MY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    # where `hf auth login` saves its token: a file of this test's own
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "hf-token"))
    yield server
    server.close()


@pytest.fixture
def run(tmp_path):
    return make_run(tmp_path / "run", [record(0), record(1)], [rejected_grammar(2)])


def publish(run, *extra):
    return CliRunner().invoke(main, ["publish", str(run), "--repo-id", "someone/t", *extra])


def test_a_named_variable_that_is_unset_is_an_error_not_hf_token(hub, run, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_other_account")
    res = publish(run, "--token-env", "MY_TOKEN")
    assert res.exit_code == 1
    assert "--token-env MY_TOKEN: the environment variable MY_TOKEN is not set" in res.output
    assert hub.tokens == [] and hub.repos == {}  # nothing was sent, least of all HF_TOKEN


def test_a_named_variable_that_is_empty_is_an_error(hub, run, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_other_account")
    monkeypatch.setenv("MY_TOKEN", "  ")
    res = publish(run, "--token-env", "MY_TOKEN")
    assert res.exit_code == 1 and "the environment variable MY_TOKEN is empty" in res.output
    assert hub.tokens == []


def test_a_named_variable_is_the_only_token_sent(hub, run, monkeypatch):
    import huggingface_hub

    monkeypatch.setenv("HF_TOKEN", "hf_other_account")
    with open(huggingface_hub.constants.HF_TOKEN_PATH, "w") as fh:
        fh.write("hf_saved_login\n")
    monkeypatch.setenv("MY_TOKEN", "hf_mine")
    res = publish(run, "--token-env", "MY_TOKEN")
    assert res.exit_code == 0, res.output
    assert hub.tokens and set(hub.tokens) == {"hf_mine"}
    # the generation run landed as the dataset publish has always uploaded it
    files = hub.files("someone/t")
    assert sorted(files) == [
        ".gitattributes",
        "README.md",
        "data/snli/rejected.parquet",
        "data/snli/test.parquet",
    ]
    assert files["README.md"] == (run / "hub" / "README.md").read_bytes()


def test_without_a_named_variable_the_saved_login_then_hf_token(hub, run, monkeypatch):
    import huggingface_hub

    with open(huggingface_hub.constants.HF_TOKEN_PATH, "w") as fh:
        fh.write("hf_saved_login\n")
    res = publish(run)
    assert res.exit_code == 0, res.output
    assert set(hub.tokens) == {"hf_saved_login"}
    monkeypatch.setenv("HF_TOKEN", "hf_env")  # huggingface_hub's order: HF_TOKEN first
    hub.tokens.clear()
    assert publish(run).exit_code == 0 and set(hub.tokens) == {"hf_env"}


def test_no_token_anywhere(hub, run):
    res = publish(run)
    assert res.exit_code == 1 and "no Hugging Face token: set HF_TOKEN" in res.output
    assert "--token-env" in res.output and "hf auth login" in res.output
    assert hub.tokens == []
