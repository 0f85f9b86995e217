"""Results directories: one file per finished run, plus a manifest.

Layout::

    <out>/manifest.json
    <out>/.lock                                       held by the one process writing here
    <out>/runs/<scenario>/<model-slug>/<index>.json   {"record": RunRecord, "trajectory": ATIF}

Each run file is written atomically the moment its run finishes, so a killed
process loses at most the runs in flight, and ``--resume`` finishes the
directory without duplicating or losing runs (run ids are deterministic).

The manifest is the one source of truth about the night: its plan (scenarios,
models, runs, adaptive settings; ``--resume`` continues exactly that plan) and
the runs that belong to it (``run_ids``). Whatever reads the directory (the
run table, ``compare``, ``baseline --from``, :func:`load_records`) reads those
runs and no other file. One process at a time writes a directory:
:func:`claim` holds an exclusive ``fcntl`` lock on ``.lock``, which the
kernel releases when the process ends, however it ends (SIGKILL included).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import queue
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from evalrunner._jsonio import flush_to_disk, read_json, validate_model, write_json
from evalrunner._next import NextStep, Said
from evalrunner.errors import ConfigError, FileFormatError
from evalrunner.suite._record import RunKey, RunRecord, model_slug

if TYPE_CHECKING:
    import pandas as pd

MANIFEST_FORMAT_VERSION = 2
MANIFEST_FORMAT_VERSIONS = (1, 2)
"""Versions read: 1 lacks the plan details and ``run_ids`` (every run file belongs)."""
RUN_FORMAT_VERSION = 4
"""2: records may hold prompt-cache tokens (issue 53); 3: their tool errors, 4: their tool
latency (issue 56); 1 to 3 still read."""
RUN_FORMAT_VERSIONS = (1, 2, 3, 4)
LOCK_NAME = ".lock"


def run_id(key: RunKey) -> str:
    """'<scenario>/<model-slug>/<index>': a run's stable id, and its file's path under runs/."""
    return f"{key.scenario}/{model_slug(key.model)}/{key.index}"


class AdaptiveSettings(BaseModel):
    """``--adaptive``'s settings, as a night was started with them."""

    model_config = ConfigDict(extra="forbid")

    batch: int = Field(
        default=5,
        ge=1,
        description="Runs per look after the first (at half of max_runs), escalation's too.",
    )
    max_runs: int = Field(
        default=20,
        ge=1,
        description="Runs each scenario x model with a baseline is planned for (its N; "
        "escalation may go beyond it).",
    )


