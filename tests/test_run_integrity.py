"""Run integrity of `transnli generate`: what a user can rely on when a run is stopped, killed,
run twice at once, or finds its folder damaged.

Fault injection: real processes killed with SIGKILL (before and after the first checkpoint, with 1
and 2 workers, a worker killed as the OOM killer would), a second run into a busy folder, a disk
that fills up, a corrupt checkpoint, a cut triples.jsonl, a changed --limit, an input edited at the
same size. After each, the same command must finish with files byte-identical to an uninterrupted
run, or refuse with one line that says what to do. The kill points are random; a failure prints
its seed (rerun with TRANSNLI_FAULT_SEED=<seed>).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from transnli.resources import resource_path

from transnli.cli import main

SAMPLE = resource_path("samples", "snli_sample.jsonl")
FAST = ["--grammar", "none", "--acceptability", "none"]  # the checks' start-up is not under test
FILES = ("triples.jsonl", "rejected.jsonl", "stats.json")
SEED = int(os.environ.get("TRANSNLI_FAULT_SEED") or random.randrange(1 << 30))


def invoke(*args):
    return CliRunner().invoke(main, ["generate", *map(str, args), "-q", *FAST])


def assert_same_files(out: Path, reference: Path) -> None:
    for name in FILES:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), f"{name} (seed {SEED})"
    assert (out / "finished.json").exists() and not (out / "progress.json").exists()


def one_line_error(result, *parts: str) -> str:
    """The command failed with a message (not a traceback) containing every part."""
    assert result.exit_code not in (0, None), result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    for part in parts:
        assert part in result.output, result.output
    return result.output


@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> Path:
    """The sample four times over (432 pairs): long enough to kill a run in the middle."""
    path = tmp_path_factory.mktemp("input") / "snli_x4.jsonl"
    path.write_text(SAMPLE.read_text(encoding="utf-8") * 4, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reference")
    result = invoke(SAMPLE, "--out", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def big_reference(tmp_path_factory, big_input) -> Path:
    out = tmp_path_factory.mktemp("big-reference")
    result = invoke(big_input, "--out", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def sample_copy(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sample") / SAMPLE.name
    shutil.copyfile(SAMPLE, path)
    return path


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory, sample_copy) -> tuple[Path, object]:
    """A run of (a copy of) the sample stopped by Ctrl-C in its third batch (two checkpoints)."""
    from transnli.generator.output import RunWriter

    out = tmp_path_factory.mktemp("interrupted")
    real, calls = RunWriter.write_batch, []

    def ctrl_c_on_third_batch(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(RunWriter, "write_batch", ctrl_c_on_third_batch)
        result = invoke(sample_copy, "--out", out, "--batch-size", "16")
    return out, result


@pytest.fixture
def stopped_run(interrupted, tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(interrupted[0], out)
    return out


# -- processes killed -----------------------------------------------------------------------------
def start(*args) -> subprocess.Popen:
    code = "from transnli.cli import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, "generate", *map(str, args), "-q", *FAST],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def pairs_done(out: Path) -> int | None:
    try:
        return json.loads((out / "progress.json").read_text())["pairs_done"]
    except (OSError, ValueError):
        return None


def wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 90):
    end = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, (
            f"the run ended before {what}: {proc.stderr.read()} (seed {SEED})"
        )
        assert time.monotonic() < end, f"timed out waiting for {what} (seed {SEED})"
        time.sleep(0.005)


def children(pid: int) -> list[int]:
    """Worker processes of `pid` (its spawned children)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"spawn_main" in cmdline:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def cleanup(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def test_killed_before_the_first_checkpoint_resumes_and_a_second_run_is_refused(
    tmp_path, reference
):
    out = tmp_path / "run"
    proc = start(SAMPLE, "--out", out, "--batch-size", "54")
    try:
        # The output files exist, no batch is checkpointed: freeze the run right there.
        wait_for(
            lambda: (out / "triples.jsonl").exists() and not pairs_done(out),
            proc,
            "the run's start",
        )
        os.kill(proc.pid, signal.SIGSTOP)
        assert not pairs_done(out), f"the first checkpoint came too soon to test (seed {SEED})"
        busy = invoke(SAMPLE, "--out", out)
        one_line_error(busy, f"is in use by PID {proc.pid} (another transnli run)")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        cleanup(proc)
    resumed = invoke(SAMPLE, "--out", out)  # the lock died with its holder
    assert resumed.exit_code == 0, resumed.output
    assert "Restarting" in resumed.output
    assert_same_files(out, reference)


@pytest.mark.slow  # two worker processes each load the pipeline
def test_killed_parent_with_two_workers_resumes_and_its_workers_leave(
    tmp_path, big_input, big_reference
):
    out = tmp_path / "run"
    target = random.Random(SEED).randrange(4, 200)
    proc = start(big_input, "--out", out, "--batch-size", "4", "--workers", "2")
    try:
        wait_for(lambda: (pairs_done(out) or 0) >= target, proc, f"{target} pairs")
        workers = children(proc.pid)
        assert len(workers) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        end = time.monotonic() + 20
        while any(alive(w) for w in workers) and time.monotonic() < end:
            time.sleep(0.1)
        assert not any(alive(w) for w in workers), "orphaned workers kept running"
    finally:
        cleanup(proc)
    resumed = invoke(big_input, "--out", out)
    assert resumed.exit_code == 0, resumed.output
    assert "Resuming" in resumed.output
    assert_same_files(out, big_reference)


@pytest.mark.slow  # two worker processes each load the pipeline
def test_a_killed_worker_fails_the_run_at_once_and_it_resumes(tmp_path, big_input, big_reference):
    out = tmp_path / "run"
    target = random.Random(SEED + 1).randrange(4, 200)
    proc = start(big_input, "--out", out, "--batch-size", "4", "--workers", "2")
    try:
        wait_for(lambda: (pairs_done(out) or 0) >= target, proc, f"{target} pairs")
        os.kill(random.Random(SEED).choice(children(proc.pid)), signal.SIGKILL)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the run kept waiting for its dead worker")
    finally:
        cleanup(proc)
    assert proc.returncode == 1, err
    assert "a worker process died" in err and "Run the same command again to resume" in err
    assert "Traceback" not in err
    resumed = invoke(big_input, "--out", out)
    assert resumed.exit_code == 0, resumed.output
    assert_same_files(out, big_reference)


def test_a_worker_that_died_between_batches_is_reported_when_the_next_batch_is_sent():
    # The other half of the race above: the pool broke before the parent's next `submit`.
    from concurrent.futures import ProcessPoolExecutor

    from transnli.generator.parallel import ParallelRunner, WorkerDied

    runner = ParallelRunner.__new__(ParallelRunner)  # the pool alone, without the pipelines
    runner.config, runner.window = None, 2
    runner._pool = ProcessPoolExecutor(1)
    try:
        os.kill(runner._pool.submit(os.getpid).result(), signal.SIGKILL)
        end = time.monotonic() + 30
        while not runner._pool._broken and time.monotonic() < end:
            time.sleep(0.01)
        with pytest.raises(WorkerDied, match="a worker process died"):
            next(runner.run([("p", "h")] * 3, batch_size=1))
    finally:
        runner._pool.shutdown(wait=True)


# -- interrupted, damaged, changed ----------------------------------------------------------------
def test_ctrl_c_exits_130_with_how_to_go_on_and_resumes(
    interrupted, tmp_path, reference, sample_copy
):
    _, result = interrupted
    assert result.exit_code == 130, result.output
    assert "interrupted; run the same command again to resume" in result.output
    out = tmp_path / "run"
    shutil.copytree(interrupted[0], out)
    assert pairs_done(out) == 32
    resumed = invoke(sample_copy, "--out", out)
    assert resumed.exit_code == 0 and "Resuming" in resumed.output, resumed.output
    assert_same_files(out, reference)


def test_a_full_disk_is_one_line_and_the_run_resumes(tmp_path, reference, monkeypatch):
    real_fsync, out = os.fsync, tmp_path / "run"

    def disk_full_in_second_batch(fd):
        if pairs_done(out) == 16:  # the first batch is checkpointed, the second is being written
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", disk_full_in_second_batch)
    full = invoke(SAMPLE, "--out", out, "--batch-size", "16")
    monkeypatch.undo()
    one_line_error(
        full, "No space left on device", "free some space and run the same command again"
    )
    resumed = invoke(SAMPLE, "--out", out)
    assert resumed.exit_code == 0 and "Resuming" in resumed.output, resumed.output
    assert_same_files(out, reference)


def test_a_read_only_disk_is_one_line(tmp_path, monkeypatch):
    from pathlib import Path as P

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))

    monkeypatch.setattr(P, "mkdir", read_only)
    one_line_error(
        invoke(SAMPLE, "--out", tmp_path / "new"), "Read-only file system", "choose another --out"
    )


def test_a_corrupt_checkpoint_is_one_line(stopped_run, sample_copy):
    (stopped_run / "progress.json").write_text('{"fingerprint": "abc", "pairs_')
    one_line_error(
        invoke(sample_copy, "--out", stopped_run), "progress.json is corrupt", "--overwrite"
    )
    (stopped_run / "progress.json").write_text('{"fingerprint": "abc", "pairs_done": -3}')
    one_line_error(
        invoke(sample_copy, "--out", stopped_run), "progress.json is corrupt", "--overwrite"
    )


def test_a_cut_triples_file_is_refused_not_padded(stopped_run, sample_copy):
    triples = stopped_run / "triples.jsonl"
    expected = json.loads((stopped_run / "progress.json").read_text())["offsets"]["triples.jsonl"]
    with open(triples, "r+b") as fh:
        fh.truncate(expected // 2)
    one_line_error(
        invoke(sample_copy, "--out", stopped_run),
        str(triples),
        f"({expected // 2} bytes)",
        f"({expected} bytes",
        "--overwrite",
    )
    assert triples.stat().st_size == expected // 2 and b"\0" not in triples.read_bytes()
    triples.unlink()
    one_line_error(
        invoke(sample_copy, "--out", stopped_run), f"{triples} is missing", "--overwrite"
    )


def test_a_changed_limit_is_another_run(tmp_path):
    from transnli.generator.config import resolve_config
    from transnli.generator.errors import RunFolderError
    from transnli.generator.run import RunOptions, generate_run

    out = tmp_path / "generate"
    reuse = RunOptions(quiet=True)
    ten = resolve_config(grammar="none", acceptability="none", limit=10)
    every = resolve_config(grammar="none", acceptability="none")
    assert generate_run(str(SAMPLE), ten, out, reuse).stats["sentences_read"] == 10
    assert generate_run(str(SAMPLE), ten, out, reuse).stats["sentences_read"] == 10  # reused
    with pytest.raises(RunFolderError, match="--overwrite"):  # not the 10-pair run again
        generate_run(str(SAMPLE), every, out, reuse)
    again = RunOptions(quiet=True, overwrite=True)
    assert generate_run(str(SAMPLE), every, out, again).stats["sentences_read"] == 108


def test_an_input_edited_at_the_same_size_is_not_resumed(stopped_run, sample_copy):
    text = sample_copy.read_text(encoding="utf-8")
    try:
        sample_copy.write_text(
            text.replace("A woman opens a door.", "A woman shuts a door."), encoding="utf-8"
        )
        assert (
            sample_copy.stat().st_size == SAMPLE.stat().st_size and sample_copy.read_text() != text
        )
        one_line_error(
            invoke(sample_copy, "--out", stopped_run), "different input or configuration"
        )
    finally:
        sample_copy.write_text(text, encoding="utf-8")


def test_a_second_run_into_a_locked_folder_refuses_at_once(tmp_path):
    from transnli.generator.output import OutputError, RunWriter

    holder = RunWriter(tmp_path, "fp")
    holder.open()
    with pytest.raises(OutputError, match=f"in use by PID {os.getpid()}"):
        RunWriter(tmp_path, "fp").open()
    holder.close()  # released: the next run may go on
    assert RunWriter(tmp_path, "fp").open() == 0


# -- found before the slow start ------------------------------------------------------------------
def test_input_errors_come_before_the_pipeline_loads(tmp_path, monkeypatch):
    from transnli.generator import build

    def no_pipeline(config):
        raise AssertionError("the pipeline was loaded before the input was checked")

    monkeypatch.setattr(build, "build_pipeline", no_pipeline)
    odd = tmp_path / "pairs.dat"
    odd.write_text("nothing to see\n")
    one_line_error(invoke(odd, "--out", tmp_path / "o1"), "cannot tell the format")
    wrong_keys = tmp_path / "pairs.jsonl"
    wrong_keys.write_text('{"text": "a", "label": "b"}\n')
    one_line_error(invoke(wrong_keys, "--out", tmp_path / "o2"), "cannot tell the format")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('max_chars = "400"', "max_chars must be an integer, got '400'"),
        ('include_aux = "yes"', "include_aux must be true or false, got 'yes'"),
        ("cola_threshold = true", "cola_threshold must be a number, got True"),
        ('pos = "VERB"', "pos must be a list of strings, got 'VERB'"),
        ("max_char = 300", "unknown setting 'max_char'; did you mean 'max_chars'?"),
    ],
)
def test_preset_values_of_the_wrong_type_are_refused(tmp_path, line, message):
    preset = tmp_path / "mine.toml"
    preset.write_text(line + "\n")
    result = invoke(SAMPLE, "--out", tmp_path / "o", "--preset", preset)
    assert result.exit_code == 2 and f"preset {preset}: {message}" in result.output, result.output


