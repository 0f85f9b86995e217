"""No network during replay: whatever reaches for it is blocked, recorded, and fails the run.

A replayed agent gets every model answer from the recording; a connection or
DNS lookup means something bypassed capture (an SDK client, ``from litellm
import completion`` bound before the wrap, a tool, telemetry). Three layers:

- an audit hook (:func:`sys.addaudithook`, installed once, idle outside a
  guard): ``socket.connect``, ``sendto``, ``sendmsg`` and the DNS functions
  raise :class:`NetworkBlocked`. Audit events fire inside the C ``_socket``
  module, so ``_socket.socket().connect`` and UDP are caught too;
- guards on ``send``/``sendall``/``sendfile`` of :class:`socket.socket` and
  :class:`ssl.SSLSocket` (and the TLS handshake), for sockets connected before
  the replay and reused in it (a ``requests.Session``'s pooled connection);
- for child processes, which the hook cannot see into: once the run starts one,
  ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` point at a loopback listener of
  ours that refuses and records every request (``NO_PROXY`` is cleared until the
  guard ends). A child that opens raw sockets itself is out of reach.

Every block is recorded on each open :class:`block_network`; the frozen run
fails when any happened, also when the agent caught the exception or it was
raised in another thread. Threads that were already running when the guard
opened (pytest's, a debugger's, fixtures' servers) keep their loopback
connections; everything else is blocked, from every thread. Unix-domain
sockets are local IPC, not network, and stay open.
"""

from __future__ import annotations

import os
import socket
import ssl
import sys
import sysconfig
import threading
import warnings
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from evalrunner._net import is_loopback
from evalrunner._redact import redact_text
from evalrunner.core._warnings import PROXY
from evalrunner.errors import NetworkBlocked
from evalrunner.frozen._refusing_proxy import RefusingProxy

_NETWORK_FAMILIES = (socket.AF_INET, socket.AF_INET6)
_DNS_EVENTS = frozenset(
    {
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.getnameinfo",
    }
)
_SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec", "pty.spawn"}
)
_EVENTS = _DNS_EVENTS | _SPAWN_EVENTS | {"socket.connect", "socket.sendto", "socket.sendmsg"}
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_NO_PROXY_VARS = ("NO_PROXY", "no_proxy")

# Where a model call comes from when capture did not see it, by module name.
_MODEL_CLIENTS = (
    ("litellm", "litellm"),
    ("openai", "the openai SDK"),
    ("anthropic", "the anthropic SDK"),
    ("google.genai", "the google-genai SDK"),
    ("google.generativeai", "the google-generativeai SDK"),
    ("mistralai", "the mistralai SDK"),
    ("cohere", "the cohere SDK"),
    ("groq", "the groq SDK"),
)


@dataclass(frozen=True)
class Block:
    """One blocked attempt: what was reached for, through which layer, from where."""

    layer: str
    target: str
    thread: str | None = None
    where: str | None = None  # the innermost frame of the agent's own code
    via: str | None = None  # the model client in the stack (litellm, the openai SDK), if any

    def line(self) -> str:
        parts = [f"{self.target} [{self.layer}]"]
        if self.thread:
            parts.append(f"in thread {self.thread}")
        if self.where:
            parts.append(f"from {self.where}")
        if self.via:
            parts.append(f"through {self.via}")
        return ", ".join(parts)


