"""Frozen mode: replay recorded model responses, capture, normalise, compare with a golden.

Three modes, one function:

- ``check``: strict replay (no network); fail on any behavioural delta.
- ``update``: replay the existing recording, rewrite the golden, report what moved.
- ``record``: call the live model, rewrite recording and golden.

Missing files are never created in ``check`` mode: the message says which
command creates them.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalrunner._redact import redact, redact_text
from evalrunner.core._diff import Delta, diff_shapes, render, summary
from evalrunner.core._faults import ENDPOINT_REFUSALS, describe
from evalrunner.core._normalize import DEFAULT_CONFIG, NormalizeConfig, normalize
from evalrunner.core._scope import CaptureResult, arun_captured, install, run_captured
from evalrunner.core._shape import shape
from evalrunner.core._steps import SCHEMA_VERSION
from evalrunner.core._warnings import missed_calls_message
from evalrunner.errors import FileFormatError, NewerFormat, ReplayError
from evalrunner.frozen._golden import Golden, moved_hint, script_path_for
from evalrunner.frozen._network import block_network, describe_blocks, say_elsewhere
from evalrunner.frozen._replay import Recorder, Replayer
from evalrunner.frozen._script import SCRIPT_FORMAT_VERSION, Script

Mode = Literal["check", "update", "record"]

NO_CALLS_HINT = (
    "Capture sees litellm.completion/acompletion called through the module; an agent on a "
    "provider SDK (openai, anthropic, a framework on them) or `from litellm import "
    "completion` bound before capture bypasses it. Run such an agent through the capture "
    "proxy: golden_trajectory.proxied(fn, ...) or golden_trajectory.command([...]). A "
    "response cache (dspy's ~/.dspy_cache, a LangChain or HTTP cache) also answers without "
    "a model call: turn it off for runs (docs/proxy.md)."
)


def no_calls_cause(made: int, recorded: int) -> str:
    """The likely cause, first in the message, when a replay made no call the recording holds.

    Without it the failure reads as a behaviour change ("llm_calls 3 -> 0")
    while the agent's model calls never reached evalrunner at all.
    """
    if made or not recorded:
        return ""
    return (
        f"the agent made no model call, while the recording holds {recorded}: a response "
        "cache answered it (dspy's ~/.dspy_cache, a LangChain or HTTP cache: turn it off "
        "for runs, docs/proxy.md), or its client was created before the run and bypassed "
        "evalrunner.\n"
    )


# Recorded errors that mean "no model behind this call", not model behaviour.
_ENDPOINT_REFUSALS = ENDPOINT_REFUSALS | {"APIConnectionError"}


@dataclass
class FrozenOutcome:
    """What a frozen run found. ``ok`` False means the test fails with ``message``."""

    ok: bool
    message: str = ""
    deltas: list[Delta] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    result: CaptureResult | None = None
    replay_mismatches: list[str] = field(default_factory=list)
    unused_recorded: list[str] = field(default_factory=list)  # recorded calls nobody asked for


def _normalized(trajectory: dict[str, Any], config: NormalizeConfig) -> dict[str, Any]:
    # Goldens are written redacted; compare in the same form, or a run whose
    # prompt holds a secret could never match its own golden.
    normalized: dict[str, Any] = redact(normalize(trajectory, config))
    return normalized


@dataclass(frozen=True)
class Judging:
    """Where a frozen run's golden is and how to report on it (what every mode needs)."""

    golden_path: Path
    config: NormalizeConfig
    update_cmd: str
    record_cmd: str
    strict: bool
    name: str


@dataclass(frozen=True)
class _Run(Judging):
    """The agent call, in process under capture."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    model: str | None = None
    """A suite scenario's model label: kept in the recording, compared on replay."""

    @property
    def script_path(self) -> Path:
        return script_path_for(self.golden_path)

    def capture(self, **opts: Any) -> CaptureResult:
        if inspect.iscoroutinefunction(self.fn):
            return asyncio.run(
                arun_captured(self.fn, *self.args, name=self.name, **opts, **self.kwargs)
            )
        return run_captured(self.fn, *self.args, name=self.name, **opts, **self.kwargs)


class _Stop(Exception):
    """Ends a frozen run early with the outcome that says why (a missing file, a replay error)."""

    def __init__(self, outcome: FrozenOutcome) -> None:
        super().__init__(outcome.message)
        self.outcome = outcome


