"""Subprocess agents: a scenario's ``command:`` run under the capture proxy.

Any agent in any language reaches its model through a base URL. The night
starts one capture proxy (pass-through: forward and capture, record nothing)
when its first command run begins; each run gets its own base URL
(``/runs/<run-id>/v1``), so concurrent runs never mix. The command runs with
``OPENAI_BASE_URL``, ``OPENAI_API_BASE``, ``ANTHROPIC_BASE_URL`` and a dummy
key pointing there; the proxy forwards each call to the run's endpoint under
the suite's retry policy, and the trajectory is the proxy's.

How a command run ends becomes a :class:`~evalrunner.core._scope.CaptureResult`,
so the rest of the runner (classification, checks, run files) is the one
in-process agents use:

- an upstream fault the proxy's retries did not cure: ``infra.final_error``
  (``infra_error``), whatever the command did with the error it got;
- the run's ``timeout_s`` passed: the process group is killed (``timed_out``);
- a non-zero exit or a signal: ``error`` is :class:`CommandFailed` with the
  tail of stderr (``crashed``);
- otherwise the final answer is read from stdout (:func:`final_answer`).

A scenario with ``trajectory_file: true`` takes the run's trajectory from the file the
command wrote (its ATIF trajectory or its own OTLP JSON trace) instead of the proxy's; a
command that wrote none, or one that cannot be read, crashed
(:class:`~evalrunner.suite._contract.NoTrajectoryWritten`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrunner._net import no_proxy
from evalrunner._redact import register_env_secrets
from evalrunner.core._faults import EndpointFault
from evalrunner.core._scope import CaptureResult
from evalrunner.suite._contract import (
    TRAJECTORY_FILE,
    NoTrajectoryWritten,
    command_argv,
    final_answer,
    output_text,
    stderr_tail,
    trajectory_file,
    written_answer,
    written_trajectory,
)

if TYPE_CHECKING:
    from evalrunner.core._transport import Gate
    from evalrunner.endpoints._endpoints import Endpoint
    from evalrunner.live._schedule import Job
    from evalrunner.proxy._runs import ProxyRunResult
    from evalrunner.proxy._server import ProxyServer

__all__ = ["CommandAgents", "CommandFailed"]


class CommandFailed(Exception):
    """A command agent exited non-zero or was killed by a signal (the run crashed)."""


class NoCallReachedProxy(EndpointFault):
    """A command that failed connecting somewhere while no call of it reached the proxy:
    its client went around the proxy (a base URL written into the agent), so the run
    measured nothing of the model; counted with infrastructure faults, not as a crash."""


class NoKeyForProxy(NoCallReachedProxy):
    """A command whose requests came to the proxy without the key it was given, so none
    reached the model: the agent's wiring, counted as :class:`NoCallReachedProxy` is."""


# What SDKs and runtimes print when a connection fails (Python, Node.js, curl).
_CONNECTION_FAILED = re.compile(
    r"APIConnectionError|ConnectError|ConnectionError|Connection (?:error|refused)|"
    r"getaddrinfo|Name or service not known|nodename nor servname|Could not resolve host|"
    r"ENOTFOUND|ECONNREFUSED|EAI_AGAIN|Failed to establish a new connection",
    re.IGNORECASE,
)


def _went_around_the_proxy(problem: CommandFailed, calls: int, stderr: str) -> BaseException:
    said = [line.strip() for line in stderr.splitlines() if _CONNECTION_FAILED.search(line)]
    if calls or not said:
        return problem  # its own bug, before any call: a crash, which is behaviour
    fault = NoCallReachedProxy(
        "no model calls: no model call reached the capture proxy; is the agent's base URL "
        "hard-coded instead of read from OPENAI_BASE_URL / ANTHROPIC_BASE_URL? It failed "
        f"to connect: {said[-1][:120]}"
    )
    fault.__cause__ = problem
    return fault


class ProxyCannotCarry(EndpointFault):
    """The capture proxy refused a request for a feature it does not carry (extended
    thinking, a built-in tool): evalrunner's limit, so the run is an infra_error naming it,
    never the agent's crash."""


class UpstreamRefused(Exception):
    """The model endpoint refused one of the command's requests (it got an HTTP error)."""


def _exit_problem(returncode: int, stderr: str) -> CommandFailed | None:
    if returncode == 0:
        return None
    if returncode < 0:
        try:
            what = f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            what = f"was killed by signal {-returncode}"
    else:
        what = f"exited with status {returncode}"
    tail = stderr_tail(stderr)
    return CommandFailed(f"command {what}" + (f"; stderr: {tail}" if tail else "; no stderr"))


