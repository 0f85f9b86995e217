"""What the pytest plugin runs: the ``golden_trajectory`` checker and suite scenarios as items.

Both run :func:`run_frozen` in the mode the command line asks for and fail
the test with its message; the hooks that wire them into pytest are in
:mod:`evalrunner.frozen.plugin`.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evalrunner._redact import redact_text
from evalrunner.core._normalize import DEFAULT_CONFIG, NormalizeConfig
from evalrunner.core._scope import CaptureResult
from evalrunner.errors import EvalrunnerError
from evalrunner.frozen._golden import (
    RECORDINGS,
    golden_path_for,
    golden_path_for_test,
    module_golden_dir,
)
from evalrunner.frozen._proxied import (
    ProxiedAgent,
    call_with_env,
    command_agent,
    run_frozen_proxied,
)
from evalrunner.frozen._run import FrozenOutcome, Mode, run_frozen
from evalrunner.frozen._session import flag, state
from evalrunner.suite._record import model_slug

if TYPE_CHECKING:
    from evalrunner.endpoints._endpoints import Endpoint
    from evalrunner.suite._judge import JudgeResult


def mode(config: pytest.Config) -> Mode:
    """``record`` (--golden-record), ``update`` (--golden-update) or ``check``; never both
    (:func:`evalrunner.frozen._session.start` refuses them together)."""
    if flag(config, "--golden-record", "EVALRUNNER_GOLDEN_RECORD"):
        return "record"
    if flag(config, "--golden-update", "EVALRUNNER_GOLDEN_UPDATE"):
        return "update"
    return "check"


_LONGEST_NAME = 227
"""The longest golden name kept whole: the longest that worked before names were cut
(``.NAME.judge.json.PID.N.tmp``, the temporary file a recording is written through, then
fills the 255 bytes most file systems allow). Longer names crashed with "File name too
long"; they are cut to :data:`_CUT_NAME` with a hash of the whole."""
_CUT_NAME = 200


def _safe(name: str) -> str:
    """A test's golden name: the file-name-safe form run files use, a long one cut short
    with a hash of the whole (a test id of 300 characters crashed on ``open``)."""
    safe = model_slug(name)  # ASCII only, so characters are bytes
    if len(safe) <= _LONGEST_NAME:
        return safe
    digest = hashlib.sha256(safe.encode()).hexdigest()[:12]
    return f"{safe[: _CUT_NAME - len(digest) - 1]}-{digest}"


def node_arg(item: pytest.Item) -> str:
    """The item as a pytest argument from where pytest was run (node ids are relative to
    the rootdir, so a hint built from one fails when pasted in a subdirectory)."""
    path, sep, rest = item.nodeid.partition("::")
    shown = os.path.relpath(item.config.rootpath / path, item.config.invocation_params.dir)
    return f"{shown}{sep}{rest}"


def _frozen(item: pytest.Item, fn: Callable[..., Any], *args: Any, **opts: Any) -> FrozenOutcome:
    """Run ``fn`` in frozen mode for ``item``; a failed check raises GoldenMismatch."""
    return _judged(item, lambda **common: run_frozen(fn, *args, **common, **opts), opts)


def _proxied(
    item: pytest.Item, agent: ProxiedAgent, model: str | None, **opts: Any
) -> FrozenOutcome:
    """Run a proxied agent in frozen mode for ``item`` (the endpoint only when recording)."""

    def endpoint() -> Endpoint:
        from evalrunner.endpoints._endpoints import requested_models

        return state(item.config).endpoint(model or requested_models((), None)[0])

    return _judged(
        item, lambda **common: run_frozen_proxied(agent, endpoint=endpoint, **common, **opts), opts
    )


def _judged(
    item: pytest.Item, run: Callable[..., FrozenOutcome], opts: dict[str, Any]
) -> FrozenOutcome:
    run_mode = mode(item.config)
    session = state(item.config)
    session.ran_test(opts["golden_path"])
    outcome = run(
        mode=run_mode,
        update_cmd=f'pytest --golden-update "{node_arg(item)}"',
        record_cmd=f'pytest --golden-record "{node_arg(item)}"',
        strict=bool(item.config.getoption("--golden-strict")),
    )
    if not outcome.ok:
        raise GoldenMismatch(outcome.message)
    if run_mode != "check":
        session.reports.append(outcome.message)
    elif outcome.message:  # it passed, but the replay noticed something (unused calls)
        session.notes.append(f"{item.nodeid}: {outcome.message}")
    return outcome