def run_frozen(
    fn: Callable[..., Any],
    *args: Any,
    golden_path: Path,
    mode: Mode = "check",
    config: NormalizeConfig = DEFAULT_CONFIG,
    update_cmd: str = "pytest --golden-update",
    record_cmd: str = "pytest --golden-record",
    strict: bool = False,
    name: str = "agent",
    suite_model: str | None = None,
    **kwargs: Any,
) -> FrozenOutcome:
    """Run ``fn(*args, **kwargs)`` in frozen mode against ``golden_path``; ``suite_model``: a
    suite scenario's model label (kept in the recording; a replay against another is
    named). Named so that no agent's own ``model`` keyword is taken for it."""
    run = _Run(
        golden_path, config, update_cmd, record_cmd, strict, name, fn, args, kwargs, suite_model
    )
    try:
        return _MODES[mode](run)
    except _Stop as stop:
        return stop.outcome


def _record(run: _Run) -> FrozenOutcome:
    """Call the live model; write the recording and the golden unless the endpoint failed."""
    before = golden_before(run.golden_path)  # first: a newer release's golden stops it
    recorder = Recorder()
    result = run.capture(recorder=recorder)
    failed = result.infra.final_error if result.infra is not None else None
    errors = [e.error for e in recorder.script.entries if e.error is not None]
    if failed is not None or any(e.type in _ENDPOINT_REFUSALS for e in errors):
        # An endpoint that failed (no key, down, rate-limited) recorded nothing
        # worth keeping; writing it would make the failure the expected behaviour.
        what = describe(failed) if failed is not None else f"{errors[0].type}: {errors[0].message}"
        return FrozenOutcome(
            False,
            f"recording failed, nothing written: the model endpoint failed ({what[:300]})",
        )
    _stop_if_crashed(run, result, "recording failed, nothing written")
    if result.missed_calls:
        # Replay could not answer the lost calls, and the golden would hold part of the run.
        seen = len(recorder.script.entries)
        return FrozenOutcome(
            False,
            "recording incomplete, nothing written: "
            + missed_calls_message(seen, result.missed_calls),
        )
    if not recorder.script.entries:
        # An empty recording and golden would pass forever while testing nothing.
        return FrozenOutcome(
            False,
            "recording failed, nothing written: the agent made no model call that capture "
            "saw. " + NO_CALLS_HINT,
        )
    recorder.script.model = run.model
    out = _write(run.golden_path, run.script_path, result, run.config, recorder.script)
    return said_what_moved(out, before, run.config)


def golden_before(golden_path: Path) -> Golden | None:
    """The golden a recording is about to replace, read to say what moved; None when there is
    none, or none readable (recording replaces it all the same). One a newer release wrote
    stops the recording before it starts: never regenerated over (``NewerFormat``), as
    --golden-update leaves it."""
    try:
        return Golden.load(golden_path) if golden_path.exists() else None
    except NewerFormat as exc:
        raise _Stop(FrozenOutcome(False, f"{exc}; --golden-record left it as it is")) from None
    except FileFormatError:
        return None


def said_what_moved(
    out: FrozenOutcome, before: Golden | None, config: NormalizeConfig
) -> FrozenOutcome:
    """``wrote <files>``, and what moved from the golden it replaced, in the words a check
    fails with: whoever re-records by habit would otherwise never see the behaviour change
    that a check would have failed on."""
    out.message = f"wrote {', '.join(map(str, out.written))}"
    if before is not None and out.result is not None:
        normalized = _normalized(out.result.trajectory, config)
        out.deltas = diff_shapes(before.behaviour, shape(normalized))
        out.message += f": {summary(out.deltas, before.trajectory, normalized)}"
    return out


def _update(run: _Run) -> FrozenOutcome:
    """Replay the recording, rewrite the golden and report what moved."""
    _require_script(run)
    result, replayer = _replay(run)
    _stop_if_crashed(run, result, f"{run.golden_path}: not updated")
    notes = _notes(run, replayer)
    if run.strict and replayer.unused:
        raise _Stop(_outcome(False, notes.strip(), replayer))
    out = rewrite_golden(run.golden_path, result, run.config, notes, _stale(run, replayer))
    upgraded = replayer.upgraded()
    if upgraded is not None:
        upgraded.save(run.script_path)
        out.message += f"\nrewrote {run.script_path} in script format {SCRIPT_FORMAT_VERSION}"
    out.replay_mismatches = replayer.mismatches
    out.unused_recorded = replayer.unused_entries()
    return out


