"""Test helpers for the LLM pipelines: a scripted OpenAI-compatible server (real HTTP in a thread)
and tiny local models built offline (T5 and GPT-2 with a word-level tokenizer).

FakeLLM answers POST {url}/chat/completions. What it answers is decided by `respond(prompt)`:
by default the replacement script below (keyed by the word in quotation marks) for replacement
prompts and `judge` (keyed by the hypothesis) for NLI prompts. A behaviour is one of
- a string: the reply text;
- ("status", code, times, then): answer HTTP `code` (with Retry-After: 0) the first `times` calls
  of this prompt, then behave as `then`;
- ("malformed",): HTTP 200 with a body that is not JSON;
- ("sleep", seconds, then): sleep, then behave as `then` (the client should time out first);
- ("drop", times, then): the first `times` calls get the status line, headers and half the body,
  then the connection closes (a server or proxy dying mid-reply); then behave as `then`;
- ("truncated", times, then): the first `times` calls get HTTP 200 whose (complete) body is JSON
  cut short, as a proxy that lost the rest sends it; then behave as `then`;
- ("html", code): HTTP `code` with an HTML error page;
- ("echo", code): HTTP `code` whose body echoes the request headers (Authorization included), as
  some misconfigured proxies do.

`closed_port_url()` is a base URL where nothing listens (connections are refused).
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

QUOTED = re.compile(r'^(.*)"([^"\s]+)"(.*)$', re.M)


def replacement(script: dict, prompt: str):
    """The behaviour for a paper-style prompt: the sentence is the line with the quoted word."""
    m = None
    for line in prompt.splitlines():
        m = QUOTED.match(line.strip())
        if m:
            break
    if m is None:
        return "I do not understand."
    before, word, after = m.groups()
    sentence = before + word + after
    rule = script.get(word)
    if rule is None:  # unscripted: the model echoes the sentence (no_change)
        return sentence
    kind, *args = rule
    if kind == "good":
        return before + args[0] + after
    if kind == "explain":
        return (
            f'Modified sentence: "{before}{args[0]}{after}"\n\nExplanation: I replaced "{word}" '
            f'with its antonym "{args[0]}", which reverses the meaning.'
        )
    if kind == "quoted":  # echoes the original, then the answer with the new word in quotes
        return (
            f'Original: {before}"{word}"{after}\nNew sentence: {before}"{args[0]}"{after}\n'
            f'The word "{word}" became "{args[0]}".'
        )
    if kind == "two":  # also changes another word
        other, new_other = args[1], args[2]
        return (before + args[0] + after).replace(other, new_other, 1)
    if kind == "negate":
        return f"{before}not {word}{after}\nI added a negation."
    if kind == "wrong":  # changes another word only
        return sentence.replace(args[0], args[1], 1)
    if kind == "raw":
        return args[0]
    if kind == "status":  # ("status", code, times, new): fails `times` times, then a good answer
        return ("status", args[0], args[1], before + args[2] + after)
    if kind == "sleep":  # ("sleep", seconds, new)
        return ("sleep", args[0], before + args[1] + after)
    if kind == "malformed":
        return ("malformed",)
    raise ValueError(rule)


class FakeLLM:
    def __init__(
        self,
        script: dict | None = None,
        judge: dict | None = None,
        respond=None,
        usage: bool = True,
    ):
        self.script = script or {}
        self.judge = judge or {}
        self.respond = respond or self.default_respond
        self.usage = usage
        self.prompts: list[str] = []  # every request, retries included
        self.calls: Counter = Counter()
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, body: bytes, headers=()):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in headers:
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": "no such endpoint"}')
                    return
                prompt = body["messages"][-1]["content"]
                with fake._lock:
                    fake.prompts.append(prompt)
                    fake.bodies.append(body)
                    fake.headers.append(dict(self.headers))
                    fake.calls[prompt] += 1
                    n = fake.calls[prompt]
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    self._behave(fake.respond(prompt), body, prompt, n)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _drop(self, body: bytes):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

            def _behave(self, behaviour, body, prompt, n):
                if isinstance(behaviour, tuple):
                    kind = behaviour[0]
                    if kind == "drop":
                        _, times, then = behaviour
                        if n <= times:
                            self._drop(
                                json.dumps(
                                    {"choices": [{"message": {"content": "x" * 40}}]}
                                ).encode()
                            )
                            return
                        return self._behave(then, body, prompt, n)
                    if kind == "truncated":
                        _, times, then = behaviour
                        if n <= times:
                            self._send(
                                200, b'{"id": "chatcmpl-fake", "choices": [{"index": 0, "mess'
                            )
                            return
                        return self._behave(then, body, prompt, n)
                    if kind == "html":
                        page = (
                            b"<html><head><title>502 Bad "
                            b"Gateway</title></head><body>nginx</body></html>"
                        )
                        self._send(behaviour[1], page, [("Content-Type", "text/html")])
                        return
                    if kind == "echo":
                        echoed = "\n".join(f"{k}: {v}" for k, v in sorted(self.headers.items()))
                        self._send(behaviour[1], f"bad request; headers were:\n{echoed}".encode())
                        return
                    if kind == "status":
                        _, code, times, then = behaviour
                        if n <= times:
                            self._send(code, b'{"error": "busy"}', [("Retry-After", "0")])
                            return
                        return self._behave(then, body, prompt, n)
                    if kind == "malformed":
                        self._send(200, b'{"choices": [ this is not json')
                        return
                    if kind == "sleep":
                        time.sleep(behaviour[1])
                        return self._behave(behaviour[2], body, prompt, n)
                text = str(behaviour)
                payload = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text},
                        }
                    ],
                }
                if fake.usage:
                    payload["usage"] = {
                        "prompt_tokens": len(prompt.split()),
                        "completion_tokens": len(text.split()),
                        "total_tokens": len(prompt.split()) + len(text.split()),
                    }
                self._send(200, json.dumps(payload).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def default_respond(self, prompt: str):
        if "Premise:" in prompt and "Hypothesis:" in prompt:
            hyp = prompt.split("Hypothesis:", 1)[1].split("\n", 1)[0].strip()
            return self.judge.get(hyp, "neutral")
        return replacement(self.script, prompt)

    def close(self):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def closed_port_url() -> str:
    """A base URL on a port nothing listens on (bound, then closed: the OS refuses connections)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def build_tiny_t5(folder, seed: int = 0):
    """A T5ForConditionalGeneration (d_model 32, 2 layers) with a word-level tokenizer trained
    offline on a few sentences; saved with save_pretrained so AutoTokenizer / AutoModel load it."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    corpus = [
        "A man is sleeping on a bench .",
        "Change the meaning of the following sentence to "
        "the opposite by replacing one word in quotation marks with its antonym , do not use "
        "negation , replacing one word at most . Please explain your change .",
        'awake happy sad old young tall short " dog cat runs walks',
    ]
    tok.train_from_iterator(
        corpus, trainers.WordLevelTrainer(special_tokens=["<pad>", "</s>", "<unk>"])
    )
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", 1)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
    config = T5Config(
        vocab_size=tok.get_vocab_size(),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    torch.manual_seed(seed)
    T5ForConditionalGeneration(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def build_tiny_gpt2(folder, seed: int = 0):
    """A GPT2LMHeadModel (2 layers, n_embd 32) with a word-level tokenizer, saved offline."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        ['A man is sleeping on a bench . awake happy sad " change word'],
        trainers.WordLevelTrainer(special_tokens=["<eos>", "<unk>"]),
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", unk_token="<unk>")
    config = GPT2Config(
        vocab_size=tok.get_vocab_size(),
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=256,
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(seed)
    GPT2LMHeadModel(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder
