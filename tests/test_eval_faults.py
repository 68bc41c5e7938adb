"""Faults against `transnli evaluate`'s output folder: a second run into a busy folder, kill -9 at
random points of the final write, a full disk, Ctrl-C while the plot worker runs.

Real processes are killed: a child `transnli evaluate` carries an audit hook (sys.addaudithook,
no hook in transnli itself) that counts the file-system events under --out (files opened for
writing, renames, removals, folders made) and SIGKILLs itself at the K-th. K is drawn at random
over the events of an uninterrupted run (the same hook counts them in the test's process); a
failure prints the seed (rerun with
TRANSNLI_FAULT_SEED=<seed>). After every fault the folder must hold the earlier outputs untouched
(or the new ones whole), and the same command must end byte-identical to an uninterrupted run,
clock fields aside (as benchmarks/output_snapshot.py compares them).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from transnli.cli import main
from transnli.cli.evaluate import evaluate

SEED = int(os.environ.get("TRANSNLI_FAULT_SEED") or random.randrange(1 << 30))
# run_info.json's keys that differ between two runs of one command: clock readings (as
# benchmarks/output_snapshot.py drops them), the command line (its --out, or pytest's argv) and
# what the label cache served
VOLATILE_KEYS = frozenset({"date_utc", "seconds", "command_line", "from_cache", "computed"})

TRIPLES = [
    ("t1", "the man is sleeping.", "the man is happy.", "the man is sad."),
    ("t2", "the man is sleeping.", "the dog is big.", "the dog is small."),
    ("t3", "a child is running outside.", "a child is outside.", "a child is inside."),
    ("t4", "the cat is eating.", "the cat is old.", "the cat is young."),
    ("t5", "the woman is up.", "the door is open.", "the door is closed."),
]
LABELS = ("entailment", "neutral", "contradiction")


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    """Never touch the user's ~/.cache/transnli from a test."""
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def triples(tmp_path) -> Path:
    return write_jsonl(
        tmp_path / "triples.jsonl",
        [
            {"id": i, "premise": p, "hypothesis": h, "modified_hypothesis": h2, "dataset": "toy"}
            for i, p, h, h2 in TRIPLES
        ],
    )


def labels_file(path: Path, shift: int) -> Path:
    """Every pair the triples can need, labelled by a fixed rule (`shift` makes another model)."""
    pairs = []
    for _, p, h, h2 in TRIPLES:
        pairs += [(p, h), (h, h2), (h2, h), (p, h2)]
    rows = [
        {"premise": a, "hypothesis": b, "label": LABELS[(len(a) + len(b) + shift) % 3]}
        for a, b in dict.fromkeys(pairs)
    ]
    return write_jsonl(path, rows)


@pytest.fixture
def labels(tmp_path) -> tuple[Path, Path]:
    return labels_file(tmp_path / "labels-a.jsonl", 0), labels_file(tmp_path / "labels-b.jsonl", 1)


def invoke(*args):
    return CliRunner().invoke(evaluate, [str(a) for a in args])


def comparable(path: Path) -> bytes:
    """A file's bytes, run_info.json's volatile keys set aside."""
    if path.name != "run_info.json":
        return path.read_bytes()

    def scrub(value):
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items() if k not in VOLATILE_KEYS}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    return json.dumps(scrub(json.loads(path.read_text(encoding="utf-8"))), sort_keys=True).encode()


def snapshot(out: Path) -> dict[str, bytes | None]:
    """Every file and folder under `out` (relative path -> comparable bytes; None: a folder)."""
    return {
        p.relative_to(out).as_posix(): comparable(p) if p.is_file() else None
        for p in sorted(out.rglob("*"))
    }


def partial_files(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith(".partial"))


def one_line_error(result, *parts: str) -> str:
    assert result.exit_code not in (0, None), result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("Error:")]
    for part in parts:
        assert part in line, result.output
    return line