class GoldenMismatch(AssertionError):
    """A frozen run differs from its golden (or cannot be checked); the message says how."""


class GoldenChecker:
    """Callable returned by the ``golden_trajectory`` fixture."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self._taken: set[Path] = set()

    def path(self, name: str | None = None) -> Path:
        node = self._request.node
        test = _safe(node.name if name is None else f"{node.name}-{name}")
        return golden_path_for_test(Path(str(node.path)), test)

    def _claim(self, name: str | None) -> Path:
        """This call's golden, refused when an earlier call of the same test wrote it: two
        runs on one golden and one recording overwrite each other and can never pass."""
        path = self.path(name)
        node = self._request.node
        shared = state(node.config).shared.get(node.nodeid) if name is None else None
        if shared:
            others = ", ".join(n for n in shared if n != node.nodeid)
            pytest.fail(
                f"{node.nodeid}: its golden {path.name} would be the same file as that of "
                f"{others} (a golden is named after the test alone, without its class and "
                "with the characters a file name cannot hold replaced, and on macOS and "
                "Windows disks case does not tell two files apart), and recording one "
                "would overwrite the other; give each call its own name, e.g. "
                'golden_trajectory(agent, ..., name="paris"), or rename one of the tests',
                pytrace=False,
            )
        if path in self._taken:
            called = "without a name" if name is None else f"with name={name!r}"
            pytest.fail(
                f"{self._request.node.nodeid}: golden_trajectory was already called {called} "
                f"in this test, and both calls would share {path.name}; give each call its "
                'own name, e.g. golden_trajectory(agent, ..., name="second")',
                pytrace=False,
            )
        self._taken.add(path)
        return path

    def __call__(
        self,
        agent: Callable[..., Any],
        *args: Any,
        name: str | None = None,
        config: NormalizeConfig = DEFAULT_CONFIG,
        **kwargs: Any,
    ) -> CaptureResult:
        """Run ``agent(*args, **kwargs)`` in frozen mode; fail the test on any behavioural change."""
        node = self._request.node
        path = self._claim(name)
        return self._checked(
            lambda: _frozen(node, agent, *args, golden_path=path, config=config, **kwargs)
        )

    def proxied(
        self,
        agent: Callable[..., Any],
        *args: Any,
        name: str | None = None,
        config: NormalizeConfig = DEFAULT_CONFIG,
        model: str | None = None,
        **kwargs: Any,
    ) -> CaptureResult:
        """Run ``agent(*args, **kwargs)`` in process through the capture proxy, in frozen mode.

        For agents on provider SDKs (openai, anthropic, frameworks on them):
        ``OPENAI_BASE_URL``, ``OPENAI_API_BASE``, ``ANTHROPIC_BASE_URL`` and a dummy key
        point at the proxy while the agent runs, so SDK clients created inside it
        are captured. Replay is strict and offline; ``--golden-record`` records
        from ``model`` (default: ``EVALRUNNER_MODEL``, else the embedded model).
        """
        return self._proxy(call_with_env(agent, *args, **kwargs), name, config, model)

    def command(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float = 300.0,
        name: str | None = None,
        config: NormalizeConfig = DEFAULT_CONFIG,
        model: str | None = None,
    ) -> CaptureResult:
        """Run a subprocess agent (any language) through the capture proxy, in frozen mode.

        The final answer is read from stdout as for suite ``command:`` scenarios
        (``result.output``); a non-zero exit fails the test with its stderr.
        """
        agent = command_agent(argv, env=env, cwd=cwd, timeout=timeout)
        return self._proxy(agent, name, config, model)

    def _proxy(
        self, agent: ProxiedAgent, name: str | None, config: NormalizeConfig, model: str | None
    ) -> CaptureResult:
        node = self._request.node
        path = self._claim(name)
        return self._checked(lambda: _proxied(node, agent, model, golden_path=path, config=config))

    def _checked(self, run: Callable[[], FrozenOutcome]) -> CaptureResult:
        try:
            outcome = run()
        except (EvalrunnerError, GoldenMismatch) as exc:
            message = str(exc)
        else:
            assert outcome.result is not None
            return outcome.result
        # Failed outside the except block, or pytest prints the message twice
        # ("During handling of the above exception, another exception occurred").
        pytest.fail(message, pytrace=False)


class SuiteFile(pytest.File):
    """A ``suites/*.yaml`` file: its scenarios tagged ``frozen`` are test items."""

    def collect(self) -> Iterator[pytest.Item]:
        from evalrunner.suite._loader import load_suite

        # A suite names its agents 'module:fn' from the project, and `evalrunner run`
        # imports them from the directory it runs in. `python -m pytest` puts that
        # directory on sys.path; the plain `pytest` command does not.
        project = str(self.config.invocation_params.dir)
        if project not in sys.path:
            sys.path.insert(0, project)
        try:
            suite = load_suite(self.path)
        except EvalrunnerError as exc:
            raise self.CollectError(str(exc)) from None
        for scenario in suite.scenarios:
            if not scenario.frozen:
                continue
            if scenario.data is None:
                yield ScenarioItem.from_parent(
                    self, name=scenario.id, suite=suite, scenario=scenario
                )
                continue
            for row in scenario.selected_rows:  # one item, golden and recording per row
                yield ScenarioItem.from_parent(
                    self,
                    name=f"{scenario.id}[{row.id}]",
                    suite=suite,
                    scenario=scenario.for_row(row),
                )


@contextmanager
def _kept_if_checks_fail(golden: Path) -> Iterator[None]:
    """``--golden-record`` over an existing golden: a new run that fails the scenario's checks
    puts the golden and its recordings back as they were. Before, the failing run replaced
    them, and the good golden was gone from the working tree. A first recording is kept
    either way (there is nothing to go back to; replay then fails on the same checks)."""
    files = [golden, *(golden.with_name(golden.stem + suffix) for suffix in RECORDINGS)]
    if not golden.is_file():
        yield
        return
    before = {path: path.read_bytes() if path.is_file() else None for path in files}
    try:
        yield
    except GoldenMismatch as failed:
        for path, data in before.items():
            if data is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(data)
        raise GoldenMismatch(
            f"{failed}\nThe golden and recording from before were kept ({golden.name})."
        ) from None


class ScenarioItem(pytest.Item):
    """One frozen suite scenario, checked against ``suites/goldens/<suite>/<scenario>.json``
    (a dataset row: ``suites/goldens/<suite>/<scenario>/<row>.json``)."""

    def __init__(self, *, suite: Any, scenario: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.scenario = scenario
        name = scenario.id if scenario.row is None else f"{scenario.id}/{scenario.row.id}"
        self.golden = golden_path_for(Path(self.path), suite.name, name)

    def runtest(self) -> None:
        if mode(self.config) != "record":
            self._runtest()
            return
        with _kept_if_checks_fail(self.golden):
            self._runtest()

    def _runtest(self) -> None:
        from evalrunner.endpoints._endpoints import Endpoint, requested_models
        from evalrunner.suite._contract import RunContext

        resolved = self.scenario  # resolved once, when the suite was loaded
        agent = resolved.load_agent()  # a bad agent fails before any endpoint starts
        resolved.load_checks()  # and so does a code check that cannot be imported
        model = requested_models((), resolved.models)[0]
        if resolved.command is not None:
            self._check(self._run_command(model))
            return
        if mode(self.config) == "record":
            endpoint = state(self.config).endpoint(model)
        else:  # replay never reaches an endpoint; only the model string is needed
            endpoint = Endpoint(label=model, model=model)
        ctx = RunContext.for_scenario(resolved, endpoint)
        outcome = _frozen(
            self,
            agent,
            resolved.input,
            ctx,
            golden_path=self.golden,
            config=resolved.normalize_config(),
            name=self.scenario.id,
            # Only a model the suite names: one from EVALRUNNER_MODEL (recorded against a
            # live model, replayed in CI without it) moved nothing in the project.
            suite_model=model if resolved.models else None,
        )
        assert outcome.result is not None
        self._check(outcome.result)

    def _run_command(self, model: str) -> CaptureResult:
        """A ``command:`` scenario, through the capture proxy (its recording: ``.proxy.json``)."""
        from evalrunner.suite._contract import command_argv

        sc = self.scenario
        agent = command_agent(
            command_argv(sc.command, sc.input),
            env=sc.env,
            cwd=sc.cwd,
            timeout=sc.timeout_s,
            trajectory_file=sc.trajectory_file,
        )
        outcome = _proxied(
            self,
            agent,
            model,
            golden_path=self.golden,
            config=sc.normalize_config(),
            name=sc.id,
            suite_model=model if sc.models else None,  # as in process: a model the suite names
        )
        assert outcome.result is not None
        return outcome.result

    def _check(self, result: CaptureResult) -> None:
        """The scenario's checks, on the run that matched its golden (or was just recorded)."""
        from evalrunner.suite._checks import evaluate_checks, failed_checks, judged
        from evalrunner.suite._code_checks import CheckInput, CodeChecked, code_checks
        from evalrunner.suite._judge import file_judgement

        resolved = self.scenario
        seen = judged(result, resolved.normalize_config())  # what the live runner judges
        answer, tools = seen.answer, seen.tools
        held = evaluate_checks(resolved.checks, result.trajectory, answer, tools)
        code = CodeChecked()
        if resolved.checks.code:
            seen_by_code = CheckInput(
                answer,
                result.output,
                result.trajectory,
                tools,
                None,
                resolved.id,
                resolved.row_values,
            )
            code = code_checks(resolved.load_checks(), seen_by_code, resolved.timeout_s)
            if code.broken:
                name, failure = next(iter(code.broken.items()))
                raise GoldenMismatch(
                    f"{self.path.name}: scenario {self.name}: code check {name} failed itself "
                    f"(the check's bug, not the agent's):\n{redact_text(failure)}"
                )
        if resolved.checks.judge is not None and answer is not None:
            file_judgement(code, self._judged(answer))
        held |= code.held
        failed = failed_checks(held, tools, code.reasons, result.trajectory)
        if failed:
            shown = redact_text(answer) if answer else answer  # this goes to the terminal
            run = "was recorded" if mode(self.config) == "record" else "matches its golden"
            raise GoldenMismatch(
                f"{self.golden}: the run {run} but fails the scenario's "
                f"check(s) {', '.join(failed)} (final answer {shown!r}, tools {tools}). "
                "The recording is of a run that does not do what the scenario asks: re-record "
                f'until it does, with:\n  pytest --golden-record "{node_arg(self)}"\n'
                f"or correct the check in {self.path.name} if the check is wrong."
            )

    def _judged(self, answer: str) -> JudgeResult:
        """The judge's grades of ``answer``: replayed from ``<golden>.judge.json``, or recorded."""
        import asyncio

        from evalrunner.core._faults import describe
        from evalrunner.endpoints._endpoints import requested_models
        from evalrunner.frozen._judge import FrozenJudge, MissingGrade, judge_path
        from evalrunner.suite._judge import JudgeAnswerError, agrade

        sc = self.scenario
        judge = sc.checks.judge
        model = judge.model or requested_models((), sc.models)[0]
        recording = mode(self.config) == "record"
        grader = FrozenJudge(
            judge,
            judge_path(self.golden),
            record=recording,
            endpoint=lambda: state(self.config).endpoint(model),
            model=model,
            retry=sc.retry,
        )
        try:
            result = asyncio.run(agrade(judge, sc.input, answer, grader.complete))
        except MissingGrade as exc:
            raise GoldenMismatch(
                f'{exc}: record it again with:\n  pytest --golden-record "{node_arg(self)}"'
            ) from None
        except JudgeAnswerError as exc:
            raise GoldenMismatch(
                f"{self.path.name}: scenario {self.name}: the judge failed itself (the judge's "
                f"answer, not the agent's): {exc}"
            ) from None
        except Exception as exc:  # recording: the judge's endpoint, never the agent's failure
            raise GoldenMismatch(
                f"{self.path.name}: scenario {self.name}: the judge's endpoint {model} failed "
                f"(an infrastructure fault, not the agent's): {redact_text(describe(exc))}"
            ) from None
        if recording:
            grader.save()
            state(self.config).reports.append(f"wrote {grader.path}")
        return result

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, GoldenMismatch | EvalrunnerError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return Path(self.path), 0, f"scenario {self.suite.name}::{self.name}"


def golden_dir(item: pytest.Item) -> tuple[Path, str] | None:
    """The directory of an item's golden and its name there (None: the item has no golden)."""
    if isinstance(item, ScenarioItem):
        return item.golden.parent, item.golden.stem
    if "golden_trajectory" in getattr(item, "fixturenames", ()):
        return module_golden_dir(Path(str(item.path))), _safe(item.name)
    return None