class Manifest(BaseModel):
    """What a results directory holds and how it was produced."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = Field(
        default=MANIFEST_FORMAT_VERSION, description="Manifest format version."
    )
    suite: str = Field(description="Suite name.")
    models: list[str] = Field(description="Model labels the suite ran against.")
    runs: dict[str, int] = Field(
        description="Scenario id -> runs per model planned (under --adaptive: for scenario x "
        "models without a baseline; the others run up to adaptive.max_runs)."
    )
    scenarios: dict[str, str] = Field(description="Scenario id -> configuration fingerprint.")
    rows: dict[str, int] | None = Field(
        default=None,
        description="Dataset scenario id -> the rows it runs (runs above are per row); absent "
        "without dataset scenarios.",
    )
    models_by_scenario: dict[str, list[str]] | None = Field(
        default=None,
        description="Scenario id -> the model labels it runs against (format 1: every model).",
    )
    adaptive: AdaptiveSettings | None = Field(
        default=None, description="--adaptive's settings; None for a fixed plan."
    )
    run_ids: list[str] | None = Field(
        default=None,
        description="The runs that belong to this night, as planned so far; those with a file "
        "are its records (format 1: every run file).",
    )
    history_run_ids: list[str] = Field(
        default_factory=list, description="Runs already appended to the run history."
    )
    started_at: str = Field(description="ISO 8601 UTC start of the first invocation.")
    ended_at: str | None = Field(default=None, description="ISO 8601 UTC end, when finished.")
    status: Literal["running", "finished", "interrupted"] = Field(
        default="running", description="Lifecycle."
    )
    evalrunner_version: str = Field(description="evalrunner version that wrote it.")
    invocations: int = Field(
        default=1, description="How many times run/resume worked on this directory."
    )

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Fields format 1 lacked appear only when set, so a format-1 manifest (inside
        # older history files too) is written back exactly as it was read.
        data: dict[str, Any] = handler(self)
        for name in ("models_by_scenario", "adaptive", "run_ids", "rows"):
            if data.get(name) is None:
                data.pop(name, None)
        if not data.get("history_run_ids"):
            data.pop("history_run_ids", None)
        return data

    @field_validator("format_version")
    @classmethod
    def _readable(cls, value: int) -> int:
        if value not in MANIFEST_FORMAT_VERSIONS:
            raise ValueError(
                f"manifest format_version {value} is not supported (this evalrunner reads "
                f"{', '.join(map(str, MANIFEST_FORMAT_VERSIONS))}); upgrade evalrunner"
            )
        return value


class ResultsDir:
    """Reading and writing one results directory."""

    def __init__(self, root: Path) -> None:
        self.shown = Path(root)
        """The directory as given, for messages."""
        # Files go where it was given, even once an in-process agent has changed the
        # working directory (a relative --out moved under the agent's, issue 53).
        self.root = self.shown.absolute()

    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.json"

    def run_path(self, rid: str) -> Path:
        return self.root / "runs" / f"{rid}.json"

    def write_manifest(self, manifest: Manifest) -> None:
        write_json(self.manifest_path, manifest.model_dump(mode="json"))

    def read_manifest(self) -> Manifest:
        return validate_model(
            Manifest, read_json(self.manifest_path, "results manifest"), self.manifest_path
        )

    def write_run(
        self,
        record: RunRecord,
        trajectory: dict[str, Any],
        first_request: dict[str, Any] | None = None,
    ) -> None:
        doc = {
            "format_version": RUN_FORMAT_VERSION,
            "record": record.model_dump(mode="json"),
            "trajectory": trajectory,
        }
        if first_request is not None:
            doc["first_request"] = first_request
        # Not synced one by one: the night's RunWriter flushes its files together.
        write_json(self.run_path(record.run_id), doc, compact=True, sync=False)

    def run_files(self) -> list[Path]:
        return sorted((self.root / "runs").glob("**/*.json"))

    def read_run(self, path: Path) -> tuple[RunRecord, dict[str, Any]]:
        record, trajectory, _ = self.read_run_file(path)
        return record, trajectory

    def read_run_file(self, path: Path) -> tuple[RunRecord, dict[str, Any], dict[str, Any] | None]:
        """The run's record, trajectory and first model request (None in files written
        before run files kept it)."""
        try:
            data = read_json(path, "run record", merged=False)
        except FileFormatError as exc:
            raise FileFormatError(Said(f"{exc}; ", self._damaged_run_fix())) from None
        if not isinstance(data, dict) or data.get("format_version") not in RUN_FORMAT_VERSIONS:
            raise FileFormatError(
                f"{path}: not a run file of a version this evalrunner reads "
                f"({', '.join(map(str, RUN_FORMAT_VERSIONS))}); was it written by a newer "
                "evalrunner, or not by evalrunner at all?"
            )
        record = validate_model(RunRecord, data.get("record"), path, prefix="record.")
        first = data.get("first_request")
        return record, _trajectory_of(data, path), first if isinstance(first, dict) else None

    def _damaged_run_fix(self) -> str:
        """What to do about a run file that cannot be read: a resume runs a run whose file is
        gone again, unless the night is finished (then it is part of the night as made)."""
        try:
            manifest = self.read_manifest()
        except FileFormatError:
            return "restore it from its copy"
        if manifest.status == "finished":
            return "restore it from its copy, or run the night again"
        return Said(
            "restore it from its copy, or delete it and finish the night with ",
            NextStep("run", manifest.suite, ("--out", str(self.shown), "--resume")),
            ", which runs that run again",
        )

    def night_files(self) -> list[Path]:
        """The run files of the runs that belong to the night (the manifest's ``run_ids``).

        Runs of an unfinished night may have no file yet. A finished night wrote every run
        it lists, so one without its file is a damaged directory: read as it is, a baseline
        or a comparison would rest on fewer runs than the night made, and say nothing.
        """
        if not self.manifest_path.exists():
            return self.run_files()
        manifest = self.read_manifest()
        if manifest.run_ids is None:
            return self.run_files()
        listed = sorted(map(self.run_path, set(manifest.run_ids)))
        found = [p for p in listed if p.is_file()]
        if manifest.status == "finished" and len(found) < len(listed):
            missing = [p for p in listed if not p.is_file()]
            raise FileFormatError(
                f"{missing[0]}: missing, though {self.manifest_path.name} lists it among the "
                f"runs of this finished night ({len(missing)} of {len(listed)} run files "
                "missing); restore the directory from its copy, or run the night again"
            )
        return found

    def records(self) -> list[RunRecord]:
        """The night's records: every finished run the manifest lists, and nothing else."""
        return [self.read_run(p)[0] for p in self.night_files()]

    def entries(self) -> list[str]:
        """Names in the directory other than the lock file (none when it does not exist)."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.name != LOCK_NAME)


_Item = tuple[RunRecord, dict[str, Any], dict[str, Any] | None]


class RunWriter:
    """Writes a night's run files on one thread of its own, in the order runs are handed over.

    A run is handed over and the night goes on; the event loop neither waits for the
    file nor is woken when it is written. (Awaiting each write on a pool cost a thread
    hand-off and a wake-up per run, a few per cent of the runner's CPU beside the
    agent's.) The write itself (redaction, the JSON) stays off the loop's thread,
    where a slow disk would hold up every run.

    Each file is whole once written (renamed into place), and a process that dies
    leaves it to the kernel, so a night stopped any way loses none of its finished
    runs. :meth:`close` then puts every file on disk at once, before the manifest
    says the night ended, so a power cut after that loses none either. (An fsync a
    file cost about a sixth of evalrunner's own CPU a run: benchmarks/bench_runner.py.)

    A write that fails stops the night: ``on_failure`` is called (on the writer's thread)
    as it fails, the next :meth:`write` raises its error, and :meth:`close` does if no
    write came after it. Without the call, a night whose last runs were long went on
    until they ended (a run's timeout, minutes) before the failure was seen.
    """

    def __init__(self, results: ResultsDir, on_failure: Callable[[], None] | None = None) -> None:
        self.results = results
        self._on_failure = on_failure
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="evalrunner-write", daemon=True)
        self._thread.start()

    def write(
        self,
        record: RunRecord,
        trajectory: dict[str, Any],
        first_request: dict[str, Any] | None = None,
    ) -> None:
        """Hand one finished run over to be written; raises the error of a write that failed."""
        self.raise_failure()
        self._queue.put((record, trajectory, first_request))

    def close(self) -> None:
        """Write every run handed over, put them on disk and stop the thread; raises a
        failed write's error."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
            flush_to_disk(self.results.root / "runs")
        self.raise_failure()

    def raise_failure(self) -> None:
        """Raise the error of a write that failed, if one did."""
        if self._failed is not None:
            raise self._failed

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._failed is not None:
                continue  # the night stops at its next hand-over: write nothing after the failure
            try:
                self.results.write_run(*item)
            except BaseException as exc:  # raised again on the loop's thread
                self._failed = exc
                if self._on_failure is not None:
                    self._on_failure()


# -- claiming a directory for writing -----------------------------------------------------

_held: dict[str, int] = {}
"""Locks this process holds: real path -> file descriptor. A second claim of the same
directory from this process is refused like any other writer's."""
_held_lock = threading.Lock()


def _holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
    except OSError:
        pid = ""
    return f" (pid {pid})" if pid.isdigit() else ""


def _acquire(root: Path) -> str:
    key = os.path.realpath(root)
    with _held_lock:
        if key in _held:
            raise ConfigError(
                f"{root} is being written by this process already; choose another --out"
            )
        fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            who = _holder(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES, errno.EAGAIN):
                raise ConfigError(f"{root}: cannot lock {LOCK_NAME}: {exc.strerror}") from None
            raise ConfigError(
                f"{root} is being written by another evalrunner{who}; wait for it to finish "
                "(then --resume if it was interrupted), or choose another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _held[key] = fd
        return key


def _release(key: str) -> None:
    with _held_lock:
        os.close(
            _held.pop(key)
        )  # releases the lock; the file stays (removing it would race a new locker)


def make_writable_dir(root: Path, *, what: str, fix: str) -> list[Path]:
    """Create ``root`` (and missing parents) and prove a file can be written there.

    Returns the directories it created, deepest first (for :func:`remove_dirs`);
    every failure is a ConfigError naming ``what`` (e.g. 'history location')
    and ending in ``fix``.
    """
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{what} {root} is a file, not a directory; {fix}")
    created = [p for p in (root, *root.parents) if not p.exists()]
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".probe-"):
            pass
    except OSError as exc:
        remove_dirs(created)
        raise ConfigError(
            f"{what} {root} cannot be written ({exc.strerror or exc}); {fix}"
        ) from None
    return created


def remove_dirs(created: list[Path]) -> None:
    """Remove directories :func:`make_writable_dir` created (deepest first), if still empty."""
    for path in created:  # deepest first
        with contextlib.suppress(OSError):
            (path / LOCK_NAME).unlink(missing_ok=True)
            path.rmdir()


@contextlib.contextmanager
def claim(root: Path, *, resume: bool) -> Iterator[ResultsDir]:
    """Hold ``root`` for writing a night (``resume``: finishing one) until the block ends.

    Checked before anything is written: ``root`` can be created and written to;
    no other process holds it (an exclusive lock, released by the kernel when
    the holder dies, SIGKILL included); and it is what the caller expects: a
    directory with a manifest to resume, or one without results to start in.
    A directory this call created is removed again if the block fails before
    writing a manifest.
    """
    results = ResultsDir(root)
    if resume and not results.manifest_path.exists():
        found = results.entries()
        if found:  # without --resume it is refused too (_check_fresh): say the way out
            raise ConfigError(
                f"{root}: nothing to resume: it holds {', '.join(found[:3])}"
                f"{', ...' if len(found) > 3 else ''} but no manifest.json, so no night "
                "evalrunner can finish; choose an empty or new --out, without --resume"
            )
        raise ConfigError(f"{root}: nothing to resume (no manifest.json); run without --resume")
    created = make_writable_dir(results.root, what="results directory", fix="choose another --out")
    try:
        key = _acquire(results.root)
        try:
            if not resume:
                _check_fresh(results)
            yield results
        finally:
            _release(key)
    except BaseException:
        if created and not results.manifest_path.exists():
            remove_dirs(created)
        raise


def _check_fresh(results: ResultsDir) -> None:
    if results.manifest_path.exists():
        raise ConfigError(
            f"{results.shown} already holds results; pass --resume to finish it, or choose another --out"
        )
    found = results.entries()
    if found:
        shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
        raise ConfigError(
            f"{results.shown} is not empty ({shown}) but holds no manifest.json, so it is no "
            "results directory evalrunner can add to; choose an empty or new --out"
        )


def records_frame(records: list[RunRecord]) -> pd.DataFrame:
    """Records as a DataFrame: one row per run, one column per RunRecord field."""
    import pandas as pd

    columns = list(RunRecord.model_fields)
    # Each field's value, not the record's serialised form (which leaves out fields at
    # their default, as files are written): every column, for every run.
    return pd.DataFrame([[getattr(r, c) for c in columns] for r in records], columns=columns)


def load_records(root: str | Path) -> pd.DataFrame:
    """Load a results directory's per-run records into a pandas DataFrame.

    Columns are the fields of :class:`evalrunner.suite._record.RunRecord`
    (run_id, suite, scenario, model, index, row, outcome, reason, step_count,
    llm_calls, tool_calls, tools, tools_alone, subagent_count, crashed, prompt_tokens,
    completion_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
    judge_cost_usd, tool_errors, tool_latency_s, final_answer, content_hash, latency_s, attempts,
    started_at, checks, scores, judge_grades, judge_agreed). Only the runs
    the manifest lists belong to the night.
    """
    results = ResultsDir(Path(root))
    if not results.manifest_path.exists():
        raise FileFormatError(
            f"{root}: no manifest.json; is this a results directory written by '{NextStep('run')}'?"
        )
    return records_frame(results.records())


def _trajectory_of(data: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """A run file's trajectory, its shape checked as far as every reader walks it (an
    edited ``steps`` that is a string gave `explain` a traceback, issue 53)."""
    trajectory = data.get("trajectory") or {}
    steps = trajectory.get("steps", []) if isinstance(trajectory, dict) else None
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        where = "trajectory" if steps is None else "trajectory.steps"
        raise FileFormatError(
            f"{path}: {where} is not what evalrunner wrote (an object with a list of steps); "
            "the file was edited or damaged: rerun the night, or remove the file and --resume"
        )
    return trajectory
