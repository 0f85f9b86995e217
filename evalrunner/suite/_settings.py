"""A loaded suite: every scenario with its settings decided, once.

:func:`resolve_suite` layers each scenario entry over its suite over the
defaults (:meth:`~evalrunner.suite._suite_spec.RunSettings.over`) when the file is
loaded. The result, :class:`ResolvedScenario`, is frozen and carries its
fingerprint and normaliser settings, computed on creation; the runner, the
baselines and the history read them and never resolve again.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib
import inspect
import json
import os
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, PrivateAttr

from evalrunner._heap import collector_paused
from evalrunner._litellm import prepare as prepare_litellm
from evalrunner._redact import register_names
from evalrunner.core._normalize import DEFAULT_CONFIG, NormalizeConfig
from evalrunner.errors import ConfigError
from evalrunner.suite._dataset import DataRow, Dataset, fill, read_datasets, template_fields
from evalrunner.suite._metrics import SCORE
from evalrunner.suite._schema import JUDGE, RetryPolicy, code_check_name
from evalrunner.suite._suite_spec import RunSettings, ScenarioFields, ScenarioSpec, SuiteSpec

__all__ = [
    "FINGERPRINTED_FIELDS",
    "UNFINGERPRINTED_FIELDS",
    "ResolvedScenario",
    "Suite",
    "resolve_suite",
]

FINGERPRINTED_FIELDS: frozenset[str] = frozenset(
    {
        "agent",
        "command",
        "env",
        "cwd",
        "trajectory_file",
        "input",
        "tools",
        "checks",
        "temperature",
        "max_turns",
        "skip_rules",
        "volatile_keys",
        "masks",
        "keep_order",
        "data",
    }
)
"""ResolvedScenario fields that decide whether a baseline still describes the scenario."""
_OMITTED_WHEN_UNSET = ("command", "env", "cwd", "trajectory_file", "data")
"""Fields added after format 1's first baselines: left out of the hash when unset, so
every fingerprint taken before they existed still holds."""

UNFINGERPRINTED_FIELDS: frozenset[str] = frozenset(
    {
        "suite",
        "origin",
        "id",
        "description",
        "tags",
        "runs",
        "models",
        "timeout_s",
        "retry",
        "tolerance",
        "dataset",
        "rows",
        "row",
    }
)
"""ResolvedScenario fields left out of the fingerprint; see :meth:`ResolvedScenario.fingerprint`."""
_FINGERPRINT_VERSION = 1


class ResolvedScenario(RunSettings, ScenarioFields):
    """A scenario with every setting decided: what the runner, the baselines and the history use."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    suite: str = Field(description="Name of the suite the scenario comes from.")
    retry: RetryPolicy = Field(
        default_factory=RetryPolicy, description="The suite's retry policy for failing model calls."
    )
    origin: str | None = Field(
        default=None,
        description="Where the scenario is defined ('file:line: scenarios[i] (id ...)'), for messages.",
    )
    data: Dataset | None = Field(
        default=None, description="The dataset's rows, read when the suite loaded."
    )
    row: DataRow | None = Field(
        default=None,
        description="The row one run uses (input and checks filled from it); None for the "
        "scenario as a whole.",
    )
    _fingerprint: str = PrivateAttr(default="")
    _normalize: NormalizeConfig = PrivateAttr(default=DEFAULT_CONFIG)

    def model_post_init(self, context: Any, /) -> None:
        self._fingerprint = _fingerprint(self)
        self._normalize = DEFAULT_CONFIG.extended(
            volatile_keys=self.volatile_keys,
            masks=[(mask.pattern, mask.replacement) for mask in self.masks],
            keep_order=self.keep_order,
        )

    @property
    def fingerprint(self) -> str:
        """First 16 hex digits of a sha256 over what the scenario asks of the agent.

        A baseline is a sample of runs of *this experiment*. What defines the
        experiment — agent, input, tools, checks, sampling temperature, turn limit,
        how outcomes are classified (skip rules) and how trajectories are
        normalised (volatile keys, masks, keep_order) — is hashed, so editing any of
        it makes the old baseline a mismatch. Left out on purpose:

        * ``runs`` and ``models``: the baseline records its own run count and model,
          so collecting more runs or adding a model must not throw the baseline away;
        * ``timeout_s`` and ``retry``: infrastructure handling, not agent behaviour;
        * ``tolerance``: how strictly runs are compared, not what was recorded;
          loosening a margin must not force a re-recording;
        * ``description``, ``tags``, suite name, id and origin: labels (tagging a
          scenario ``frozen`` must not invalidate it); baselines are keyed by id anyway.

        The agent's *code* is deliberately not hashed: detecting its changes is the
        point of the baseline.
        """
        return self._fingerprint

    @property
    def selected_rows(self) -> tuple[DataRow, ...]:
        """The dataset rows a night runs (all, or the stable subset ``rows`` asks for)."""
        return self.data.subset(self.rows) if self.data is not None else ()

    @property
    def row_ids(self) -> frozenset[str] | None:
        """The ids of :attr:`selected_rows`; None for a scenario without a dataset."""
        return frozenset(r.id for r in self.selected_rows) if self.data is not None else None

    @property
    def row_values(self) -> dict[str, Any]:
        """The row a run uses, as code checks and agents see it: its fields and ``id``."""
        return {"id": self.row.id, **self.row.fields} if self.row is not None else {}

    @property
    def cell_runs(self) -> int:
        """Runs per model a night makes: ``runs``, times the rows for a dataset scenario."""
        return self.runs * max(1, len(self.selected_rows))

    def at(self, index: int) -> ResolvedScenario:
        """What run ``index`` of a cell runs: for a dataset scenario, row ``index % rows`` in id order
        (so every prefix of a night's runs covers the rows evenly), else the scenario."""
        rows = self.selected_rows
        return self.for_row(rows[index % len(rows)]) if rows else self

    def for_row(self, row: DataRow) -> ResolvedScenario:
        """This scenario with its input and text checks filled from ``row``."""
        values = row.fields
        checks = self.checks.model_copy(
            update={
                "answer_contains": [fill(t, values) for t in self.checks.answer_contains],
                "answer_not_contains": [fill(t, values) for t in self.checks.answer_not_contains],
                "answer_matches": fill(self.checks.answer_matches, values, regex=True)
                if self.checks.answer_matches is not None
                else None,
                "judge": self.checks.judge.model_copy(
                    update={"rubric": fill(self.checks.judge.rubric, values)}
                )
                if self.checks.judge is not None
                else None,
            }
        )
        # model_copy keeps the fingerprint: a row is part of the scenario, not a new one.
        return self.model_copy(
            update={"row": row, "input": fill(self.input, values), "checks": checks}
        )

    def normalize_config(self) -> NormalizeConfig:
        """The normaliser settings: defaults extended by this scenario's keys, masks and order."""
        return self._normalize

    def load_checks(self) -> list[tuple[str, Callable[..., Any]]]:
        """Import the scenario's code checks as (name, function); a ConfigError names the
        file, scenario and field of one that cannot be imported."""
        where = self.origin or f"scenario '{self.id}'"
        return [
            (code_check_name(spec), _import_agent(spec, f"{where}.checks.code", ("run",)))
            for spec in self.checks.code
        ]

    def load_agent(self) -> Callable[..., Any]:
        """Import the agent callable; a ConfigError names the file, scenario and field if that fails.

        A command scenario has no callable: this checks that its program can be
        found (and its cwd exists) and returns a callable that says so if called.
        """
        where = self.origin or f"scenario '{self.id}'"
        if self.command is not None:
            return _check_command(self.command, self.cwd, f"{where}.command")
        assert self.agent is not None  # the schema requires one of the two
        return _import_agent(self.agent, f"{where}.agent", ("task", "ctx"))