# -- processes ---------------------------------------------------------------------------------
# The audit hook that counts the file-system events under OUT and SIGKILLs its process at the
# KILL_AT-th (0: never). A child `transnli evaluate` (CHILD) carries it; count_events runs it in
# this process too, to count the events of an uninterrupted run.
HOOK = textwrap.dedent(
    """
    import os, signal
    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT

    def fault_hook(out, kill_at, seen):
        out = os.path.realpath(out)

        def under_out(path):
            try:
                path = os.fsdecode(path)
            except TypeError:
                return False
            return os.path.realpath(path).startswith(out)

        def hook(event, args):
            if event == "open":
                path, mode, flags = args
                if isinstance(mode, str):
                    writes = any(c in mode for c in "wax+")
                else:
                    writes = bool((flags or 0) & WRITE_FLAGS)
                hit = writes and under_out(path)
            elif event in ("os.rename", "os.remove", "os.rmdir", "os.mkdir", "shutil.rmtree"):
                hit = under_out(args[0])
            else:
                return
            if hit:
                seen.append(f"{event} {args[0]}")
                if len(seen) == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)

        return hook
    """
)
# The child: the hook armed from FAULT_OUT and FAULT_KILL_AT, then the command line.
CHILD = HOOK + textwrap.dedent(
    """
    import sys
    sys.addaudithook(fault_hook(os.environ["FAULT_OUT"], int(os.environ["FAULT_KILL_AT"]), []))
    # Ctrl-C's default, as in a terminal: a test run started in the background (a shell's `&`)
    # hands its children SIGINT ignored, and Python keeps an ignored SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from transnli.cli import main
    main()
    """
)


def start(out: Path, args, kill_at: int = 0) -> subprocess.Popen:
    env = {**os.environ, "FAULT_OUT": str(out), "FAULT_KILL_AT": str(kill_at)}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, "evaluate", *map(str, args), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, err


def wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 240) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the run ended before {what}: {proc.stderr.read()}"
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.005)


# -- the lock ----------------------------------------------------------------------------------
def test_a_second_run_into_a_busy_folder_is_refused_naming_the_pid(triples, labels, tmp_path):
    labels_a, labels_b = labels
    out = tmp_path / "out"
    common = ["--no-cache", "-q"]
    proc = start(out, [triples, "-m", f"precomputed:{labels_a}", *common])
    try:
        # the first run is writing its rows: freeze it there
        wait_for(lambda: any(out.rglob(".partial-samples*")), proc, "the first run's rows")
        os.kill(proc.pid, signal.SIGSTOP)
        before = snapshot(out)
        busy = invoke(
            triples, "-m", f"precomputed:{labels_b}", "--out", out, "--overwrite", *common
        )
        one_line_error(busy, f"{out} is in use by PID {proc.pid}", "another transnli run")
        assert snapshot(out) == before  # the refused run touched nothing
        os.kill(proc.pid, signal.SIGCONT)
        rc, err = finish(proc)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert rc == 0, err
    reference = tmp_path / "reference"
    assert (
        invoke(triples, "-m", f"precomputed:{labels_a}", "--out", reference, *common).exit_code == 0
    )
    assert snapshot(out) == snapshot(reference)
    assert not (out / "evaluate.lock").exists()  # a run that ends leaves no lock file


# -- kill -9 during the final write ------------------------------------------------------------
_COUNTING: dict = {"hook": None}  # the armed HOOK of count_events; None: disarmed


def _counting(event, args):
    hook = _COUNTING["hook"]
    if hook is not None:
        hook(event, args)


