"""A non-editable install runs: the wheel, installed into a fresh virtual environment, gives a
`transnli` that runs doctor, a generation and the review page's guideline link, with what the
install itself provides (WordNet is built for nltk on first use; no scripts/setup.sh, no source
tree). The environment reuses this one's dependencies (a .pth to its site folders, `--no-deps`),
so nothing is downloaded."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import urllib.request
from pathlib import Path

import pytest
from ctrl_c import sigint_as_in_a_terminal

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
# What a wheel is built from: the project's files without the repository's other folders.
LEFT_OUT = shutil.ignore_patterns(
    ".*",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "tests",
    "benchmarks",
    "datasets_out",
    "runs",
)


def _site_folders() -> list[str]:
    """Where this environment's packages are: its own site folder and those its .pth files add
    (a light venv that reuses another's packages, as /work/wt.sh makes them)."""
    own = sysconfig.get_paths()["purelib"]
    return [own] + [p for p in sys.path if p.endswith("site-packages") and p != own]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv folder, environment for its commands) with the built wheel installed."""
    tmp = tmp_path_factory.mktemp("install")
    shutil.copytree(ROOT, tmp / "src", ignore=LEFT_OUT)  # the build writes build/ beside its input
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", tmp / "wheel"]
        + [tmp / "src"],
        check=True,
        capture_output=True,
    )
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "zz_dependencies.pth").write_text("\n".join(_site_folders()) + "\n")
    wheel = next((tmp / "wheel").glob("transnli-*.whl"))
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel],
        check=True,
        capture_output=True,
    )
    # A home without nltk_data and a cache of its own with only the vectors of this session's
    # (converting them again is 15 s that this test does not need to measure).
    cache = tmp / "cache"
    (cache / "vectors").mkdir(parents=True)
    for entry in (Path(os.environ["TRANSNLI_CACHE"]) / "vectors").iterdir():
        (cache / "vectors" / entry.name).symlink_to(entry.resolve())
    env = {k: v for k, v in os.environ.items() if k not in ("NLTK_DATA", "TRANSNLI_PRESET")}
    env.update(HOME=str(tmp / "home"), TRANSNLI_CACHE=str(cache), PYTHONDONTWRITEBYTECODE="1")
    (tmp / "home").mkdir()
    return venv, env


def _run(venv: Path, env: dict, *args: str, cwd: Path | None = None, **more_env: str):
    return subprocess.run(
        [venv / "bin" / "transnli", *args],
        env={**env, **more_env},
        cwd=cwd or venv.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_wheel_runs_doctor_generation_and_the_review_page(installed):
    venv, env = installed
    code = "import transnli, transnli.resources as r; print(transnli.__file__, r.resource_path())"
    where = subprocess.run(
        [venv / "bin" / "python", "-c", code],
        env=env,
        cwd=venv.parent,  # not the checkout: its transnli/ would come first on sys.path
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert where[0].startswith(str(venv)), where  # the wheel's code, not the checkout's
    sample = Path(where[1]) / "samples" / "snli_sample.jsonl"
    # The shipped pair judge is package data: its folder reads whole from the wheel.
    code = (
        "from transnli.generator.pair_judge import default_pair_judge_path as d, "
        "read_pair_judge_meta as r; m = r(d()); print(d() / 'head.safetensors')"
    )
    shipped = subprocess.run(
        [venv / "bin" / "python", "-c", code],
        env=env,
        cwd=venv.parent,
        capture_output=True,
        text=True,
    )
    assert shipped.returncode == 0, shipped.stderr
    assert shipped.stdout.strip().startswith(str(venv)), shipped.stdout

    # No WordNet anywhere: doctor says what to install and which command then runs (one that this
    # install has) and fails for the preset; generate refuses in one line and writes nothing.
    nowhere = str(venv.parent / "no-wordnet")
    doctor = _run(venv, env, "doctor", "--preset", "fast", WNSEARCHDIR=nowhere)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert "transnli setup" in doctor.stdout and "scripts/setup.sh" not in doctor.stdout
    assert "fast preset: cannot run: WordNet (nltk)" in doctor.stdout
    out = venv.parent / "run"
    refused = _run(venv, env, "generate", str(sample), "--preset", "fast", "--out", str(out),
                   WNSEARCHDIR=nowhere)  # fmt: skip
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.count("\n") == 1 and "`transnli setup`" in refused.stderr
    assert not out.exists()

    # With the system's WordNet: usable, built on first use.
    doctor = _run(venv, env, "doctor", "--preset", "fast")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "built from /usr/share/wordnet on first use" in doctor.stdout
    assert "fast preset: can run here" in doctor.stdout
    made = _run(venv, env, "generate", str(sample), "--preset", "fast", "--limit", "4",
                "--out", str(out))  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert (venv / "nltk_data" / "corpora" / "wordnet" / "lexnames").is_file()
    triples = (out / "triples.jsonl").read_text(encoding="utf-8").splitlines()
    assert triples and all(json.loads(t)["modified_hypothesis"] for t in triples)

    # The review page's guideline link answers with the guideline the wheel ships.
    server = subprocess.Popen(
        [venv / "bin" / "transnli", "review", str(out), "--port", "0", "--annotator", "t"],
        env=env,
        cwd=venv.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=sigint_as_in_a_terminal,
    )
    try:
        url = server.stdout.readline().split()[-1]  # "open http://127.0.0.1:PORT/?token=T"
        with urllib.request.urlopen(url, timeout=30) as page:
            assert 'id="guide-link"' in page.read().decode("utf-8")
        token = url.split("token=", 1)[1]
        link = url.split("?", 1)[0] + "judging.md?token=" + token  # as the page builds it
        with urllib.request.urlopen(link, timeout=30) as guide:
            assert guide.status == 200 and "# " in guide.read().decode("utf-8")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
