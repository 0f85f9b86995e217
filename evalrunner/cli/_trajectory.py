"""``evalrunner show`` and ``evalrunner diff``: ATIF files from any tool, read like goldens.

evalrunner's own goldens and run files are read too (the trajectory inside them).

Both load leniently (known deviations of other producers are repaired, each
repair said on stderr as a warning), normalise, and shape, exactly as frozen
mode does; ``diff`` exits 1 when the behaviour differs, so it fits a script.
"""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path
from typing import Any

import click

from evalrunner._jsonio import dumps, read_json
from evalrunner._next import NextStep, Placeholder
from evalrunner.cli._options import terminal_safe
from evalrunner.core import Shape, diff, load_trajectory, normalize, render, shape, summary
from evalrunner.core._atif import one_trace
from evalrunner.core._shape import tool_errors
from evalrunner.errors import FileFormatError


def _load(path: Path, strict: bool) -> dict[str, Any]:
    _refuse_history(path)  # before reading it as text, which it is not
    _refuse_yaml(path)  # before reading it as JSON, which it is not
    found = one_trace(read_json(path, "trajectory", lines=True), str(path))
    source, name = _trajectory_in(path, found)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc = load_trajectory(source, strict=strict, name=name)
    for warning in caught:
        click.echo(terminal_safe(f"warning: {warning.message}"), err=True)
    return normalize(doc)


def _trajectory_in(path: Path, found: Any) -> tuple[Path | dict[str, Any], str | None]:
    """The trajectory ``path`` holds, and what to call it in messages.

    evalrunner's files that hold none are refused, each saying what it is and what
    reads it: read as a trajectory, they failed on a field no such file has.
    """
    if not isinstance(found, dict) or "steps" in found:
        return path, None
    if isinstance(found.get("trajectory"), dict):
        # evalrunner's own files hold the trajectory under "trajectory": a golden
        # (beside its shape) and a results directory's run file (beside its record).
        return found["trajectory"], f"{path}: trajectory"
    if "shape" in found or "record" in found:
        # A golden (or a run file) whose "trajectory" was cut out or mangled: read as a
        # trajectory it failed on "$.agent", a field no such file has at its top.
        raise FileFormatError(
            f"{path}: trajectory: "
            + ("Field required" if "trajectory" not in found else "must be an object")
            + "; regenerate the golden with --golden-update (a run file: run the night again)"
        )
    if "nights" in found and "fingerprint" in found:
        # A baseline: what it can show is the trajectory of its typical run.
        if not isinstance(found.get("typical"), dict):
            raise FileFormatError(
                f"{path}: a baseline file without a typical run's trajectory; show and diff "
                "read ATIF trajectories, goldens and results' run files"
            )
        return found["typical"], f"{path}: typical run"
    _refuse_recording(path, found)
    _refuse_manifest(path, found)
    return path, None


def _refuse_recording(path: Path, found: dict[str, Any]) -> None:
    """A frozen run's recording: its golden is ``<stem>.json`` beside it."""
    from evalrunner.frozen._golden import RECORDINGS

    ending = next((end for end in RECORDINGS if path.name.endswith(end)), None)
    if ending is None:
        if "calls" in found or "entries" in found:  # renamed, so its golden is unknown
            raise FileFormatError(
                f"{path}: a recording of model calls, not a trajectory; its golden is the "
                "<test>.json beside its <test>.llm.json or <test>.proxy.json"
            )
        return
    golden = path.with_name(path.name.removesuffix(ending) + ".json")
    of = "a judge's grades" if ending == ".judge.json" else "model calls"
    what = f"{path}: a recording of {of}, not a trajectory"
    if not golden.is_file():
        raise FileFormatError(
            f"{what}; its golden would be {golden.name} beside it, which is not there "
            "(pytest --golden-update writes it)"
        )
    raise FileFormatError(
        f"{what}; its golden is {golden.name} beside it: {NextStep('show', paths=(str(golden),))}"
    )


def _refuse_manifest(path: Path, found: dict[str, Any]) -> None:
    """A results directory's manifest: the night's plan, its runs in files beside it."""
    if not {"suite", "models", "runs", "scenarios"} <= found.keys():
        return
    results = path.parent
    example = next(results.glob("runs/*/*/*.json"), None)
    suite = found["suite"] if isinstance(found["suite"], str) else Placeholder("<suite>")
    runs = f"e.g. {example}" if example else f"{results}/runs/<scenario>/<model>/<index>.json"
    raise FileFormatError(
        f"{path}: a results directory's manifest, not a trajectory; show and diff read its "
        f"run files ({runs}); for the night as a whole: "
        f"{NextStep('explain', suite, ('--results', str(results)))}, or "
        f"{NextStep('compare', paths=(Placeholder('<reference results>'), str(results)))}"
    )