def count_events(out: Path, args) -> list[str]:
    """The file-system events under `out` of an uninterrupted run of the child's command, seen by
    the child's hook run in this process (without an interpreter, torch and the model to load for
    it); an audit hook cannot be removed, so it is disarmed after the run."""
    namespace: dict = {}
    exec(HOOK, namespace)
    seen: list[str] = []
    if not _COUNTING.get("installed"):
        sys.addaudithook(_counting)
        _COUNTING["installed"] = True
    _COUNTING["hook"] = namespace["fault_hook"](str(out), 0, seen)
    try:
        result = CliRunner().invoke(main, ["evaluate", *map(str, args), "--out", str(out)])
    finally:
        _COUNTING["hook"] = None
    assert result.exit_code == 0, result.output
    return seen


@pytest.mark.parametrize("kind", ["precomputed", "hf"])
def test_kill_9_during_the_final_write_loses_nothing_and_the_rerun_is_identical(
    kind, triples, labels, tiny_nli_model_dir, tmp_path
):
    """The folder holds a finished evaluation A; a run of evaluation B (--overwrite) is killed at
    random points. Each time the folder holds A untouched or (past the commit point) B, and the
    same command then ends byte-identical to an uninterrupted B."""
    labels_a, labels_b = labels
    cache = ["--cache-dir", tmp_path / "cache", "-q", "--no-plots"]
    model_b = f"hf:{tiny_nli_model_dir}" if kind == "hf" else f"precomputed:{labels_b}"
    first = [triples, "-m", f"precomputed:{labels_a}", *cache]
    second = [triples, "-m", model_b, "--overwrite", "--device", "cpu", *cache]
    reference_a, reference_b = tmp_path / "ref-a", tmp_path / "ref-b"
    assert invoke(*first, "--out", reference_a).exit_code == 0
    events = count_events(reference_b, second)
    finished_a, finished_b = snapshot(reference_a), snapshot(reference_b)
    rng = random.Random(SEED)
    kills = 4 if kind == "precomputed" else 2
    for round_, kill_at in enumerate(sorted(rng.sample(range(1, len(events) + 1), kills))):
        where = f"kill at event {kill_at}/{len(events)}: {events[kill_at - 1]} (seed {SEED})"
        out = tmp_path / f"out-{round_}"
        assert invoke(*first, "--out", out).exit_code == 0
        rc, err = finish(start(out, second, kill_at=kill_at))
        assert rc == -signal.SIGKILL, f"{where}: {err}"
        outputs = {k: v for k, v in snapshot(out).items() if not k.startswith(".partial")}
        outputs.pop("evaluate.lock", None)
        if not (out / ".partial-ready").exists():
            assert outputs == finished_a, f"{where}: the earlier outputs were touched"
        rerun = invoke(*second, "--out", out)
        assert rerun.exit_code == 0, f"{where}: {rerun.output}"
        assert snapshot(out) == finished_b, where
        assert partial_files(out) == [], where