def _check(run: _Run) -> FrozenOutcome:
    """Replay the recording strictly offline; fail on any behavioural delta from the golden."""
    _require_script(run)
    golden = golden_to_check(run.golden_path, run.update_cmd)
    result, replayer = _replay(run)
    _stop_if_crashed(run, result, f"{run.golden_path}: the replayed run failed")
    notes = _notes(run, replayer)
    deltas, message = compare_with_golden(
        golden, result, run.golden_path, run.config, run.update_cmd, notes, _stale(run, replayer)
    )
    if not deltas:
        # Under --golden-strict a recorded call the run did not use fails it.
        ok = not (run.strict and replayer.unused)
        return _outcome(ok, notes.strip(), replayer, result=result)
    cause = no_calls_cause(replayer.calls, len(replayer.script.entries))
    return _outcome(False, cause + message, replayer, deltas, result=result)


def rewrite_golden(
    golden_path: Path,
    result: CaptureResult,
    config: NormalizeConfig,
    notes: str,
    stale: str | None = None,
) -> FrozenOutcome:
    """--golden-update: write the golden from a replayed run; the message says what moved.

    ``stale``: the re-record command, when the recording no longer answers what the agent
    asks (requests that differed, calls unused): the golden is then written from answers
    to other requests, and the message says so."""
    unreadable = None
    try:
        old = Golden.load(golden_path) if golden_path.exists() else None
    except NewerFormat as exc:
        # A teammate's newer evalrunner wrote it; rewritten here, it would quietly go back
        # to the older form.
        return FrozenOutcome(False, f"{exc}; --golden-update left it as it is")
    except FileFormatError as exc:
        old, unreadable = None, exc  # an unreadable golden is what --golden-update replaces
    was = golden_path.read_bytes() if old is not None else None
    out = _write(golden_path, None, result, config, None)
    if old is not None:
        moved = diff_shapes(old.shape, shape(_normalized(result.trajectory, config)))
        out.deltas = moved
        # "updated" only for a file whose bytes changed: reviewers look for its diff.
        verb = "unchanged" if golden_path.read_bytes() == was else "updated"
        out.message = f"{verb} {golden_path}: {summary(moved)}"
    elif unreadable is not None:
        out.message = f"replaced {golden_path}, which could not be read ({unreadable})"
    else:
        out.message = f"created {golden_path}"
    out.message += notes
    if stale is not None:
        out.message += (
            f"\nwarning: {golden_path.name} was written from answers recorded for other "
            f"requests, not from what the agent now does; re-record it with:\n  {stale}"
        )
    return out


def compare_with_golden(
    golden: Golden,
    result: CaptureResult,
    golden_path: Path,
    config: NormalizeConfig,
    update_cmd: str,
    notes: str,
    stale: str | None = None,
) -> tuple[list[Delta], str]:
    """The behavioural deltas from the golden, and the failure message when there are any.

    ``stale``: the re-record command, when the recording no longer answers what the agent
    asks. The fix is then to re-record: an update would write a golden from the old
    answers, which passes and tests what the agent no longer does."""
    normalized = _normalized(result.trajectory, config)
    # Compare against the golden's trajectory, not its stored shape: a
    # hand-edited shape must not hide a change.
    deltas = diff_shapes(golden.behaviour, shape(normalized))
    if not deltas:
        return deltas, ""
    message = (
        f"{golden_path}: {summary(deltas, golden.trajectory, normalized)}\n\n"
        + render(golden.trajectory, normalized, deltas)
        + notes
        + (
            f"\n\nIf this change is intended, update the golden with:\n  {update_cmd}"
            if stale is None
            else "\n\nThe recording no longer answers what the agent asks, so --golden-update "
            "would write a golden from stale answers. If this change is intended, re-record "
            f"with:\n  {stale}"
        )
    )
    return deltas, message


def _stale(run: _Run, replayer: Replayer) -> str | None:
    """The re-record command when the recording no longer answers the agent's requests."""
    return run.record_cmd if replayer.mismatches or replayer.unused else None


def _notes(run: _Run, replayer: Replayer) -> str:
    """What the replay noticed beside the trajectory: requests that differed, calls unused."""
    notes = ""
    if replayer.mismatches:
        notes = (
            f"\n{len(replayer.mismatches)} request(s) differed from the recording:\n  "
            + "\n  ".join(replayer.mismatches)
        )
    unused = replayer.unused_entries()
    if unused:
        notes += (
            f"\n{len(unused)} recorded model call(s) of {run.script_path} were not used "
            "(the agent now makes fewer calls, or the recording holds extra ones):\n  "
            + "\n  ".join(unused)
            + ("" if run.strict else "\n(--golden-strict fails on this)")
            + f"\nIf the agent changed on purpose, re-record with:\n  {run.record_cmd}"
        )
    return notes


