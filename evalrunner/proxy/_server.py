"""The proxy server: uvicorn serving the app on a background thread, and the runs it holds.

Usable as a context manager (sync or async)::

    with ProxyServer("record", "recordings", Upstream("openai/gpt-4o-mini")) as proxy:
        env = proxy.run_env("scenario/model/0")       # opens the run
        subprocess.run(cmd, env={**os.environ, **env})
        result = proxy.finish_run("scenario/model/0")  # trajectory, calls, errors

It binds to loopback unless told otherwise; binding anywhere else needs
``allow_remote=True`` and a ``token``, which every request must then carry
(``Authorization: Bearer <token>`` or ``x-api-key: <token>``; the SDKs send
their API key that way, so agents get the token as their key).
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from evalrunner._net import TELEMETRY_OFF, is_loopback
from evalrunner.core._faults import RetrySettings
from evalrunner.core._request_key import DEFAULT_FINGERPRINT, FingerprintConfig
from evalrunner.endpoints._endpoints import LOCAL
from evalrunner.errors import ConfigError
from evalrunner.proxy._recording import Recording, ReplayBook, recording_path
from evalrunner.proxy._runs import DEFAULT_RUN, Mode, ProxyRunResult, RunState, check_run_id
from evalrunner.proxy._upstream import Upstream

if TYPE_CHECKING:
    import uvicorn

    from evalrunner.core._transport import Gate
    from evalrunner.endpoints._endpoints import EndpointPool

DUMMY_KEY = "evalrunner-proxy-dummy-key"


HEADER_TIMEOUT_S = 10.0
"""How long a new connection may take to send a whole request head before it is closed."""
MAX_CONNECTIONS = 1000
"""Connections (and requests in flight) served at once; more get a 503 straight away."""
MAX_IMPLICIT_RUNS = 256
"""Runs opened by requests alone (``/runs/<id>/...``) kept open at once; opening one more
finishes the least recently used (its recording written, its result handed to
``on_evict``), so a client inventing run ids cannot grow the proxy without bound."""


def _guarded_http() -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection that sends no whole request head
    within HEADER_TIMEOUT_S: a client that opens connections and dawdles (by accident
    or not) cannot hold the proxy's connections and memory. Bodies are timed by the app.

    At MAX_CONNECTIONS a new connection closes the oldest one that has not sent a request
    yet: uvicorn answers 503 to every request once that many connections are open, so
    without it a local process holding a thousand idle connections (no token is needed
    to connect) starved every run of the night."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    waiting: dict[H11Protocol, None] = {}
    """Connections without a request head yet, oldest first (one server's)."""

    class HeadDeadline(H11Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
            super().connection_made(transport)  # type: ignore[arg-type]
            loop = asyncio.get_running_loop()
            self._head_timer = loop.call_later(HEADER_TIMEOUT_S, self._head_too_slow)
            if len(self.connections) >= MAX_CONNECTIONS and waiting:
                oldest = next(iter(waiting))
                waiting.pop(oldest)
                oldest.transport.close()
            waiting[self] = None

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if getattr(self, "cycle", None) is not None:
                waiting.pop(self, None)  # a request is in: no longer idle

        def _head_too_slow(self) -> None:
            # uvicorn sets `cycle` when a request's head is in; read defensively, as it
            # is uvicorn's own attribute, not an API.
            transport = getattr(self, "transport", None)
            if getattr(self, "cycle", None) is None and transport is not None:
                transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_timer.cancel()
            waiting.pop(self, None)
            super().connection_lost(exc)

    return HeadDeadline


MIN_TOKEN = 16
"""The shortest token a proxy accepts (:func:`new_token`'s have 43 characters)."""


def _check_settings(
    mode: str, directory: Path | str | None, host: str, token: str | None, allow_remote: bool
) -> None:
    """A proxy's settings refused before it starts: each problem one line."""
    if mode not in ("record", "replay", "passthrough"):
        raise ConfigError(f"proxy mode {mode!r}: use record, replay or passthrough")
    if mode != "passthrough" and directory is None:
        raise ConfigError(f"proxy {mode} mode needs a directory for its recordings")
    if token is not None and len(token) < MIN_TOKEN:
        # An empty --token served every request unauthenticated; one character, or
        # a few, is guessed in a moment by anything that can reach the port.
        raise ConfigError(
            f"proxy --token (EVALRUNNER_PROXY_TOKEN) has {len(token)} characters: use at "
            f"least {MIN_TOKEN}, or leave it out for a new one each start (loopback)"
        )
    if not is_loopback(host, listening=True):
        if not allow_remote:
            raise ConfigError(
                f"proxy host {host!r} is not loopback: pass --allow-remote (allow_remote=True) "
                "and a --token to accept connections from other machines"
            )
        if not token:
            raise ConfigError(
                f"proxy host {host!r}: binding beyond loopback needs a --token "
                "(or EVALRUNNER_PROXY_TOKEN) that every request must carry"
            )


def new_token() -> str:
    """A fresh per-start token: what the proxy a night starts, and ``evalrunner proxy``
    without ``--token``, require of every request. Agents get it as their API key, so
    another local user on a shared runner cannot spend the upstream key through it."""
    return f"evalrunner-{secrets.token_urlsafe(24)}"


def _default_retry() -> RetrySettings:
    """The live runs' retries (from the one place they are defined), for runs that bring
    no policy of their own (``evalrunner proxy``, frozen ``.proxied`` and ``.command``).
    Their attempts may wait on the upstream for as long as ever (4 x the live default): a
    slow model recording a golden has no suite to raise ``request_timeout_s`` in. A night's
    ``command:`` runs bring their scenario's policy."""
    from evalrunner.suite._schema import RetryPolicy

    live = RetryPolicy()
    patience = 4 * live.request_timeout_s
    return live.model_copy(update={"request_timeout_s": patience, "attempt_deadline_s": patience})


class ProxyServer:
    """An OpenAI- and Anthropic-compatible capture proxy (see the package docs).

    ``mode``: ``"record"`` (forward and record into ``directory``), ``"replay"``
    (answer strictly from ``directory``, never upstream) or ``"passthrough"``
    (forward and capture, record nothing). ``upstream`` is the default for runs
    that do not name their own; ``retry`` the default retry policy (the live
    runs' when None); ``fingerprint`` what replay matches on.
    """

    def __init__(
        self,
        mode: Mode = "passthrough",
        directory: Path | str | None = None,
        upstream: Upstream | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        allow_remote: bool = False,
        retry: RetrySettings | None = None,
        fingerprint: FingerprintConfig = DEFAULT_FINGERPRINT,
        name: str = "agent",
        max_body_bytes: int | None = None,
        on_evict: Callable[[ProxyRunResult], None] | None = None,
    ) -> None:
        _check_settings(mode, directory, host, token, allow_remote)
        self.mode: Mode = mode
        self.directory = Path(directory) if directory is not None else None
        self.host = host
        self.port = port
        self.token = token
        self.retry = retry if retry is not None else _default_retry()
        self.fingerprint = fingerprint
        self.name = name
        self.max_body_bytes = max_body_bytes
        self.on_evict = on_evict
        self._implicit: OrderedDict[str, None] = OrderedDict()  # least recently used first
        self._upstream = upstream
        self._runs: dict[str, RunState] = {}
        self._finished: set[str] = set()
        self._lock = threading.Lock()
        self._pool: EndpointPool | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._caches: tempfile.TemporaryDirectory[str] | None = None
        if mode != "replay" and upstream is None:
            raise ConfigError(f"proxy {mode} mode needs an upstream model (--model)")

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> ProxyServer:
        """Bind (port 0: a free one), resolve the upstream, serve on a background thread."""
        if self._server is not None:
            return self
        try:
            import uvicorn

            from evalrunner.proxy._app import MAX_BODY_BYTES, build_app
        except ImportError as exc:
            raise ConfigError(
                f"the proxy needs starlette and uvicorn ({exc}); pip install 'evalrunner[proxy]'"
            ) from None
        self._upstream = self._resolve(self._upstream)
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP spelled out: asyncio turns Nagle off (TCP_NODELAY) only on
        # sockets whose proto says TCP, and with it on every answer waits ~40 ms
        # for the client's delayed ACK.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise ConfigError(
                f"proxy cannot listen on {self.host}:{self.port}: {exc.strerror}; pick another --port"
            ) from None
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            build_app(self, self.token, self.max_body_bytes or MAX_BODY_BYTES),
            log_config=None,  # leave the host process's logging alone
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
            # A server that may face a shared runner: slow clients are dropped (see
            # _guarded_http) and past MAX_CONNECTIONS new ones get a 503 at once.
            http=_guarded_http(),
            limit_concurrency=MAX_CONNECTIONS,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="evalrunner-proxy", daemon=True
        )
        self._server, self._thread = server, thread
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ConfigError(f"proxy did not start on {self.host}:{self.port}")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Stop serving; in record mode, runs never finished are finished (and written) now."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout=10)
        for run_id in list(self._runs):
            if self.mode == "record":
                self.finish_run(run_id)
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._caches is not None:
            self._caches.cleanup()
            self._caches = None

    def __enter__(self) -> ProxyServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> ProxyServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)

    # -- addresses -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` (loopback when bound to every interface)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        host = "[::1]" if host == "::" else f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def run_url(self, run_id: str = DEFAULT_RUN) -> str:
        """The OpenAI base URL of a run (``.../runs/<run-id>/v1``); opens the run if needed."""
        self._get_or_open(run_id)
        if run_id == DEFAULT_RUN:
            return f"{self.base_url}/v1"
        return f"{self.base_url}/runs/{run_id}/v1"

    def run_env(self, run_id: str = DEFAULT_RUN) -> dict[str, str]:
        """Environment for a subprocess agent: base URLs for both SDK families, a key, no caches.

        The key is the proxy's token when it has one, else a dummy: provider
        keys never leave the proxy. ``ANTHROPIC_BASE_URL`` has no ``/v1``: the
        Anthropic SDKs add ``/v1/messages`` themselves.

        Frameworks that answer from a disk cache or report elsewhere would make a
        run that measures nothing, or reach the network after it: dspy gets an
        empty cache directory of its own for each call (a cached answer is no
        model call), and known frameworks' telemetry is turned off (``TELEMETRY_OFF``).
        An OTLP/HTTP trace exporter sends the agent's spans to the run (``/v1/traces``).
        """
        url = self.run_url(run_id)
        key = self.token or DUMMY_KEY
        return {
            "OPENAI_BASE_URL": url,
            "OPENAI_API_BASE": url,
            "ANTHROPIC_BASE_URL": url.removesuffix("/v1"),
            "OPENAI_API_KEY": key,
            "ANTHROPIC_API_KEY": key,
            "DSPY_CACHEDIR": self._empty_cache_dir(),
            **TELEMETRY_OFF,
            # The agent's own OpenTelemetry spans, where it exports them (OTLP/HTTP): its
            # tool executions join the run's trajectory (header values URL-encoded).
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{url}/traces",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": f"authorization=Bearer%20{key}",
        }

    def _empty_cache_dir(self) -> str:
        with self._lock:
            if self._caches is None:
                self._caches = tempfile.TemporaryDirectory(prefix="evalrunner-proxy-caches-")
            return tempfile.mkdtemp(dir=self._caches.name)

    def recording_path(self, run_id: str) -> Path:
        if self.directory is None:
            raise ConfigError("this proxy has no recordings directory (passthrough mode)")
        return recording_path(self.directory, check_run_id(run_id))

    # -- runs ------------------------------------------------------------------------

    def open_run(
        self,
        run_id: str = DEFAULT_RUN,
        *,
        upstream: Upstream | None = None,
        retry: RetrySettings | None = None,
        fingerprint: FingerprintConfig | None = None,
        recording: Path | None = None,
        name: str | None = None,
        gate: Gate | None = None,
        redo: str | None = None,
    ) -> str:
        """Start a run afresh (replacing any open one of that id); returns its base URL.

        Overrides apply to this run only: its upstream model (a night with two
        models uses one proxy), retry policy, replay fingerprint, recording file
        (default ``<directory>/<run-id>.proxy.json``) and trajectory agent name.
        ``gate``: the night's shared rate limit for the run's model (live nights).
        ``redo``: the command a replay mismatch gives to re-record this run (a pytest
        test's own node id; default: both ways of recording, for the proxy's user).
        A recording that cannot be read raises :class:`FileFormatError`; a
        missing one answers every call with a replay error saying so.
        """
        check_run_id(run_id)
        path = recording or (self.recording_path(run_id) if self.directory else None)
        book = None
        if self.mode == "replay":
            assert path is not None
            missing = not path.exists()
            loaded = Recording(run_id=run_id) if missing else Recording.load(path)
            book = ReplayBook(
                loaded, str(path), fingerprint or self.fingerprint, missing=missing, redo=redo
            )
        state = RunState(
            run_id,
            mode=self.mode,
            upstream=self._resolve(upstream) if upstream is not None else self._upstream,
            retry=retry if retry is not None else self.retry,
            book=book,
            recording_path=path,
            name=name or self.name,
            gate=gate,
        )
        with self._lock:
            self._runs[run_id] = state
            self._finished.discard(run_id)
        return self.run_url(run_id)

    def _get_or_open(self, run_id: str) -> RunState:
        with self._lock:
            state = self._runs.get(run_id)
            if run_id in self._implicit:
                self._implicit.move_to_end(run_id)
        if state is None:
            self.open_run(run_id)
            with self._lock:
                state = self._runs[run_id]
                if run_id != DEFAULT_RUN:  # the one run of base-URL clients stays
                    self._implicit[run_id] = None
                evict = (
                    self._implicit.popitem(last=False)[0]
                    if len(self._implicit) > MAX_IMPLICIT_RUNS
                    else None
                )
            if evict is not None and evict in self.open_runs():
                result = self.finish_run(evict)
                if self.on_evict is not None:
                    self.on_evict(result)
        return state

    def run_for_request(self, run_id: str) -> RunState:
        """The run a request names; unknown runs open with the defaults, finished ones refuse."""
        check_run_id(run_id)
        with self._lock:
            if run_id in self._finished:
                raise ConfigError(f"proxy run {run_id!r} is finished; it takes no more calls")
        return self._get_or_open(run_id)

    def open_run_named(self, run_id: str) -> RunState | None:
        """The run ``run_id`` when it is open (unlike :meth:`run_for_request`, which opens
        one: for a request that did not prove it may)."""
        with self._lock:
            return self._runs.get(run_id) if run_id not in self._finished else None

    def open_runs(self) -> list[str]:
        with self._lock:
            return sorted(self._runs)

    def model_name(self, run_id: str) -> str:
        with self._lock:
            state = self._runs.get(run_id)
        upstream = state.upstream if state is not None else self._upstream
        return upstream.name if upstream is not None else "evalrunner-replay"

    def finish_run(self, run_id: str = DEFAULT_RUN, *, save: bool = True) -> ProxyRunResult:
        """Close a run and return what it produced; late requests to it are refused.

        In record mode the recording is written when the run made at least one
        model call and met no infrastructure fault (``result.recording_path``);
        otherwise it is only returned (``result.recording``), for the caller
        to judge. ``save=False`` only returns it: a caller that knows more (the
        agent crashed) writes it once the run is judged.
        """
        with self._lock:
            state = self._runs.pop(check_run_id(run_id), None)
            self._implicit.pop(run_id, None)
            if state is not None:
                self._finished.add(run_id)
        if state is None:
            raise ConfigError(f"proxy run {run_id!r} is not open (never opened, or finished)")
        # Fixes whether a call was under way as the run ended, and cancels it.
        state.infra.close()
        result = state.result()
        if (
            save
            and result.recording is not None
            and state.recording_path is not None
            and result.model_calls
            and result.infra_error is None
        ):
            result.recording.save(state.recording_path)
            result.recording_path = state.recording_path
        return result

    def upstream_line(self) -> str:
        """The default upstream as the start line names it: the model and how it is reached."""
        upstream = self._upstream
        if upstream is None or self.mode == "replay":  # replay never reaches an upstream
            return "none (replay: answers come from the recordings)"
        return upstream.described

    def _resolve(self, upstream: Upstream | None) -> Upstream | None:
        if upstream is None or upstream.model != LOCAL:
            return upstream
        if self._pool is None:
            from evalrunner.endpoints._endpoints import EndpointPool

            self._pool = EndpointPool()
        ep = self._pool.resolve(LOCAL)
        return Upstream(
            model=ep.model,
            api_base=ep.api_base,
            api_key=ep.api_key,
            llama_cpp=True,
            timeout_s=upstream.timeout_s,
            label=LOCAL,
            direct=upstream.direct,
        )