def worker_processes(parent: int) -> list[int]:
    """The plot worker processes of `parent` (its spawned children)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and b"spawn_main" in cmdline:
            found.append(int(stat.parent.name))
    return found


def test_kill_9_while_the_plot_worker_renders_leaves_no_worker_writing_and_reruns_identical(
    triples, labels, tmp_path
):
    labels_a, _ = labels
    out, reference = tmp_path / "out", tmp_path / "reference"
    args = [triples, "-m", f"precomputed:{labels_a}", "--no-cache", "-q"]
    proc = start(out, args)
    try:
        # plots/ is made in the staging folder just before the worker gets its figures
        wait_for(lambda: (out / ".partial-outputs" / "plots").is_dir(), proc, "the figures")
        workers = worker_processes(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the main process only, as the OOM killer would
        proc.communicate()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert workers, "no plot worker was running"
    end = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < end:
        time.sleep(0.05)
    left = [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    assert not left, f"plot worker {left} still runs after its main process was killed"
    assert invoke(*args, "--out", out).exit_code == 0
    assert invoke(*args, "--out", reference).exit_code == 0
    assert snapshot(out) == snapshot(reference)


# -- a full disk -------------------------------------------------------------------------------
_FULL = {"pattern": None}  # armed by the test: refuse opening for writing any path containing it


def _full_disk_hook(event, args):
    pattern = _FULL["pattern"]
    if pattern is None or event != "open":
        return
    path, mode, flags = args
    writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & 0o3)
    if writes and pattern in os.fsdecode(path):
        # as the kernel reports it: no file name in the error
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def full_disk():
    """full_disk(pattern): from now on, opening a file whose path contains `pattern` for writing
    fails with ENOSPC (an audit hook: cannot be removed, so it is disarmed instead)."""
    if not _FULL.get("installed"):
        sys.addaudithook(_full_disk_hook)
        _FULL["installed"] = True

    def arm(pattern: str | None) -> None:
        _FULL["pattern"] = pattern

    yield arm
    _FULL["pattern"] = None


def refuse_rows(self, rows):
    """RowsWriter.write on a full disk: a buffered write of a row fails (no file name)."""
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize(
    "pattern",
    [
        "samples.jsonl",
        "a row",
        "summary.json",
        "table4_rules.csv",
        "run_info.json",
        "comparison.json",
        "comparison.csv",
    ],
)
def test_a_full_disk_names_the_path_and_keeps_the_earlier_outputs(
    pattern, triples, labels, tmp_path, full_disk, monkeypatch
):
    labels_a, labels_b = labels
    out = tmp_path / "out"
    common = ["--no-cache", "-q", "--no-plots", "--out", out]
    assert invoke(triples, "-m", f"precomputed:{labels_a}", *common).exit_code == 0
    before = snapshot(out)
    second = [triples, "-m", f"precomputed:{labels_b}", "--overwrite", *common]
    if pattern.startswith("comparison"):  # written with two or more models
        second[3:3] = ["-m", f"precomputed:{labels_a}"]
    with monkeypatch.context() as m:
        if pattern == "a row":  # while labelling, not opening a file
            from transnli.evaluator.report import RowsWriter

            m.setattr(RowsWriter, "write", refuse_rows)
        else:
            full_disk(pattern)
        result = invoke(*second)
        full_disk(None)
    line = one_line_error(result, "No space left on device", "the disk is full", str(out))
    assert "cannot write" in line
    assert ".partial" not in line  # EVAL, not the staging folder
    assert partial_files(out) == [] and not (out / "evaluate.lock").exists()
    assert snapshot(out) == before
    again = invoke(*second)
    assert again.exit_code == 0, again.output
    reference = tmp_path / "reference"
    assert invoke(*second[:-1], reference).exit_code == 0
    assert snapshot(out) == snapshot(reference)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("buffering", [1, -1], ids=["at-the-first-row", "at-close"])
def test_enospc_at_the_write_of_a_row_leaves_no_partial_outputs_and_no_lock(
    buffering, triples, labels, tmp_path, monkeypatch
):
    """The kernel's own ENOSPC, at write() and flush() rather than at open(): the rows go to
    /dev/full. Line-buffered, the first row fails and the rows still buffered cannot be flushed
    when the run gives up (the close that drops them must not fail again); fully buffered, the
    close that completes the file fails."""
    from transnli.evaluator import report

    labels_a, labels_b = labels
    out = tmp_path / "out"
    common = ["--no-cache", "-q", "--no-plots", "--out", out]
    assert invoke(triples, "-m", f"precomputed:{labels_a}", *common).exit_code == 0
    before = snapshot(out)

    def full_open(file, mode="r", *args, **kwargs):
        if ".partial-samples" in os.fspath(file):
            kwargs["buffering"] = buffering
            return open("/dev/full", mode, *args, **kwargs)
        return open(file, mode, *args, **kwargs)

    second = [triples, "-m", f"precomputed:{labels_b}", "-m", f"precomputed:{labels_a}"]
    second += ["--overwrite", *common]
    with monkeypatch.context() as m:
        m.setattr(report, "open", full_open, raising=False)
        result = invoke(*second)
    line = one_line_error(result, "No space left on device", "the disk is full", str(out))
    assert line.startswith(f"Error: cannot write {out}")
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []
    assert not (out / "evaluate.lock").exists()
    assert snapshot(out) == before
    assert invoke(*second).exit_code == 0  # the disk has room again: the same command works


def test_stale_partial_files_of_a_killed_run_are_cleared_and_not_refused(triples, labels, tmp_path):
    labels_a, _ = labels
    out, reference = tmp_path / "out", tmp_path / "reference"
    args = [triples, "-m", f"precomputed:{labels_a}", "--no-cache", "-q", "--no-plots"]
    assert invoke(*args, "--out", reference).exit_code == 0
    out.mkdir()
    for name in (".partial-samples.jsonl", ".partial-predictions.jsonl", "evaluate.lock"):
        (out / name).write_text("half a row")
    (out / ".partial-outputs").mkdir()
    (out / ".partial-outputs" / "summary.json").write_text("{")
    result = invoke(*args, "--out", out)
    assert result.exit_code == 0, result.output
    assert snapshot(out) == snapshot(reference)


# -- Ctrl-C ------------------------------------------------------------------------------------
@pytest.mark.parametrize("when", ["labelling", "figures"])
def test_ctrl_c_while_the_plot_worker_runs_exits_130_with_the_resume_hint(
    when, triples, labels, tmp_path
):
    """Ctrl-C while the worker starts (the rows are being written) or renders the figures: exit
    130 with the hint, no traceback from either process, the earlier outputs untouched."""
    labels_a, _ = labels
    out = tmp_path / "out"
    args = [triples, "-m", f"precomputed:{labels_a}", "--no-cache", "-q"]
    assert invoke(*args, "--out", out).exit_code == 0
    before = snapshot(out)
    proc = start(out, args)
    try:
        if when == "labelling":  # the worker is started before the rows are
            wait_for(lambda: any(out.rglob(".partial-samples*")), proc, "the run's rows")
        else:  # plots/ is made in the staging folder just before the worker gets its figures
            wait_for(lambda: (out / ".partial-outputs" / "plots").is_dir(), proc, "the figures")
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        rc, err = finish(proc, timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert rc == 130, err
    assert "run the same command again to resume" in err
    assert "Traceback" not in err and "Aborted" not in err, err
    assert snapshot(out) == before


# -- the lock itself ---------------------------------------------------------------------------
class Busy(Exception):
    pass


def test_the_evaluation_lock_file_goes_with_its_run_and_a_late_opener_cannot_take_a_stale_one(
    tmp_path, monkeypatch
):
    from transnli.common.folder import FolderLock
    from transnli.generator.output import RunLock

    first = FolderLock(tmp_path, "evaluate.lock", Busy, remove=True)
    first.acquire()
    with pytest.raises(Busy, match=f"is in use by PID {os.getpid()} "):
        FolderLock(tmp_path, "evaluate.lock", Busy, remove=True).acquire()
    # a second process opened the file just before the holder removed it on release
    stale = os.open(tmp_path / "evaluate.lock", os.O_RDWR)
    first.release()
    assert not (tmp_path / "evaluate.lock").exists()
    real_open, handed = os.open, []

    def open_the_stale_file_first(path, *args, **kwargs):
        if not handed:
            handed.append(path)
            return stale
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_the_stale_file_first)
    late = FolderLock(tmp_path, "evaluate.lock", Busy, remove=True)
    late.acquire()
    monkeypatch.undo()
    assert handed and (tmp_path / "evaluate.lock").read_text() == f"{os.getpid()}\n"
    with pytest.raises(Busy):  # the lock it holds is the one at the path
        FolderLock(tmp_path, "evaluate.lock", Busy).acquire()
    late.release()
    # generate's run folder keeps its run.lock, as before
    run_lock = RunLock(tmp_path)
    run_lock.acquire()
    run_lock.release()
    assert (tmp_path / "run.lock").exists()
