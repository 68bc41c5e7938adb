# ==== checks fixtures (generator/checks): fake LanguageTool server, tiny CoLA models ==========
# Used by tests/test_grammar.py and tests/test_acceptability.py; usable by CLI tests too
# (`--languagetool-url languagetool_fake_server.url`, `--cola-model tiny_cola_model_dir`).
import json as _checks_json
import os as _env_os
import shutil as _env_shutil
import tempfile as _env_tempfile
import threading as _checks_threading
import urllib.parse as _checks_urlparse
from http.server import BaseHTTPRequestHandler as _ChecksHandler
from http.server import ThreadingHTTPServer as _ChecksHTTPServer
from pathlib import Path as _EnvPath

import pytest as _checks_pytest


class FakeLanguageTool:
    """A LanguageTool server in a thread, speaking enough of the /v2 HTTP API (GET /v2/languages,
    form-encoded POST /v2/check) for the languagetool grammar backend. Script it with
    ``add_rule(trigger, rule_id)``: every occurrence of ``trigger`` in a checked text becomes a
    match. ``requests`` records the form data of every /v2/check call."""

    def __init__(self, languages=("en-US", "en-GB", "de-DE"), honor_disabled=True):
        self.rules = []  # (trigger, rule_id, message, category)
        self.requests = []
        self.languages = list(languages)
        self.honor_disabled = honor_disabled
        fake = self

        class Handler(_ChecksHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _send(self, status, payload):
                body = _checks_json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.rstrip("/") == "/v2/languages":
                    self._send(
                        200,
                        [
                            {"name": c, "code": c.split("-")[0], "longCode": c}
                            for c in fake.languages
                        ],
                    )
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):
                if self.path.rstrip("/") != "/v2/check":
                    self._send(404, {"error": "not found"})
                    return
                length = int(self.headers.get("Content-Length", 0))
                form = _checks_urlparse.parse_qs(
                    self.rfile.read(length).decode(), keep_blank_values=True
                )
                data = {k: v[0] for k, v in form.items()}
                if "text" not in data or "language" not in data:
                    self._send(400, {"error": "text and language are required"})
                    return
                fake.requests.append(data)
                self._send(200, fake.reply(data))

        self._server = _ChecksHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = _checks_threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def add_rule(self, trigger, rule_id, message=None, category="GRAMMAR"):
        self.rules.append((trigger, rule_id, message or f"Possible error: {rule_id}", category))

    def checked_texts(self):
        return [r["text"] for r in self.requests]

    def reply(self, data):
        text = data["text"]
        disabled = (
            set(filter(None, data.get("disabledRules", "").split(",")))
            if self.honor_disabled
            else set()
        )
        matches = []
        for trigger, rule_id, message, category in self.rules:
            if rule_id in disabled:
                continue
            start = text.find(trigger)
            while start >= 0:
                matches.append(
                    {
                        "message": message,
                        "shortMessage": "",
                        "replacements": [{"value": trigger.upper()}],
                        "offset": start,
                        "length": len(trigger),
                        "context": {"text": text, "offset": start, "length": len(trigger)},
                        "sentence": text,
                        "rule": {
                            "id": rule_id,
                            "description": message,
                            "issueType": "grammar",
                            "category": {"id": category, "name": category.title()},
                        },
                    }
                )
                start = text.find(trigger, start + 1)
        matches.sort(key=lambda m: m["offset"])
        return {
            "software": {
                "name": "LanguageTool",
                "version": "6.6-fake",
                "buildDate": "2026-01-01",
                "apiVersion": 1,
                "status": "",
            },
            "language": {
                "name": data["language"],
                "code": data["language"],
                "detectedLanguage": {"name": data["language"], "code": data["language"]},
            },
            "matches": matches,
        }

    def close(self):
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@_checks_pytest.fixture
def languagetool_fake_server():
    server = FakeLanguageTool()
    yield server
    server.close()