def _fingerprint(scenario: ResolvedScenario) -> str:
    payload: dict[str, Any] = {"fingerprint_version": _FINGERPRINT_VERSION}
    for name in sorted(FINGERPRINTED_FIELDS):
        value = getattr(scenario, name)
        if name in _OMITTED_WHEN_UNSET and not value:
            continue
        if name == "checks":
            # Unset checks are omitted so adding a new kind of check later keeps old fingerprints.
            payload[name] = scenario.checks.model_dump(mode="json", exclude_defaults=True)
        elif name == "volatile_keys":
            payload[name] = sorted(set(value))
        elif name == "skip_rules":
            payload[name] = value.model_dump(mode="json")
        elif name == "data":
            payload[name] = value.digest
        elif name == "masks":
            payload[name] = [mask.model_dump(mode="json") for mask in value]
        else:
            payload[name] = value
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Suite:
    """A loaded suite: the file as validated, and every scenario resolved once."""

    spec: SuiteSpec
    """The file as written (suite-level values; scenario entries hold only what they set)."""
    scenarios: tuple[ResolvedScenario, ...]
    """Every scenario with its settings decided, in file order."""
    path: Path | None = None
    """The file the suite was loaded from, if any."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def description(self) -> str:
        return self.spec.description

    @property
    def concurrency(self) -> int:
        return self.spec.concurrency


def resolve_suite(
    spec: SuiteSpec, *, path: Path | None = None, origins: Sequence[str] | None = None
) -> Suite:
    """Decide every scenario's settings: scenario over suite over the defaults.

    ``origins`` (one per scenario) say where each is defined, for messages;
    without them a scenario is named by its position and id.
    """
    suite_level = spec.over(RunSettings())
    scenarios = []
    for i, entry in enumerate(spec.scenarios):
        settings = entry.over(suite_level)
        scenarios.append(
            ResolvedScenario(
                suite=spec.name,
                retry=spec.retry,
                origin=origins[i] if origins else f"scenarios[{i}] (id '{entry.id}')",
                data=_dataset_of(entry, f"scenarios[{i}] (id '{entry.id}')", path),
                **{name: getattr(entry, name) for name in ScenarioFields.model_fields},
                **{name: getattr(settings, name) for name in RunSettings.model_fields},
            )
        )
    _scores_named_exist(spec, origins, path)
    register_names(_names_of(spec))
    return Suite(spec=spec, scenarios=tuple(scenarios), path=path)


def _names_of(spec: SuiteSpec) -> list[str]:
    """The suite's names that key our own files: scenario ids (a night's manifest), code
    checks (their results and scores, by the reference and by the function's name)."""
    names = [entry.id for entry in spec.scenarios]
    for entry in spec.scenarios:
        for ref in entry.checks.code:
            names += [ref, re.split(r"[:.]", ref)[-1]]
    return names


def _scores_named_exist(spec: SuiteSpec, origins: Sequence[str] | None, path: Path | None) -> None:
    """Every ``score:<check>`` a tolerance names is a score a check gives: the scenario's
    own checks for its tolerance, some scenario's for the suite's. A misspelt one was
    accepted and never gated (the metric names around it are checked by the schema)."""

    def scores(entry: ScenarioSpec) -> set[str]:
        named = {code_check_name(c) for c in entry.checks.code}
        return named | ({JUDGE} if entry.checks.judge is not None else set())

    everywhere = set().union(*(scores(e) for e in spec.scenarios))
    file = f"{path}: " if path is not None else ""
    places = [(f"{file}tolerance", spec.tolerance, everywhere)] + [
        (
            # origins already say where in which file
            f"{origins[i] if origins else f'{file}scenarios[{i}] (id {e.id!r})'}.tolerance",
            e.tolerance,
            scores(e),
        )
        for i, e in enumerate(spec.scenarios)
    ]
    for where, tolerance, known in places:
        for metric in [*tolerance.gating, *tolerance.margins]:
            _score_given(metric, known, where)


def _score_given(metric: str, known: set[str], where: str) -> None:
    """A ``score:<check>`` metric names a score in ``known``; other metrics pass."""
    prefix = f"{SCORE}:"
    name = metric.removeprefix(prefix)
    if not metric.startswith(prefix) or name in known:
        return
    close = difflib.get_close_matches(name, sorted(known), n=1)
    hint = (
        f"did you mean '{prefix}{close[0]}'?"
        if close
        else f"the scores there: {', '.join(sorted(known)) or 'none'}"
    )
    raise ConfigError(
        f"{where}: {metric!r} is no score a check gives (the functions of "
        f"checks: code: and the judge give scores); {hint}"
    )


def _dataset_of(entry: ScenarioSpec, where: str, suite_file: Path | None) -> Dataset | None:
    """The rows of ``entry``'s dataset (relative to the suite file), checked against the
    fields its templates use."""
    if entry.dataset is None:
        return None
    needed: dict[str, str] = {}
    templates = _templates(entry)
    for field, text in templates:
        for name in template_fields(text):
            needed.setdefault(name, f"{where}.{field}")
    checks = {
        f"{where}.{field}": text for field, text in templates if field.startswith("checks.answer")
    }
    return read_datasets(
        suite_file.parent if suite_file is not None else Path(), entry.dataset, needed, checks
    )


def _templates(entry: ScenarioSpec) -> list[tuple[str, str]]:
    """Where a scenario's templates are (field paths) and their texts."""
    return [
        ("input", entry.input),
        *((f"checks.answer_contains[{i}]", t) for i, t in enumerate(entry.checks.answer_contains)),
        *(
            (f"checks.answer_not_contains[{i}]", t)
            for i, t in enumerate(entry.checks.answer_not_contains)
        ),
        ("checks.answer_matches", entry.checks.answer_matches or ""),
        ("checks.judge.rubric", entry.checks.judge.rubric if entry.checks.judge else ""),
    ]


def _one_line(text: str) -> str:
    return " ".join(text.split())


_INTERPRETERS = {".py": "python", ".sh": "bash", ".js": "node", ".mjs": "node", ".rb": "ruby"}


_INTERPRETER_NAMES = re.compile(r"(?:python[0-9.]*|node|bash|sh|zsh|ruby)(?:\.exe)?")
"""Programs whose first argument, when it is not an option, is the script they run."""


def _check_scripts(argv: Sequence[str], base: Path, where: str) -> None:
    """The script an interpreter is given first, by a relative path, must be where the
    command starts: run from another directory (--suites-dir ../suites), every run
    "crashed" on "can't open file", as behaviour. Only that shape is checked: an argument
    after an option, or of another program (a container's, a launcher's that changes
    directory), may name a file somewhere else."""
    if len(argv) < 2 or not _INTERPRETER_NAMES.fullmatch(Path(argv[0]).name):
        return
    script = argv[1]
    if (
        Path(script).suffix in _INTERPRETERS
        and not script.startswith("-")
        and not Path(script).is_absolute()
        and not any(c in script for c in "{$=*?[ \t")
        and "://" not in script
        and not (base / script).is_file()
    ):
        raise ConfigError(
            f"{where}[1]: script {script!r} not found relative to {base}, where the command "
            "starts (the directory evalrunner runs in, or the scenario's cwd); run "
            "evalrunner from the directory that holds it, or give cwd or its absolute path"
        )


def _check_command(argv: Sequence[str], cwd: str | None, where: str) -> Callable[..., Any]:
    """A command's program must exist before the night starts (a typo costs one line)."""
    if cwd is not None and not Path(cwd).is_dir():
        raise ConfigError(f"{where}: cwd {cwd!r} is not a directory (relative to {Path.cwd()})")
    program = argv[0]
    base = Path(cwd) if cwd is not None else Path.cwd()
    as_path = "/" in program or os.sep in program  # else looked up on PATH
    found = (base / program).is_file() if as_path else shutil.which(program)
    if not found:
        raise ConfigError(
            f"{where}: program {program!r} not found (on PATH, or relative to {base}); "
            "install it or give its path"
        )
    if as_path and not os.access(base / program, os.X_OK):
        # Every run would end "crashed" on the same PermissionError: configuration, not behaviour.
        raise ConfigError(
            f"{where}: program {program!r} is not executable; chmod +x {program}, or name its "
            f"interpreter first: [{_INTERPRETERS.get(Path(program).suffix, 'INTERPRETER')}, "
            f"{program}, ...]"
        )
    _check_scripts(argv, base, where)
    try:  # what the capture proxy serves with (its own check, which runs only once it starts)
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"{where}: a command agent's model calls go through the capture proxy, which needs "
            f"starlette and uvicorn ({exc}); pip install 'evalrunner[proxy]'"
        ) from None

    def command_agent(*args: Any, **kwargs: Any) -> Any:
        raise ConfigError(f"{where}: a command agent runs as a subprocess, not as a callable")

    return command_agent