class _State:
    """The process-wide guard state: one audit hook for the process; the send guards
    and a refusing proxy while any guard is open."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.guards: list[block_network] = []
        # Threads that are not the replayed run's: running when the guard opened, or
        # started by one of those since (a fixture's server answers each request in
        # a new thread).
        self.bystanders: set[threading.Thread] = set()
        self.hooked = False
        self.proxy: RefusingProxy | None = None
        self.saved_env: dict[str, str | None] | None = None
        self.saved_methods: list[tuple[type, str, Any]] = []
        self.pid = os.getpid()
        # Loopback addresses the replay itself serves from (evalrunner's capture proxy
        # in replay mode): the run may reach them, and its children bypass the
        # refusing proxy for their hosts.
        self.allowed: set[tuple[str, int]] = set()


_state = _State()


class block_network:
    """Context manager: network access from this process (and, by proxy, its children)
    raises NetworkBlocked and is recorded in ``blocks``.

    ``allow``: loopback ``(host, port)`` pairs the run may reach, for the capture
    proxy answering it from a recording; anything else stays blocked.
    """

    def __init__(self, allow: tuple[tuple[str, int], ...] = ()) -> None:
        self.blocks: list[Block] = []
        self.elsewhere: list[Block] = []
        """Blocked too, but not the run's: a library's own thread that was running before
        the replay (telemetry an earlier test's framework started), with none of the
        agent's code on its stack. Said, never the run's failure."""
        self.allow = tuple(a for a in allow if _is_loopback(a))
        self._lock = threading.Lock()

    def record(self, block: Block, *, elsewhere: bool = False) -> None:
        with self._lock:
            (self.elsewhere if elsewhere else self.blocks).append(block)

    def __enter__(self) -> block_network:
        with _state.lock:
            if not _state.guards:
                _open()
            _state.guards.append(self)
            _state.allowed.update(self.allow)
        return self

    def __exit__(self, *exc: object) -> None:
        with _state.lock:
            _state.guards.remove(self)
            _state.allowed = {a for g in _state.guards for a in g.allow}
            if not _state.guards:
                _close()


def _open() -> None:
    """The first guard opens: hook (once), send guards, and note who was already running."""
    if not _state.hooked:
        sys.addaudithook(_audit)
        _state.hooked = True
    _state.proxy = RefusingProxy(_note_forwarded)
    current = threading.current_thread()
    _state.bystanders = {t for t in threading.enumerate() if t is not current}
    _state.pid = os.getpid()
    _patch()


def _close() -> None:
    for cls, name, original in reversed(_state.saved_methods):
        if original is None:
            delattr(cls, name)
        else:
            setattr(cls, name, original)
    _state.saved_methods.clear()
    if _state.saved_env is not None:
        for key, value in _state.saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        _state.saved_env = None
    _state.bystanders = set()
    if _state.proxy is not None:
        _state.proxy.close()
        _state.proxy = None


# --- the audit hook -------------------------------------------------------------------------


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Runs for every audit event of the process, forever: return at once when idle.
    if not _state.guards or event not in _EVENTS:
        return
    if event in _SPAWN_EVENTS:
        _child_starts(args)
    elif event == "socket.connect":
        _connect(*args[:2])
    elif event in _DNS_EVENTS:
        target = args[0] if event != "socket.getaddrinfo" else _address(args[:2])
        if target is not None:
            _check("DNS lookup (audit hook)", target)
    elif args[1] is None:  # sendmsg on a connected socket
        _check_send(args[0], "sendmsg on a socket connected before the replay")
    elif _is_network(args[0]):
        _check("datagram send (audit hook, any socket incl. the C-level _socket)", args[1])


def _connect(sock: Any, address: Any) -> None:
    if not _is_network(sock) or _is_proxy(address):
        return  # local IPC, or our own refusing proxy (it records what is asked of it)
    _check("connect (audit hook, any socket incl. the C-level _socket)", address)


def _child_starts(args: tuple[Any, ...]) -> None:
    """A child process is about to start: point its proxy environment at ours."""
    proxy = _state.proxy
    if proxy is None:
        return
    url = f"http://{proxy.address[0]}:{proxy.address[1]}"
    with _state.lock:
        if _state.saved_env is None:
            keys = (*_PROXY_VARS, *_NO_PROXY_VARS)
            _state.saved_env = {k: os.environ.get(k) for k in keys}
            _set_proxy_env(os.environ, url)
    env = next((a for a in args if isinstance(a, MutableMapping)), None)
    if env is not None and env is not os.environ:
        _set_proxy_env(env, url)  # an explicit env= for the child


def _set_proxy_env(env: MutableMapping[Any, Any], url: str) -> None:
    # An env of bytes keys (os.environb, or one a caller built so) takes bytes values too.
    binary = any(isinstance(k, bytes) for k in env)

    def raw(text: str) -> str | bytes:
        return text.encode() if binary else text

    for key in _PROXY_VARS:
        env[raw(key)] = raw(url)
    # Only the replay's own loopback servers bypass the refusing proxy.
    hosts = ",".join(sorted({host for host, _ in _state.allowed}))
    for key in _NO_PROXY_VARS:
        if hosts:
            env[raw(key)] = raw(hosts)
        else:
            env.pop(raw(key), None)


# --- send guards ----------------------------------------------------------------------------


def _patch() -> None:
    """Guard sends on connected sockets, and follow who starts threads."""
    original_start = threading.Thread.start
    _state.saved_methods.append((threading.Thread, "start", original_start))

    def start(self: threading.Thread) -> None:
        _thread_starts(self)
        original_start(self)

    threading.Thread.start = start  # type: ignore[method-assign]
    guarded: list[tuple[type, str, str]] = [
        (socket.socket, name, "send on a socket connected before the replay")
        for name in ("send", "sendall", "sendfile")
    ]
    guarded += [
        (ssl.SSLSocket, name, "TLS send on a socket connected before the replay")
        for name in ("send", "sendall", "sendfile", "do_handshake")
    ]
    for cls, name, layer in guarded:
        original = cls.__dict__.get(name)
        _state.saved_methods.append((cls, name, original))
        setattr(cls, name, _guarded(getattr(cls, name), layer))


def _guarded(method: Callable[..., Any], layer: str) -> Callable[..., Any]:
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        _check_send(self, layer)
        return method(self, *args, **kwargs)

    return guarded


def _thread_starts(thread: threading.Thread) -> None:
    """A thread started by a bystander is one too (audit events have no thread start
    before Python 3.13); one started by the run is the run's."""
    if threading.current_thread() in _state.bystanders:
        with _state.lock:
            _state.bystanders.add(thread)


def _check_send(sock: Any, layer: str) -> None:
    if not _state.guards or not _is_network(sock):
        return
    try:
        peer = sock.getpeername()
    except OSError:
        return  # not connected: the send itself fails
    if not _is_proxy(peer):
        _check(layer, peer)


# --- deciding and recording -----------------------------------------------------------------


def _check(layer: str, target: Any) -> None:
    """Block (record, raise) unless a thread that predates the guard talks to loopback."""
    thread = threading.current_thread()
    proxy = _state.proxy
    if proxy is not None and thread is proxy.thread:
        return
    if isinstance(target, tuple) and (_host(target), target[1]) in _state.allowed:
        return
    bystander = thread in _state.bystanders
    if bystander and _is_loopback(target):
        return
    # Blocked from a thread that was already running too (a pool the agent reuses, a
    # library's background fetch): the run must not depend on the network at all.
    where, via = _origin(sys._getframe(1))
    name, elsewhere = _whose(thread, bystander, where)
    block = Block(layer, redact_text(_format_target(target)), name, where, via)
    _note_block(block, elsewhere=elsewhere)
    raise NetworkBlocked(
        f"network access during replay ({block.line()}): replayed runs must not reach any "
        "endpoint; something bypassed the recorded responses"
    )


def _note_block(block: Block, *, elsewhere: bool = False) -> None:
    if os.getpid() != _state.pid and _state.proxy is not None:
        # A forked child: its guards are copies; tell the parent's.
        _state.proxy.forward(block.layer, block.target, block.where, block.via)
        return
    for guard in list(_state.guards):
        guard.record(block, elsewhere=elsewhere)


def _whose(thread: threading.Thread, bystander: bool, where: str | None) -> tuple[str, bool]:
    """The thread as a block names it, and whether the block is not the run's: a library's
    own thread that predates the replay, with none of the agent's code on its stack."""
    started_by = _library_thread(thread) if bystander and where is None else None
    if started_by is not None:
        return f"{thread.name} (running before the replay began, {started_by}'s own thread)", True
    if bystander:
        return f"{thread.name} (running before the replay began)", False
    return thread.name, False


def _library_thread(thread: threading.Thread) -> str | None:
    """The installed package whose own code a thread runs (its target, or its ``run``),
    None where that is the standard library's (a pool worker runs whatever it is given)
    or the project's: telemetry and the like, which no run asked for."""
    target = getattr(thread, "_target", None) or type(thread).run
    code = getattr(getattr(target, "__func__", target), "__code__", None)
    if code is None:
        return None
    path = str(Path(code.co_filename).resolve())
    if not path.startswith(_THIRD_PARTY_DIRS):
        return None
    module = getattr(target, "__module__", None) or type(thread).__module__
    return str(module).split(".")[0]


def _note_forwarded(layer: str, target: str, where: str | None, via: str | None) -> None:
    # A URL a child asked for may carry a key in its query or user:password@.
    _note_block(Block(layer, redact_text(target), None, where, via))


# --- helpers --------------------------------------------------------------------------------


def _is_network(sock: Any) -> bool:
    return getattr(sock, "family", None) in _NETWORK_FAMILIES


def _is_proxy(address: Any) -> bool:
    proxy = _state.proxy
    return proxy is not None and isinstance(address, tuple) and address[:2] == proxy.address


def _host(target: Any) -> str:
    host = target[0] if isinstance(target, tuple) and target else target
    return host.decode() if isinstance(host, bytes) else str(host)


def _is_loopback(target: Any) -> bool:
    return is_loopback(_host(target))


def _address(args: tuple[Any, ...]) -> Any:
    """getaddrinfo's (host, port); None for a lookup of no host (a bind to all interfaces)."""
    host, port = args
    if host is None:
        return None
    return (host, port) if port not in (None, 0, "0") else host


def _format_target(target: Any) -> str:
    if isinstance(target, tuple) and len(target) >= 2:
        host = _host(target)
        return f"[{host}]:{target[1]}" if ":" in host else f"{host}:{target[1]}"
    return _host(target)


_LIBRARY_DIRS = tuple(
    str(Path(p).resolve())
    for p in {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)
_THIRD_PARTY_DIRS = tuple(
    str(Path(p).resolve()) for p in {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
)
# The harness's own frames are not the agent's code.
_HARNESS_DIRS = tuple(str(Path(__file__).resolve().parents[1] / d) for d in ("core", "frozen"))


def _origin(frame: FrameType | None) -> tuple[str | None, str | None]:
    """The innermost frame of the agent's own code, and the model client in the stack."""
    where: str | None = None
    via: str | None = None
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        for prefix, client in _MODEL_CLIENTS:
            if module == prefix or module.startswith(prefix + "."):
                via = client  # keep the outermost: litellm calls the openai SDK
        filename = frame.f_code.co_filename
        if where is None and not _is_library(filename):
            where = f"{_shown(filename)}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return where, via


def _is_library(filename: str) -> bool:
    if filename.startswith("<"):
        return True
    path = str(Path(filename).resolve())
    return path.startswith(_LIBRARY_DIRS) or path.startswith(_HARNESS_DIRS)


def _shown(filename: str) -> str:
    try:
        return str(Path(filename).resolve().relative_to(Path.cwd()))
    except ValueError:
        return filename


# --- the message of a frozen run that reached for the network -------------------------------


def describe_blocks(blocks: list[Block]) -> str:
    """Why the frozen run fails: each distinct attempt, and what to do about it."""
    counted: dict[str, int] = {}
    for block in blocks:
        counted[block.line()] = counted.get(block.line(), 0) + 1
    lines = [f"  - {line}" + (f" (x{n})" if n > 1 else "") for line, n in counted.items()]
    clients = sorted({b.via for b in blocks if b.via})
    text = (
        f"NetworkBlocked: the replayed run reached for the network {len(blocks)} time(s); "
        "each was blocked, and the run fails even when the agent caught the error or it "
        "happened in another thread or a child process:\n" + "\n".join(lines) + "\n"
        "Something bypassed capture: replay answers every model call from the recording, so "
        "nothing in the run needs the network. "
    )
    if clients:
        return text + (
            f"A model call went through {' and '.join(clients)} without passing through "
            "capture: call models as `litellm.completion(...)` through the module (a "
            "`from litellm import completion` bound before evalrunner wrapped litellm skips "
            "capture), or record and replay an agent built on a provider SDK through the "
            f"capture proxy (`{PROXY}`): in pytest `golden_trajectory.proxied(agent, "
            "...)` or `golden_trajectory.command([...])`, with the SDK client created inside "
            "the agent. Re-recording cannot help: the call never reaches the recording."
        )
    return text + (
        "A tool, a library or a child process talked to the outside: fake it in the test, "
        "or, if it is a model call through another client, run the agent through the "
        f"capture proxy (`{PROXY}`): in pytest `golden_trajectory.proxied(...)` or "
        "`golden_trajectory.command([...])`."
    )


def say_elsewhere(guard: block_network) -> None:
    """Warn, from the test's own thread, of blocks that were not the run's (a library's
    thread reaching out after an earlier test used it): blocked, not this run's failure."""
    if guard.elsewhere:
        lines = "; ".join(sorted({b.line() for b in guard.elsewhere}))
        warnings.warn(
            f"blocked during replay, and not this run's doing: {lines}. A library an earlier "
            "test used reaches the network from its own thread (telemetry, most often): turn "
            "it off for tests (docs/frozen.md lists the variables evalrunner sets)",
            BackgroundNetworkWarning,
            stacklevel=2,
        )


class BackgroundNetworkWarning(UserWarning):
    """A library's own thread, running before a replay began, reached for the network
    during it: blocked and said, and no run's failure."""