def _build_tiny_cola_model(
    folder, *, bias=(-10.0, 10.0), id2label=None, zero_classifier=True, seed=0
):
    """A small BertForSequenceClassification saved with its WordPiece tokenizer.
    zero_classifier: the head's weights are zero, so P(class) = softmax(bias) for every input;
    otherwise weights are random and large, so the score depends on the sentence."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    words = [
        "the",
        "a",
        "an",
        "he",
        "she",
        "it",
        "they",
        "is",
        "are",
        "was",
        "goes",
        "go",
        "went",
        "home",
        "man",
        "woman",
        "cat",
        "dog",
        "sat",
        "on",
        "mat",
        "happy",
        "unhappy",
        "sad",
        "good",
        "bad",
        "big",
        "small",
        "tall",
        "short",
        "old",
        "young",
        "fast",
        "slow",
        "open",
        "closed",
        "##s",
        "##ed",
        "##ing",
        ".",
        ",",
        "!",
        "?",
    ]
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = BertTokenizer(str(vocab), do_lower_case=True)
    labels = id2label or {0: "LABEL_0", 1: "LABEL_1"}
    config = BertConfig(
        vocab_size=5 + len(words),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
        num_labels=len(bias),
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
        # BERT's default init (0.02) gives nearly the same output for every sentence.
        initializer_range=0.02 if zero_classifier else 1.0,
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config).eval()
    with torch.no_grad():
        if zero_classifier:
            model.classifier.weight.zero_()
        else:
            model.classifier.weight.normal_(0.0, 1.0)
        model.classifier.bias.copy_(torch.tensor(bias))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@_checks_pytest.fixture(scope="session")
def tiny_cola_model_factory(tmp_path_factory):
    """make(name, **kwargs) -> folder of a tiny CoLA-style classifier (built once per name)."""
    built = {}

    def make(name="acceptable", **kwargs):
        if name not in built:
            built[name] = _build_tiny_cola_model(
                tmp_path_factory.mktemp("tiny_cola") / name, **kwargs
            )
        return built[name]

    return make


@_checks_pytest.fixture(scope="session")
def tiny_cola_model_dir(tiny_cola_model_factory):
    """A tiny classifier that calls every sentence acceptable (label 1, P ~ 1)."""
    return tiny_cola_model_factory("acceptable", bias=(-10.0, 10.0))


# ==== end of checks fixtures ====================================================================


# ==== evaluator fixtures (evaluator/backends/hf): tiny NLI classifiers ===========================
# Used by tests/test_hf_backend.py, tests/test_precomputed_cache.py, tests/test_evaluate_cli.py.
# Each is a real transformers checkpoint folder (config + safetensors + tokenizer), loaded through
# the same code path as a real NLI model.
ROBERTA_MNLI_LABELS = {
    0: "CONTRADICTION",
    1: "NEUTRAL",
    2: "ENTAILMENT",
}  # roberta/bart/deberta-large-mnli
MODERNBERT_NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}  # ModernBERT-base-nli
GENERIC_LABELS = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
NLI_TEST_WORDS = (
    "a",
    "the",
    "man",
    "woman",
    "dog",
    "cat",
    "child",
    "people",
    "is",
    "are",
    "was",
    "not",
    "sleeping",
    "running",
    "eating",
    "happy",
    "sad",
    "big",
    "small",
    "old",
    "young",
    "inside",
    "outside",
    "open",
    "closed",
    "up",
    "down",
    "on",
    "in",
    ".",
    ",",
)


def build_tiny_nli_model(folder, *, id2label=None, force=None, arch="bert", seed=0, bias_size=20.0):
    """Save a small sequence classifier (hidden 32, 2 layers) with a WordPiece tokenizer.

    force: a class index the model always predicts (classifier weights zeroed, bias +bias_size on
    that index), so a test knows the answer and can check the index -> name mapping; None keeps
    random weights (outputs depend on the input). arch: "bert" or "modernbert"."""
    import torch
    from transformers import BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    labels = dict(id2label or ROBERTA_MNLI_LABELS)
    vocab = {
        w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *NLI_TEST_WORDS])
    }
    tokenizer = BertTokenizer(vocab=vocab, do_lower_case=True)
    common = dict(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=48,
        max_position_embeddings=64,
        num_labels=len(labels),
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    if arch == "modernbert":
        from transformers import ModernBertConfig, ModernBertForSequenceClassification

        config = ModernBertConfig(
            **common,
            bos_token_id=2,
            eos_token_id=3,
            cls_token_id=2,
            sep_token_id=3,
            global_attn_every_n_layers=1,
            local_attention=16,
        )
        model = ModernBertForSequenceClassification(config)
    else:
        from transformers import BertConfig, BertForSequenceClassification

        model = BertForSequenceClassification(BertConfig(**common))
    model.eval()
    if force is not None:
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.zero_()
            model.classifier.bias[force] = bias_size
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@_checks_pytest.fixture(scope="session")
def tiny_nli_model_factory(tmp_path_factory):
    """make(name, **build_tiny_nli_model kwargs) -> folder, built once per name per session."""
    built = {}

    def make(name, **kwargs):
        if name not in built:
            built[name] = build_tiny_nli_model(tmp_path_factory.mktemp("tiny_nli") / name, **kwargs)
        return built[name]

    return make


@_checks_pytest.fixture(scope="session")
def tiny_nli_model_builder():
    """build_tiny_nli_model itself, for tests that rewrite a model folder in place."""
    return build_tiny_nli_model


@_checks_pytest.fixture(scope="session")
def tiny_nli_model_dir(tiny_nli_model_factory):
    """roberta-large-mnli label convention (0 CONTRADICTION, 1 NEUTRAL, 2 ENTAILMENT), random
    weights: labels depend on the input."""
    return tiny_nli_model_factory("roberta_style_random", id2label=ROBERTA_MNLI_LABELS)


@_checks_pytest.fixture(scope="session")
def tiny_nli_entailing_model_dir(tiny_nli_model_factory):
    """roberta-large-mnli convention, forced to index 2 (ENTAILMENT) for every pair."""
    return tiny_nli_model_factory("roberta_style_entailing", id2label=ROBERTA_MNLI_LABELS, force=2)


# ==== end of evaluator fixtures =================================================================


@_checks_pytest.fixture(scope="session")
def link_grammar_available():
    """Skip when the link-grammar C library is not installed (scripts/setup.sh installs it)."""
    from transnli.generator.checks.linkgrammar_c import LinkGrammarUnavailable, load_library

    try:
        load_library()
    except LinkGrammarUnavailable as e:
        _checks_pytest.skip(str(e))


@_checks_pytest.fixture(scope="session")
def tagger():
    """spaCy's small English pipeline behind transnli's tagger (the filter tests parse with it)."""
    from transnli.generator.tagging import SpacyTagger

    return SpacyTagger()


@_checks_pytest.fixture(scope="session", autouse=True)
def preset_without_language_model():
    """A run that names no preset uses `fast` here: the default preset loads Gemma 3 270M (seconds
    to load, a few sentences/s), which only the tests of the language model and of the default
    preset itself should pay for; they name it (`--preset default`). Session-wide, so that
    module-scoped fixtures that generate see it too."""
    with _checks_pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRANSNLI_PRESET", "fast")
        yield


# ==== the environment every test starts from ====================================================
# What the suite checks must not depend on the shell it runs in. huggingface_hub, datasets and
# transformers read HF_HUB_OFFLINE, HF_TOKEN, HF_HOME, HF_ENDPOINT ... once, when imported, so they
# are cleared in pytest_configure, before any test module imports them; HF_HOME is a folder of the
# session's own (no saved login, no hub cache of the user's). transnli's cache ($TRANSNLI_CACHE) is
# a fresh folder for every test (and one for the module- and session-scoped fixtures). It links to
# the resources scripts/setup.sh provisions into the user's cache, so that no test rebuilds them:
# the GloVe vectors and the converted language model (the tests that load the default Gemma use
# it); a test must never write into these links. The WordNet antonym index is built once per
# session, by the first process that needs it, into a folder every test's cache links to. Nothing
# else of the user's cache is read or written. A test that needs another environment sets it with
# monkeypatch.
_CLEARED_PREFIXES = ("HF_", "HUGGINGFACE_", "HUGGING_FACE_", "TRANSFORMERS_", "OPENAI_")
_CLEARED = ("TRANSNLI_CACHE", "TRANSNLI_LLM_CACHE", "TRANSNLI_LLM_BASE_URL")
_PROVISIONED = ("vectors", "lm")  # sub-folders of transnli's cache that scripts/setup.sh fills
_SESSION_BUILT = "wordnet"  # ... and the one the session's first generation run fills
# The session's cache, handed on to the pytest-xdist workers, which start after pytest_configure
# has replaced $TRANSNLI_CACHE.
_SESSION_ENV = "TRANSNLI_TESTS_SESSION_CACHE"
_session_folders = []


def _link_entries(source, target):
    target.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        for entry in source.iterdir():
            if not entry.name.endswith(".partial"):
                (target / entry.name).symlink_to(entry.resolve())


def make_test_cache(folder):
    """`folder` as a transnli cache of its own, with links to the session's resources."""
    session = _EnvPath(_env_os.environ[_SESSION_ENV])
    folder = _EnvPath(folder)
    for name in _PROVISIONED:
        _link_entries(session / name, folder / name)
    (folder / _SESSION_BUILT).symlink_to(session / _SESSION_BUILT, target_is_directory=True)
    return folder


def pytest_configure(config):
    if _SESSION_ENV not in _env_os.environ:  # not a pytest-xdist worker: the session starts here
        from transnli.resources.provision import cache_dir

        provisioned = cache_dir()  # the user's $TRANSNLI_CACHE, else the default
        root = _EnvPath(_env_tempfile.mkdtemp(prefix="transnli-tests-"))
        _session_folders.append(root)
        for name in (*_PROVISIONED, _SESSION_BUILT):
            _link_entries(provisioned / name, root / "cache" / name)
        _env_os.environ[_SESSION_ENV] = str(root / "cache")
        _env_os.environ["HF_HOME"] = str(root / "hf-home")
    for name in list(_env_os.environ):
        if (name.startswith(_CLEARED_PREFIXES) and name != "HF_HOME") or name in _CLEARED:
            del _env_os.environ[name]
    # One thread for torch's (OpenMP) operators, in this process and in every process it starts:
    # the tests' models are tiny, and with pytest-xdist's workers (or anything else) on the other
    # cores, OpenMP threads that spin waiting for a core made a tiny BERT's 132 one-pair forwards
    # take 34 s instead of 1.5 s.
    _env_os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    # for the module- and session-scoped fixtures: one folder for each process (xdist's workers)
    session = _EnvPath(_env_os.environ[_SESSION_ENV])
    own = session.with_name(f"cache-{_env_os.getpid()}")
    _env_os.environ["TRANSNLI_CACHE"] = str(make_test_cache(own))