def _import_module(module_name: str, spec: str, where: str) -> Any:
    """The agent's module, imported; every failure is a one-line ConfigError."""
    prepare_litellm()  # before an agent module that imports litellm does: no cost-map fetch
    try:
        with collector_paused():  # an agent's module may import litellm or a framework
            return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            raise ConfigError(
                f"{where}: cannot import {spec!r}: no module named {exc.name!r}; install it, or run "
                "from the directory that contains it (or add that directory to PYTHONPATH)"
            ) from exc
        raise ConfigError(
            f"{where}: cannot import {spec!r}: module {module_name!r} needs {exc.name!r}, "
            "which is not installed"
        ) from exc
    except Exception as exc:  # the agent module's own import-time error, shown as config trouble
        detail = _one_line(f"{type(exc).__name__}: {exc}")
        raise ConfigError(
            f"{where}: cannot import {spec!r}: importing {module_name!r} raised {detail}"
        ) from exc


def _import_agent(spec: str, where: str, called_with: tuple[str, ...]) -> Callable[..., Any]:
    """Import 'package.module:attr.path', a callable taking ``called_with`` positionally;
    every failure is a one-line ConfigError."""
    module_name, _, attr_path = spec.partition(":")
    module = _import_module(module_name, spec, where)
    obj: Any = module
    owner = module_name
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            public = [name for name in dir(obj) if not name.startswith("_")]
            close = difflib.get_close_matches(part, public, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{where}: {owner!r} has no attribute {part!r}{hint}") from None
        owner = f"{owner}.{part}"
    if not callable(obj):
        raise ConfigError(f"{where}: {spec!r} is a {type(obj).__name__}, not a callable")
    _check_signature(obj, spec, where, called_with)
    return obj  # type: ignore[no-any-return]


def _check_signature(
    fn: Callable[..., Any], spec: str, where: str, called_with: tuple[str, ...]
) -> None:
    """A callable that cannot take ``called_with`` would fail every run of the night as a
    crash of the agent: a configuration error now instead."""
    try:
        problem = _signature_problem(fn, called_with)
    except TypeError:  # an unhashable callable object: read its signature every time
        problem = _signature_problem.__wrapped__(fn, called_with)
    if problem is not None:
        name = spec.rpartition(":")[2]
        bare, why = problem
        raise ConfigError(
            f"{where}: {spec!r} is {name}{bare}, which cannot be called as "
            f"{name}({', '.join(called_with)}) ({why}); give it those parameters"
        )


@functools.lru_cache(maxsize=256)
def _signature_problem(
    fn: Callable[..., Any], called_with: tuple[str, ...]
) -> tuple[str, str] | None:
    """(its parameters, why) if ``fn`` cannot be called with ``called_with``. Cached: every
    run of a night loads its agent, and reading a signature costs more than the rest."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins and C callables: nothing to read
        return None
    try:
        signature.bind(*called_with)
    except TypeError as exc:
        bare = signature.replace(  # names only: annotations may be strings or long types
            parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        return str(bare), str(exc)
    return None
