"""The garbage-collector policy around model loading (evaluator/gcpolicy.py)."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest
from transnli.evaluator import gcpolicy


@pytest.fixture(autouse=True)
def _restore():
    # a command run in-process earlier in the session (click's CliRunner) has set the policy
    gcpolicy.freeze_after_loading(False)
    gc.unfreeze()
    yield
    gcpolicy.freeze_after_loading(False)
    gc.unfreeze()
    gc.enable()


def test_loading_pauses_the_collector_and_restores_it():
    assert gc.isenabled()
    with gcpolicy.loading():
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == 0  # the API's default: nothing frozen
    gc.disable()
    with gcpolicy.loading():
        pass
    assert not gc.isenabled()  # a caller that had it off keeps it off


def test_loading_restores_the_collector_when_loading_fails():
    with pytest.raises(RuntimeError), gcpolicy.loading():
        raise RuntimeError("no such model")
    assert gc.isenabled()


def test_the_command_line_freezes_what_loading_built():
    gcpolicy.freeze_after_loading()
    kept = [[i] for i in range(1000)]  # long-lived containers, like a loaded model's
    with gcpolicy.loading():
        pass
    assert gc.get_freeze_count() >= len(kept) and gc.isenabled()


def test_transnli_command_asks_for_the_freeze():
    code = (
        "import sys; from transnli.evaluator import gcpolicy; from transnli.cli import main\n"
        "sys.argv = ['transnli', 'show', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(gcpolicy._freeze_after_loading)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("True")