def pytest_unconfigure(config):
    while _session_folders:
        _env_shutil.rmtree(_session_folders.pop(), ignore_errors=True)


@_checks_pytest.fixture(autouse=True)
def _fresh_transnli_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(make_test_cache(tmp_path_factory.mktemp("cache"))))


def _logger_state(names=("transnli", "transnli.notice")) -> dict:
    import logging

    return {n: (logging.getLogger(n).level, list(logging.getLogger(n).handlers)) for n in names}


_PRISTINE_LOGGERS = _logger_state()  # as the package leaves them, before any command ran


@_checks_pytest.fixture(autouse=True)
def _transnli_loggers_as_they_were():
    """A command run in-process (CliRunner; a module fixture too) sets the "transnli" loggers'
    levels and handlers for its process (transnli.cli.options.setup_logging): each test starts
    from the loggers as the package leaves them, whichever tests or fixtures ran before it on its
    worker."""
    import logging

    def restore():
        for name, (level, handlers) in _PRISTINE_LOGGERS.items():
            logger = logging.getLogger(name)
            logger.setLevel(level)
            logger.handlers[:] = handlers

    restore()
    yield
    restore()


@_checks_pytest.fixture(autouse=True)
def _no_plot_worker_left_on():
    """`transnli`'s command group turns the plot worker on for its process
    (transnli.evaluator.plot_worker.use_plot_worker), so a test that ran a command through `main`
    in-process left it on for every later test of its pytest worker: each later evaluation that
    draws figures, through the Python API or a subcommand invoked directly, then spawned a
    process of its own (an interpreter, matplotlib, the PDF fonts). Each test starts from the
    package's default, whichever tests ran before it; `main` still turns it on for its own run."""
    from transnli.evaluator.plot_worker import use_plot_worker

    use_plot_worker(False)
    yield
    use_plot_worker(False)


# ==== end of the environment ====================================================================


# ==== the order in which pytest-xdist hands out test files =======================================
# scripts/test.sh runs each test file on one worker (--dist loadfile). Left to itself, xdist hands
# out the files with the most tests first, so files of a few slow tests (worker processes, whole
# evaluations: tests/test_lm_choice.py, test_run_integrity.py ...) came last, and one worker ran
# them while the others had finished. On a worker, the files are ordered slowest first instead
# (longest processing time first), by tests/file_seconds.json: each file's seconds in one full
# run (setup, call and teardown of its tests; only the ratios matter). A file it does not list
# counts as 0 s and goes last; test.sh passes --no-loadscope-reorder so that xdist keeps this
# order. The tests in a file keep theirs, and a run without -n keeps collection order. To
# refresh the list: TRANSNLI_TESTS_WRITE_FILE_SECONDS=1 bash scripts/test.sh
_FILE_SECONDS = _EnvPath(__file__).with_name("file_seconds.json")
_WRITE_FILE_SECONDS = "TRANSNLI_TESTS_WRITE_FILE_SECONDS"
_measured_seconds: dict[str, float] = {}


def pytest_collection_modifyitems(config, items):
    if not hasattr(config, "workerinput"):  # not a pytest-xdist worker: collection order
        return
    seconds = _checks_json.loads(_FILE_SECONDS.read_text(encoding="utf-8"))
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::")[0], 0.0))  # stable


def pytest_runtest_logreport(report):
    if _env_os.environ.get(_WRITE_FILE_SECONDS):
        name = report.nodeid.split("::")[0]
        _measured_seconds[name] = _measured_seconds.get(name, 0.0) + report.duration


def pytest_sessionfinish(session):
    if _env_os.environ.get(_WRITE_FILE_SECONDS) and not hasattr(session.config, "workerinput"):
        ranked = sorted(_measured_seconds.items(), key=lambda kv: (-kv[1], kv[0]))
        text = _checks_json.dumps({k: round(v, 1) for k, v in ranked}, indent=1)
        _FILE_SECONDS.write_text(text + "\n", encoding="utf-8")


# ==== end of the order ===========================================================================