_HISTORY = (".parquet", ".json.gz")
"""A run history's files: ``<history>/<suite>/<time>-<random>.parquet`` (older: .json.gz)."""


def _refuse_history(path: Path) -> None:
    if path.name.endswith(_HISTORY):
        raise FileFormatError(
            f"{path}: a run history file, not a trajectory; read the history with evalrunner "
            f"report --history {path.parent.parent}"
        )


def _refuse_yaml(path: Path) -> None:
    if path.suffix in (".yaml", ".yml"):  # read as JSON it was "not valid JSON at line 1"
        raise FileFormatError(
            f"{path}: a YAML file (a suite?), not a trajectory; check a suite with evalrunner "
            "validate; show and diff read ATIF trajectories, goldens and results' run files"
        )


def _lines(sh: Shape, failed: int) -> list[str]:
    """``failed``: the tool executions the trajectory marks failed (its spans saw them)."""
    answer = sh.final_answer if sh.final_answer is None else repr(sh.final_answer[:200])
    return [
        f"steps       {sh.step_count}",
        f"model calls {sh.llm_calls}",
        f"tool calls  {sh.tool_calls}  {_tool_line(sh)}"
        + (f"  ({failed} failed)" if failed else ""),
        f"sub-agents  {sh.subagent_count}"
        + (f" ({sh.subagents_crashed} crashed)" if sh.subagents_crashed else ""),
        f"tokens      {sh.prompt_tokens} prompt, {sh.completion_tokens} completion",
        f"crashed     {'yes' if sh.crashed else 'no'}",
        f"answer      {answer}",
    ]


def _tool_line(sh: Shape) -> str:
    """The agent's own tools in order, runs counted (``lookup x300``) and the line cut at
    200 characters; the sub-agents' calls, which the count includes, said apart."""
    runs = ((tool, len(list(same))) for tool, same in itertools.groupby(sh.tools))
    text = " > ".join(t if n == 1 else f"{t} x{n}" for t, n in runs) or "(no tools)"
    if len(text) > 200:
        text = text[:199] + "…"
    by_subagents = sh.tool_calls - len(sh.tools)
    return text + (f"  (+{by_subagents} by sub-agents)" if by_subagents > 0 else "")


_STRICT = click.option(
    "--strict", is_flag=True, help="Refuse deviations from ATIF v1.8 instead of repairing them."
)
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command()
@click.argument("file", type=_FILE)
@_STRICT
@click.option("--json", "as_json", is_flag=True, help="Print the normalised trajectory instead.")
def show(file: Path, strict: bool, as_json: bool) -> None:
    """What an ATIF trajectory file (or an evalrunner golden or run file) did: steps, model and
    tool calls, tokens, answer."""
    doc = _load(file, strict)
    if as_json:
        click.echo(dumps(doc), nl=False)
        return
    lines = _lines(shape(doc), tool_errors(doc))
    outcome = _run_outcome(file)
    if outcome is not None:
        # A run file's record says how the run ended; "crashed" from the trajectory alone
        # would read yes for a run the endpoint failed (it raised too), which is no crash.
        lines = [outcome if line.startswith("crashed ") else line for line in lines]
    click.echo(terminal_safe("\n".join(lines)))


def _run_outcome(path: Path) -> str | None:
    """``outcome     infra_error (reason)`` for a results directory's run file, else None."""
    found = read_json(path, "trajectory", lines=True)
    record = found.get("record") if isinstance(found, dict) else None
    if not isinstance(record, dict) or not isinstance(record.get("outcome"), str):
        return None
    reason = record.get("reason")
    return f"outcome     {record['outcome']}" + (f" ({reason})" if reason else "")


@click.command(name="diff")
@click.argument("golden", type=_FILE)
@click.argument("actual", type=_FILE)
@_STRICT
def diff_cmd(golden: Path, actual: Path, strict: bool) -> None:
    """Compare two ATIF trajectory files (goldens and run files too) as a golden test would;
    exit 1 when behaviour differs."""
    before, after = _load(golden, strict), _load(actual, strict)
    deltas = diff(before, after)
    if not deltas:
        click.echo("no behavioural change")
        return
    click.echo(terminal_safe(f"{golden} -> {actual}: {summary(deltas, before, after)}\n"))
    click.echo(terminal_safe(render(before, after, deltas)))
    raise SystemExit(1)
