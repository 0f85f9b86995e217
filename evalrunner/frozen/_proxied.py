"""Frozen mode for agents capture cannot see in process: through the capture proxy.

An agent on a provider SDK (openai, anthropic, a framework on top of them) or
in another language reaches its model through a base URL. Here it gets the
proxy's: a callable runs with the base-URL environment set in this process
(SDK clients created inside read it), a command runs as a child process with
it. The recording is the proxy's (``<golden stem>.proxy.json`` next to the
golden); the golden is the same normalised trajectory as for litellm agents.

- ``check``: the proxy replays strictly and offline; the network is blocked
  for the run except the proxy's own loopback port; a request with no
  recording fails the test with the proxy's message (which field differed).
- ``update``: replay, rewrite the golden, report what moved.
- ``record``: forward to the live model, write recording and golden; a run
  with no model call, or one whose endpoint failed, writes nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrunner._net import no_proxy
from evalrunner._redact import register_env_secrets
from evalrunner.core._normalize import DEFAULT_CONFIG, NormalizeConfig
from evalrunner.core._scope import CaptureResult
from evalrunner.core._spans import ToolExecution, tool_spans_to, with_tool_executions
from evalrunner.errors import ConfigError
from evalrunner.frozen._golden import moved_hint
from evalrunner.frozen._network import block_network, describe_blocks, say_elsewhere
from evalrunner.frozen._run import (
    NO_CALLS_HINT,
    FrozenOutcome,
    Judging,
    Mode,
    _Stop,
    _write,
    compare_with_golden,
    golden_before,
    golden_to_check,
    no_calls_cause,
    rewrite_golden,
    said_what_moved,
)

if TYPE_CHECKING:
    from evalrunner.endpoints._endpoints import Endpoint
    from evalrunner.proxy._runs import ProxyRunResult
    from evalrunner.proxy._upstream import Upstream

__all__ = [
    "ProxiedAgent",
    "call_with_env",
    "command_agent",
    "proxy_recording_path",
    "run_frozen_proxied",
]

RUN_ID = "golden"
ProxiedAgent = Callable[[Mapping[str, str]], Any]
"""Runs the agent with the proxy's environment (base URLs, dummy key); returns its output."""

_ENV_LOCK = threading.Lock()  # os.environ is the process's: one proxied in-process run at a time


def proxy_recording_path(golden: Path) -> Path:
    """`foo.json` -> `foo.proxy.json`, next to the golden."""
    return golden.with_name(golden.stem + ".proxy.json")


@contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    with _ENV_LOCK:
        saved = {key: os.environ.get(key) for key in env}
        os.environ.update(env)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def call_with_env(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> ProxiedAgent:
    """An in-process agent: ``fn(*args, **kwargs)`` with the base-URL environment set.

    SDK clients read ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` when they are
    created, so create them inside ``fn``, not at import time.
    """

    def run(env: Mapping[str, str]) -> Any:
        # Keys the process already has stay: the proxy (in this process) forwards
        # with them, and it never lets the agent's key through anyway.
        env = {k: v for k, v in env.items() if not (k.endswith("_API_KEY") and k in os.environ)}
        with _environment(env):
            if inspect.iscoroutinefunction(fn):
                return asyncio.run(fn(*args, **kwargs))
            return fn(*args, **kwargs)

    return run


@dataclass(frozen=True)
class WrittenRun:
    """What a command with ``trajectory_file: true`` gave: its answer, and the trajectory
    it wrote, which is its run's instead of the proxy's."""

    answer: str | None
    trajectory: dict[str, Any]


def command_agent(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 300.0,
    trajectory_file: bool = False,
) -> ProxiedAgent:
    """A subprocess agent: its final answer is read from stdout as in live runs (and, with
    ``trajectory_file``, its run's trajectory from the file it writes, as in live runs)."""
    from evalrunner.suite import _contract

    register_env_secrets(env or {})

    def run(proxy_env: Mapping[str, str]) -> Any:
        full = {**os.environ, **(env or {}), **proxy_env}
        full.update(no_proxy(full))  # the proxy is on loopback
        with _contract.trajectory_file(trajectory_file) as written:
            if written is not None:
                full[_contract.TRAJECTORY_FILE] = str(written)
            stdout = _finished(argv, full, cwd, timeout)
            if written is None:
                return _contract.final_answer(stdout)
            try:
                trajectory = _contract.written_trajectory(written)
            except _contract.NoTrajectoryWritten as exc:
                raise AgentFailed(f"command {exc}") from None
        return WrittenRun(_contract.written_answer(stdout, trajectory), trajectory)

    return run


def _finished(
    argv: Sequence[str], env: Mapping[str, str], cwd: str | os.PathLike[str] | None, timeout: float
) -> str:
    """What the command printed on stdout, once it exited 0 (:class:`AgentFailed` otherwise)."""
    from evalrunner.suite._contract import output_text, stderr_tail

    try:
        done = subprocess.run(
            list(argv), env=dict(env), cwd=cwd, capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise AgentFailed(f"command {list(argv)!r} ran past its timeout of {timeout:g} s") from None
    except OSError as exc:
        raise ConfigError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
    if done.returncode != 0:
        tail = stderr_tail(output_text(done.stderr)) or "no stderr"
        raise AgentFailed(f"command exited with status {done.returncode}; stderr: {tail}")
    return output_text(done.stdout)


def pinned(upstream: Upstream) -> Upstream:
    """The upstream with its base URL fixed now, before the run points the environment at the proxy.

    litellm reads ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` for OpenAI and
    Anthropic models without an ``api_base``; an in-process agent's run sets
    them to the proxy, which would then forward to itself.
    """
    if upstream.api_base is not None:
        return upstream
    model = upstream.model
    if model.startswith("anthropic/") or model.startswith("claude"):
        base = (
            os.environ.get("ANTHROPIC_API_BASE")
            or os.environ.get("ANTHROPIC_BASE_URL")
            or "https://api.anthropic.com"
        )
    elif model.startswith("openai/") or "/" not in model:
        base = (
            os.environ.get("OPENAI_BASE_URL")
            or os.environ.get("OPENAI_API_BASE")
            or "https://api.openai.com/v1"
        )
    else:
        return upstream
    return dataclasses.replace(upstream, api_base=base)


class AgentFailed(Exception):
    """A proxied agent did not finish (non-zero exit, timeout, exception)."""


@dataclass(frozen=True)
class _ProxiedRun(Judging):
    """The agent, run through the capture proxy."""

    agent: ProxiedAgent
    suite_model: str | None = None
    """A suite scenario's model label (where the suite names it): a recording made against
    another upstream is named on replay."""

    @property
    def recording(self) -> Path:
        return proxy_recording_path(self.golden_path)

    def run(
        self, mode: str, upstream: Upstream | None
    ) -> tuple[ProxyRunResult, Any, BaseException | None, block_network | None]:
        from evalrunner.proxy._server import ProxyServer

        server = ProxyServer(
            "replay" if mode == "replay" else "record",
            self.recording.parent,
            upstream,
            name=self.name,
        )
        with server:
            server.open_run(RUN_ID, recording=self.recording, redo=self.record_cmd)
            env = server.run_env(RUN_ID)
            guard = block_network(allow=(("127.0.0.1", server.port),)) if mode == "replay" else None
            output: Any = None
            error: BaseException | None = None
            # An in-process agent's own execute_tool spans, where it emits them: the tool
            # side the proxy cannot see (a command agent's spans are in its own process).
            executions: list[ToolExecution] = []
            try:
                with tool_spans_to(executions.append), guard or nullcontext():
                    output = self.agent(env)
            except Exception as exc:  # the agent's failure; judged below with the proxy's view
                error = exc
            # Written by _record once the run is judged: a crashed agent's calls are not
            # a recording to replay, and must not replace the one there.
            result = server.finish_run(RUN_ID, save=False)
        with_tool_executions(result.trajectory, executions)
        if isinstance(output, WrittenRun):  # the command wrote its own trajectory
            result.trajectory, output = output.trajectory, output.answer
        return result, output, error, guard


def run_frozen_proxied(
    agent: ProxiedAgent,
    *,
    golden_path: Path,
    mode: Mode = "check",
    endpoint: Callable[[], Endpoint] | None = None,
    config: NormalizeConfig = DEFAULT_CONFIG,
    update_cmd: str = "pytest --golden-update",
    record_cmd: str = "pytest --golden-record",
    strict: bool = False,
    name: str = "agent",
    suite_model: str | None = None,
) -> FrozenOutcome:
    """Run ``agent`` through the capture proxy in frozen mode against ``golden_path``.

    ``endpoint`` gives the live model for ``record`` mode (called only then);
    ``suite_model``: a suite scenario's model label, compared with the recording's upstream.
    """
    run = _ProxiedRun(golden_path, config, update_cmd, record_cmd, strict, name, agent, suite_model)
    try:
        if mode == "record":
            if endpoint is None:
                raise ConfigError("recording through the proxy needs an upstream model")
            from evalrunner.proxy._upstream import Upstream

            return _record(run, pinned(Upstream.from_endpoint(endpoint())))
        return _replayed(run, update=mode == "update")
    except _Stop as stop:
        return stop.outcome


def _result(proxied: ProxyRunResult, output: Any, error: BaseException | None) -> CaptureResult:
    return CaptureResult(
        trajectory=proxied.trajectory,
        output=output,
        error=error,
        replay_errors=list(proxied.replay_errors),
        infra=proxied.infra,
    )


def _record(run: _ProxiedRun, upstream: Upstream) -> FrozenOutcome:
    before = golden_before(run.golden_path)  # first: a newer release's golden stops it
    proxied, output, error, _ = run.run("record", upstream)
    nothing = "recording failed, nothing written"
    if proxied.infra_error is not None:
        raise _Stop(
            FrozenOutcome(
                False, f"{nothing}: the model endpoint failed ({proxied.infra.final_reason})"
            )
        )
    if proxied.refusals:
        raise _Stop(
            FrozenOutcome(
                False,
                f"{nothing}: the capture proxy refused the agent's request ({proxied.refusals[0]})"
                + (f"; the agent then failed: {error}" if error is not None else ""),
            )
        )
    if proxied.model_calls == 0:
        bypass = (
            "It must create its SDK client inside the run (the base URL is read from "
            "OPENAI_BASE_URL / ANTHROPIC_BASE_URL when the client is created) and not "
            f"pass its own base_url. {NO_CALLS_HINT}"
        )
        # A crash first: an agent that failed before its first call says why it made none.
        raise _Stop(
            FrozenOutcome(
                False,
                f"{nothing}: the agent made no model call through the capture proxy. {bypass}"
                if error is None
                else f"{nothing}: the agent failed before any model call reached the capture "
                f"proxy: {type(error).__name__}: {error}\n(If it had made a call and it went "
                f"elsewhere: {bypass})",
            )
        )
    if error is not None:
        raise _Stop(
            FrozenOutcome(False, f"{nothing}: the agent failed: {type(error).__name__}: {error}")
        )
    assert proxied.recording is not None
    proxied.recording.save(run.recording)
    out = _write(run.golden_path, None, _result(proxied, output, None), run.config, None)
    out.written.insert(0, run.recording)
    return said_what_moved(out, before, run.config)


def _stop_if_replay_failed(
    proxied: ProxyRunResult, error: BaseException | None, guard: block_network | None
) -> None:
    """Stop the test when the replay could not run the agent to its end: the network
    guard blocked it, a model call had no recorded answer, or the agent failed."""
    if guard is not None:
        say_elsewhere(guard)
    if guard is not None and guard.blocks:
        raise _Stop(FrozenOutcome(False, describe_blocks(guard.blocks)))
    if proxied.replay_errors:
        raise _Stop(
            FrozenOutcome(
                False,
                f"{len(proxied.replay_errors)} model call(s) had no recorded response:\n"
                + "\n".join(proxied.replay_errors),
                replay_mismatches=list(proxied.replay_errors),
            )
        )
    if error is not None:
        raise _Stop(
            FrozenOutcome(False, f"the replayed agent failed: {type(error).__name__}: {error}")
        )


def _unused_notes(run: _ProxiedRun, unused: list[str], moved: list[str]) -> str:
    """The notes on recorded model calls the replay did not use, and on requests sent with
    other sampling settings than recorded (empty when neither)."""
    notes = ""
    if moved:
        notes += (
            f"\n{len(moved)} request(s) were sent with other sampling settings than "
            f"{run.recording} recorded; their recorded answers do not show what the model "
            "does now (--golden-strict fails here):\n  " + "\n  ".join(moved)
        )
    if unused:
        notes += f"\n{len(unused)} recorded model call(s) of {run.recording} were not used:\n  "
        notes += "\n  ".join(unused)
    if moved or unused:
        notes += f"\nIf the agent changed on purpose, re-record with:\n  {run.record_cmd}"
    return notes


def _upstream_moved(run: _ProxiedRun) -> list[str]:
    """'the recording was made against openai/gpt-4o, the scenario now runs ...' where the
    suite now names another model than the recording's upstream (empty: the same)."""
    if run.suite_model is None:
        return []
    from evalrunner.proxy._recording import Recording

    recorded = Recording.load(run.recording).upstream
    if recorded is None or recorded == run.suite_model:
        return []
    return [f"recorded against {recorded}, the scenario now runs {run.suite_model}"]


def _replayed(run: _ProxiedRun, *, update: bool) -> FrozenOutcome:
    if not run.recording.exists():
        raise _Stop(
            FrozenOutcome(
                False,
                f"no recorded model responses at {run.recording}; record them (needs the live "
                f"model) with:\n  {run.record_cmd}{moved_hint(run.recording)}",
            )
        )
    golden = None if update else golden_to_check(run.golden_path, run.update_cmd)
    proxied, output, error, guard = run.run("replay", None)
    _stop_if_replay_failed(proxied, error, guard)
    result = _result(proxied, output, None)
    unused, moved = list(proxied.unused_recorded), list(proxied.settings_moved)
    moved += _upstream_moved(run)
    notes = _unused_notes(run, unused, moved)
    stale = run.record_cmd if unused or moved else None
    if golden is None:  # --golden-update
        out = rewrite_golden(run.golden_path, result, run.config, notes, stale)
        out.unused_recorded = unused
        return out
    deltas, message = compare_with_golden(
        golden, result, run.golden_path, run.config, run.update_cmd, notes, stale
    )
    if not deltas:
        return FrozenOutcome(
            not (run.strict and (unused or moved)),
            notes.strip(),
            result=result,
            unused_recorded=unused,
        )
    cause = no_calls_cause(proxied.model_calls, len(unused))
    return FrozenOutcome(False, cause + message, deltas, result=result, unused_recorded=unused)