def _outcome(
    ok: bool,
    message: str,
    replayer: Replayer,
    deltas: list[Delta] | None = None,
    result: CaptureResult | None = None,
) -> FrozenOutcome:
    return FrozenOutcome(
        ok,
        message,
        deltas or [],
        result=result,
        replay_mismatches=replayer.mismatches,
        unused_recorded=replayer.unused_entries(),
    )


_MODES: dict[Mode, Callable[[_Run], FrozenOutcome]] = {
    "check": _check,
    "update": _update,
    "record": _record,
}


def _require_script(run: _Run) -> None:
    # Replay cannot invent model responses: no recording, no run (and nothing created).
    if not run.script_path.exists():
        raise _Stop(
            FrozenOutcome(
                False,
                f"no recorded model responses at {run.script_path}; record them (needs the live model) with:\n"
                f"  {run.record_cmd}{moved_hint(run.script_path)}",
            )
        )


def golden_to_check(golden_path: Path, update_cmd: str) -> Golden:
    """The golden a check compares with; a missing or outdated one stops the run, saying how to fix it."""
    if not golden_path.exists():
        raise _Stop(
            FrozenOutcome(
                False,
                f"no golden at {golden_path}; create it from the recording with:\n  {update_cmd}",
            )
        )
    golden = Golden.load(golden_path)
    if golden.schema_version != SCHEMA_VERSION:
        raise _Stop(
            FrozenOutcome(
                False,
                f"{golden_path}: golden recorded under {golden.schema_version}, running {SCHEMA_VERSION}; "
                f"regenerate it from its recording with:\n  {update_cmd}",
            )
        )
    return golden


def _replay(run: _Run) -> tuple[CaptureResult, Replayer]:
    """Run the agent against the recording with the network blocked."""
    script = Script.load(run.script_path, run.record_cmd)
    replayer = Replayer(
        script,
        strict=run.strict,
        source=str(run.script_path),
        redo=run.record_cmd,
        # The golden's own masks: the defaults are in every recorded view already.
        masks=tuple(m for m in run.config.masks if m not in DEFAULT_CONFIG.masks),
        model=run.model,
    )
    install()  # import litellm before the network is blocked
    guard = block_network()
    try:
        with guard:
            result = run.capture(replay=replayer)
    except ReplayError as exc:
        _stop_if_network_used(guard, replayer)
        raise _Stop(
            FrozenOutcome(
                False, f"{type(exc).__name__}: {exc}", replay_mismatches=replayer.mismatches
            )
        ) from None
    _stop_if_network_used(guard, replayer)
    return result, replayer


def _stop_if_crashed(run: _Run, result: CaptureResult, what: str) -> None:
    """Fail a run whose agent raised, with its traceback: a crash is a fault to fix, never
    behaviour a golden keeps (a golden of a crash would pass for as long as the agent
    keeps raising, where a live night counts every such run as crashed)."""
    if result.error is None:
        return
    error = f"{type(result.error).__name__}: {result.error}"
    raise _Stop(
        FrozenOutcome(
            False,
            redact_text(
                f"{what}: the agent raised {error}\n\n{(result.traceback or '').rstrip()}\n\n"
                "A run that raises is never kept as behaviour: fix the agent (or handle the "
                "error inside it), then run the test again; if its behaviour changed on "
                f"purpose, record it with:\n  {run.record_cmd}"
            ),
            result=result,
        )
    )


def _stop_if_network_used(guard: block_network, replayer: Replayer) -> None:
    # Whatever the agent did with the NetworkBlocked (caught it, lost it in a
    # thread, never saw it: a child process), a blocked attempt fails the run.
    say_elsewhere(guard)
    if guard.blocks:
        raise _Stop(
            FrozenOutcome(
                False, describe_blocks(guard.blocks), replay_mismatches=replayer.mismatches
            )
        )


def _write(
    golden_path: Path,
    script_path: Path | None,
    result: CaptureResult,
    config: NormalizeConfig,
    script: Script | None,
) -> FrozenOutcome:
    normalized = _normalized(result.trajectory, config)
    golden = Golden(
        schema_version=normalized["schema_version"], shape=shape(normalized), trajectory=normalized
    )
    written = []
    if script is not None and script_path is not None:
        script.save(script_path)
        written.append(script_path)
    golden.save(golden_path)
    written.append(golden_path)
    return FrozenOutcome(
        True, f"wrote {', '.join(map(str, written))}", written=written, result=result
    )