async def _communicate(
    argv: list[str], env: Mapping[str, str], cwd: str | None, timeout: float
) -> tuple[int | None, str, str]:
    """Run to the end or the timeout (returncode None: killed, with its whole process group)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,  # its own process group: a timeout kills its children too
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        _kill(proc.pid)
        await proc.wait()
        return None, "", ""
    except asyncio.CancelledError:  # the night was interrupted: leave nothing running
        _kill(proc.pid)
        raise
    return proc.returncode, output_text(out), output_text(err)


def _with_no_proxy(env: dict[str, str], host: str) -> dict[str, str]:
    """The proxy is on loopback: an HTTP(S)_PROXY of the machine must not carry the calls."""
    return {**env, **no_proxy(env, (host, "localhost"))}


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class CommandAgents:
    """The subprocess agents of one night, all through one capture proxy (started lazily)."""

    def __init__(self) -> None:
        self._proxy: ProxyServer | None = None
        self._starting = asyncio.Lock()

    async def _server(self, endpoint: Endpoint) -> ProxyServer:
        from evalrunner.proxy._server import ProxyServer, new_token
        from evalrunner.proxy._upstream import Upstream

        async with self._starting:
            if self._proxy is None:
                proxy = ProxyServer(
                    "passthrough", upstream=Upstream.from_endpoint(endpoint), token=new_token()
                )
                self._proxy = await asyncio.to_thread(proxy.start)
        return self._proxy

    async def run(self, job: Job, gate: Gate | None = None) -> CaptureResult:
        """One run of a command scenario: the process, its proxied calls, how it ended.

        ``gate``: the night's shared rate limit for the run's model; the proxy asks
        it before each call it forwards, as the in-process transport does.
        """
        from evalrunner.proxy._upstream import Upstream

        sc, ep = job.scenario, job.endpoint
        assert sc.command is not None
        proxy = await self._server(ep)
        run_id = job.run_id
        proxy.open_run(
            run_id, upstream=Upstream.from_endpoint(ep), retry=sc.retry, name=sc.id, gate=gate
        )
        register_env_secrets(sc.env)
        env = _with_no_proxy({**os.environ, **sc.env, **proxy.run_env(run_id)}, proxy.host)
        returncode: int | None = None
        out = err = ""
        with trajectory_file(sc.trajectory_file) as written:
            if written is not None:
                env[TRAJECTORY_FILE] = str(written)
            try:
                returncode, out, err = await _communicate(
                    command_argv(sc.command, sc.input), env, sc.cwd, sc.timeout_s
                )
            except OSError as exc:  # could not start it at all (removed since the night began)
                err = f"cannot start {sc.command[0]!r}: {exc.strerror or exc}"
                returncode = 127
            finally:
                result = await asyncio.to_thread(proxy.finish_run, run_id)
            error = _why_it_failed(returncode, err, result, sc.timeout_s)
            trajectory, error = _taken(written, result.trajectory, error)
        timed_out = returncode is None
        answer = written_answer(out, trajectory) if sc.trajectory_file else final_answer(out)
        return CaptureResult(
            trajectory=trajectory,
            output=None if error is not None else answer,
            error=error,
            traceback=stderr_tail(err) if error is not None else None,
            replay_errors=result.replay_errors,
            infra=result.infra,
            timed_out=timed_out,
            first_request=result.first_request,
        )

    def close(self) -> None:
        if self._proxy is not None:
            self._proxy.stop()
            self._proxy = None


def _taken(
    written: Path | None, proxied: dict[str, Any], error: BaseException | None
) -> tuple[dict[str, Any], BaseException | None]:
    """The run's trajectory: the one the command wrote where it was to write one, else the
    proxy's; and why the run failed, a trajectory it was to write and did not included. A
    run that failed already keeps the proxy's trajectory where it wrote none."""
    if written is None:
        return proxied, error
    try:
        return written_trajectory(written), error
    except NoTrajectoryWritten as exc:
        return proxied, error if error is not None else exc


def _why_it_failed(
    returncode: int | None, stderr: str, result: ProxyRunResult, timeout_s: float
) -> BaseException | None:
    """Why a command run failed, from how it ended and what its proxy saw (None: it did not)."""
    if returncode is None:
        return TimeoutError(f"run timed out after {timeout_s:g} s")
    if not result.model_calls and any(r.startswith("401:") for r in result.refusals):
        # Its requests reached the proxy without the key the proxy gave it: the agent's
        # wiring, like a base URL it ignored; the model was never asked, exit 0 or not.
        return NoKeyForProxy(
            "no model calls: the capture proxy refused the agent's requests, which came "
            "without the key it was given; send OPENAI_API_KEY (ANTHROPIC_API_KEY) as "
            "the bearer token or x-api-key"
        )
    if result.unsupported:
        # Whether the command then gave up or went on without it, the run is not the
        # agent as it is: our refusal shaped it.
        return ProxyCannotCarry(
            f"the capture proxy cannot carry the agent's request: {result.unsupported[0]} "
            "(evalrunner's limit, not the agent's behaviour; docs/proxy.md)"
        )
    problem = _exit_problem(returncode, stderr)
    if problem is None:
        return None
    error: BaseException
    if result.refusals:
        # What the proxy turned away is why the command gave up: say that first.
        error = CommandFailed(
            f"the capture proxy refused its request ({result.refusals[0]}); {problem}"
        )
    else:
        error = _went_around_the_proxy(problem, result.model_calls, stderr)
    if result.upstream_errors:
        # What the model's endpoint refused (e.g. the context window) is why
        # the command gave up: the classifier reads the cause chain.
        error.__cause__ = UpstreamRefused(result.upstream_errors[-1])
    return error
