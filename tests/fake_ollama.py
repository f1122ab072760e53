"""A small, honest stand-in for the Ollama HTTP API, served over real HTTP on 127.0.0.1.

It implements what langchain-ollama's ChatOllama (via the `ollama` client) calls:
POST /api/chat (NDJSON stream or one JSON object), GET /api/tags, POST /api/show,
GET /api/ps, GET /api/version, and GET/HEAD / ("Ollama is running"). Status codes and
error bodies follow Ollama's server/routes.go: an unknown model on /api/chat is a 404 with
{"error": "model \"NAME\" not found, try pulling it first"}; on /api/show it is
{"error": "model 'NAME' not found"}.

Token counts: `prompt_eval_count` (whitespace-split words of the concatenated message contents)
and `eval_count` (words of the answer) are the *server's* counts, as with real Ollama; the client
must report them as-is and never recount them.

`format` is honoured the way constrained decoding would: an answer that is already JSON is sent
unchanged; otherwise a schema gets a minimal instance (strings carry the answer) and "json" gets
{"response": answer}. `options` (seed, temperature, ...) are only recorded; `num_predict` and
`stop` cut the answer (done_reason "length" / "stop"). Tools and thinking are not supported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

Responder = Callable[[list[dict[str, Any]], dict[str, Any]], str]
RUNNER_DIED = "llama runner process has terminated: exit status 2"
_DETAILS = {"parent_model": "", "format": "gguf", "family": "fake", "families": ["fake"]}
_DETAILS |= {"parameter_size": "0M", "quantization_level": "F16"}


def echo_responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    """Default answer: deterministic, and echoes the last user message."""
    users = [m.get("content") or "" for m in messages if m.get("role") == "user"]
    return f"echo: {users[-1] if users else ''}"


def _canonical(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _instance(schema: Any, text: str, root: dict[str, Any]) -> Any:
    """A minimal value valid for `schema`: what a grammar-constrained model would emit."""
    if not isinstance(schema, dict):
        return text
    if "$ref" in schema:
        defs = root.get("$defs") or root.get("definitions") or {}
        return _instance(defs.get(schema["$ref"].rsplit("/", 1)[-1]), text, root)
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return _instance(schema[key][0], text, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "object")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        return {k: _instance(v, text, root) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [
            _instance(schema.get("items"), text, root) for _ in range(schema.get("minItems", 0))
        ]
    return {"integer": 0, "number": 0, "boolean": False, "null": None}.get(kind, text)


def _as_json(text: str, fmt: Any) -> str:
    try:
        json.loads(text)
        return text
    except ValueError:
        value = _instance(fmt, text, fmt) if isinstance(fmt, dict) else {"response": text}
        return json.dumps(value)


def _tag(name: str) -> dict[str, Any]:
    digest = hashlib.sha256(name.encode()).hexdigest()
    entry = {"name": name, "model": name, "modified_at": _now(), "size": 1024}
    return entry | {"digest": digest, "details": _DETAILS}


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True  # stop()/start() rebinds the same port despite TIME_WAIT
    daemon_threads = True
    fake: FakeOllama

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not self.fake._stopping.is_set():  # connections cut by stop() are expected
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked streaming, like Ollama's Go server

    @property
    def fake(self) -> FakeOllama:
        return cast("_Server", self.server).fake

    def setup(self) -> None:
        super().setup()
        self.fake._connections.add(self.connection)

    def finish(self) -> None:
        self.fake._connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any, head: bool = False) -> None:
        text = body if isinstance(body, str) else json.dumps(body)
        data = text.encode()
        self.send_response(status)
        ctype = "text/plain" if isinstance(body, str) else "application/json"
        self.send_header("Content-Type", f"{ctype}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def do_HEAD(self) -> None:
        self.do_GET(head=True)

    def do_GET(self, head: bool = False) -> None:
        fake = self.fake
        fake._record(self.path, None)
        routes: dict[str, Any] = {
            "/": "Ollama is running",
            "/api/version": {"version": fake.version},
            "/api/tags": {"models": [_tag(n) for n in fake.models]},
            "/api/ps": {"models": []},
        }
        if self.path in routes:
            return self._send(200, routes[self.path], head)
        self._send(404, "404 page not found", head)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError as exc:
            body = None
            self.fake._record(self.path, body)
            return self._send(400, {"error": str(exc)})
        self.fake._record(self.path, body)
        if not isinstance(body, dict) and self.path in ("/api/chat", "/api/show"):
            return self._send(400, {"error": "missing request body"})
        if self.path == "/api/chat":
            return self._chat(body)
        if self.path == "/api/show":
            name = body.get("model") or body.get("name") or ""
            if not name:
                return self._send(400, {"error": "model is required"})
            if _canonical(name) not in self.fake.models:
                return self._send(404, {"error": f"model '{name}' not found"})
            info = {"general.architecture": "fake", "fake.context_length": 4096}
            show = {"modelfile": f"FROM {_canonical(name)}\n", "template": "{{ .Prompt }}"}
            show |= {"parameters": "", "details": _DETAILS, "model_info": info}
            return self._send(200, show | {"capabilities": ["completion"], "modified_at": _now()})
        self._send(404, "404 page not found")

    def _chat(self, body: dict[str, Any]) -> None:
        fake = self.fake
        with fake._slots:  # like OLLAMA_NUM_PARALLEL: more requests than slots wait
            self._answer(body)

    def _answer(self, body: dict[str, Any]) -> None:
        fake, start = self.fake, time.perf_counter_ns()
        if fake.delay > 0 and fake._stopping.wait(fake.delay):
            return self._drop()  # the server went down while "loading the model"
        if failure := fake._take_failure():
            return self._send(failure[0], {"error": failure[1]})
        name, messages = body.get("model") or "", body.get("messages") or []
        if not name:
            return self._send(400, {"error": "model is required"})
        if (responder := fake.models.get(_canonical(name))) is None:
            error = f"model {json.dumps(name, ensure_ascii=False)} not found, try pulling it first"
            return self._send(404, {"error": error})
        base = {"model": name, "created_at": _now()}
        if body.get("think"):
            return self._send(400, {"error": f'"{name}" does not support thinking'})
        if not messages:
            empty = {"role": "assistant", "content": ""}
            return self._send(200, base | {"message": empty, "done": True, "done_reason": "load"})
        try:
            text = responder(messages, body)
        except Exception as exc:  # a responder bug shows up like a runner error
            return self._send(500, {"error": f"{type(exc).__name__}: {exc}"})
        if fake._stopping.is_set():
            return self._drop()  # the responder called server.stop(): died mid-request
        if body.get("format"):
            text = _as_json(text, body["format"])
        options, reason = body.get("options") or {}, "stop"
        for stop in options.get("stop") or []:
            text = text.split(stop, 1)[0]
        words = text.split()
        limit = options.get("num_predict")
        if isinstance(limit, int) and 0 <= limit < len(words):
            text, words, reason = " ".join(words[:limit]), words[:limit], "length"
        prompt = " ".join(str(m.get("content") or "") for m in messages)
        loaded = time.perf_counter_ns()
        final = base | {"done": True, "done_reason": reason, "total_duration": 0}
        final |= {"load_duration": loaded - start, "prompt_eval_count": len(prompt.split())}
        final |= {"prompt_eval_duration": 1000, "eval_count": len(words), "eval_duration": 1000}
        with fake._lock:
            fake.counts.append((final["prompt_eval_count"], final["eval_count"]))
        if body.get("stream") is False:
            final |= {"message": {"role": "assistant", "content": text}}
            final["total_duration"] = time.perf_counter_ns() - start
            return self._send(200, final)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        pieces = [p + " " for p in text.split(" ")]
        pieces[-1] = pieces[-1][:-1]
        for piece in [p for p in pieces if p] or [""]:
            message = {"role": "assistant", "content": piece}
            self._chunk(base | {"created_at": _now(), "message": message, "done": False})
        final["message"] = {"role": "assistant", "content": ""}
        final["total_duration"] = time.perf_counter_ns() - start
        self._chunk(final)
        self.wfile.write(b"0\r\n\r\n")

    def _drop(self) -> None:
        self.close_connection = True  # no answer at all, as from a killed process

    def _chunk(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class FakeOllama:
    """`with FakeOllama(models={"tiny": responder}) as server: ChatOllama(base_url=server.url)`.

    Knobs: `delay` (seconds each chat takes), `parallel` (chats served at once, like
    OLLAMA_NUM_PARALLEL; None: no limit), `fail_next(n, status)`, `stop()`/`start()` (the same
    port again). `requests` holds every (path, JSON body or None) received.
    """

    def __init__(
        self,
        models: Mapping[str, Responder | None] | None = None,
        delay: float = 0.0,
        parallel: int | None = None,
    ):
        self.models = {
            _canonical(k): v or echo_responder for k, v in (models or {"tiny": None}).items()
        }
        self.delay, self.version, self.port = delay, "0.12.6", 0
        self.requests: list[tuple[str, dict[str, Any] | None]] = []
        self.counts: list[tuple[int, int]] = []  # (prompt_eval_count, eval_count) per answer
        self._lock, self._life = threading.Lock(), threading.Lock()
        self._slots = threading.BoundedSemaphore(parallel) if parallel else contextlib.nullcontext()
        self._stopping = threading.Event()
        self._failures: list[tuple[int, str]] = []
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def chats(self) -> list[dict[str, Any]]:
        """The JSON bodies of all /api/chat requests, in order."""
        return [body for path, body in self.requests if path == "/api/chat" and body is not None]

    def fail_next(self, n: int = 1, status: int = 500, message: str = RUNNER_DIED) -> None:
        """Answer the next `n` chats with HTTP `status` and {"error": message}."""
        with self._lock:
            self._failures.extend([(status, message)] * n)

    def start(self) -> FakeOllama:
        """Listen on 127.0.0.1 (a free port the first time, the same port after a stop())."""
        with self._life:
            if self._httpd is None:
                self._stopping.clear()
                httpd = _Server(("127.0.0.1", self.port), _Handler)
                httpd.fake, self.port, self._httpd = self, httpd.server_address[1], httpd
                self._thread = threading.Thread(
                    target=httpd.serve_forever, args=(0.05,), daemon=True
                )
                self._thread.start()
        return self

    def stop(self) -> None:
        """Go down like a killed Ollama: refuse new connections, drop the open ones."""
        with self._life:
            if self._httpd is None:
                return
            self._httpd.shutdown()
            self._httpd.server_close()
            self._stopping.set()  # chats waiting out `delay` end without an answer
            for conn in list(self._connections):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd = self._thread = None

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, path: str, body: dict[str, Any] | None) -> None:
        with self._lock:
            self.requests.append((path, body))

    def _take_failure(self) -> tuple[int, str] | None:
        with self._lock:
            return self._failures.pop(0) if self._failures else None