def test_duplicate_pairs_are_counted_and_warned_about_once(tmp_path):
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:6]
    source = tmp_path / "dups.jsonl"
    source.write_text("".join([*lines, lines[1], lines[1], lines[4]]), encoding="utf-8")
    result = invoke(source, "--out", tmp_path / "o")
    assert result.exit_code == 0, result.output
    stats = json.loads((tmp_path / "o" / "stats.json").read_text())
    assert stats["sentences_read"] == 9 and stats["duplicate_pairs"] == 3
    assert result.output.count("warning:") == 1
    assert "3 input pairs repeat" in result.output and f"(the first at {source}:7)" in result.output


def test_a_folder_holding_another_unfinished_run_is_refused_before_the_model_loads(
    stopped_run, sample_copy, monkeypatch
):
    """Issue 38: the refusal came after the language model had loaded (17.6 s, 1.39 GB)."""
    from transnli.generator import build

    def no_build(config):
        raise AssertionError("the pipeline was built before the folder was refused")

    monkeypatch.setattr(build, "build_pipeline", no_build)
    other = CliRunner().invoke(
        main, ["generate", str(SAMPLE), "--out", str(stopped_run), "-q", "--preset", "default"]
    )
    one_line_error(other, "holds an unfinished run with a different input or configuration")
    (stopped_run / "triples.jsonl").write_bytes(b"")  # cut since its checkpoint
    cut = invoke(sample_copy, "--out", stopped_run, "--batch-size", "16")
    one_line_error(cut, "is shorter", "than at the last checkpoint")
