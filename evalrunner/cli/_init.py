"""``evalrunner init``: a suite, a first agent and the two workflows, in the project at hand.

Writes only files that do not exist yet (``--force`` overwrites); every file it
would write is named before anything is written, so a refusal leaves the
project as it was.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import click
from click.core import ParameterSource

from evalrunner.errors import ConfigError
from evalrunner.suite._loader import find_suites
from evalrunner.suite._schema import check_identifier

ACTION = "evalrunner/evalrunner@main"
"""What the workflows use: the action at the root of evalrunner's repository."""

_AGENT_FILE = "evalrunner_agent.py"
_AGENT_LINES = {
    "litellm": "    agent: evalrunner_agent:answer",
    "command": f'    command: [python, {_AGENT_FILE}, "{{task}}"]',
}


def _template(name: str) -> str:
    return (resources.files("evalrunner.cli") / "templates" / name).read_text(encoding="utf-8")


def _frozen_paths(root: Path) -> str:
    """What the PR job collects: the suites, and ``tests`` when golden tests live there (a PR
    job of ``suites`` alone passed without running them)."""
    tests = root / "tests"
    for path in sorted(tests.rglob("*.py")) if tests.is_dir() else ():
        try:
            if "golden_trajectory" in path.read_text(encoding="utf-8", errors="replace"):
                return "suites tests"
        except OSError:  # unreadable: not ours to judge
            continue
    return "suites"


def scaffold(root: Path, suite: str, agent: str, action: str = ACTION) -> dict[Path, str]:
    """Every file ``init`` writes, by path, with its text (nothing is written here)."""
    suite_text = _template("suite.yaml.tmpl").format(name=suite, agent_line=_AGENT_LINES[agent])
    return {
        root / "suites" / f"{suite}.yaml": suite_text,
        root / _AGENT_FILE: _template(f"agent_{agent}.py.tmpl"),
        root / ".github" / "workflows" / "evalrunner-pr.yml": _template("pr.yml.tmpl").format(
            action=action, paths=_frozen_paths(root)
        ),
        root / ".github" / "workflows" / "evalrunner-nightly.yml": _template(
            "nightly.yml.tmpl"
        ).format(action=action, name=suite),
    }


def _suite_name(value: str) -> str:
    """A name the scaffolded suite will load with: checked before a file is written."""
    try:
        return check_identifier(value, "suite name")
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command()
@click.option(
    "--agent",
    type=click.Choice(sorted(_AGENT_LINES)),
    default="litellm",
    show_default=True,
    help="How the first scenario runs its agent: a Python function on litellm, or any "
    "command (an SDK, another language) through the capture proxy.",
)
@click.option(
    "--suite",
    "suite_name",
    default="agent",
    show_default=True,
    callback=lambda ctx, param, value: _suite_name(value),
    help="Suite name (lowercase letters, digits, '_' and '-').",
)
@click.option("--force", is_flag=True, help="Overwrite files that exist.")
@click.option(
    "--workflows",
    "workflows_only",
    is_flag=True,
    help="Write only the two workflows (to pin --action, or take newer ones), not the suite "
    "and agent, which are yours once written.",
)
@click.option(
    "--action",
    default=ACTION,
    show_default=True,
    callback=lambda ctx, param, value: _action_ref(value),
    help="The GitHub Action the workflows use (OWNER/REPO[/PATH]@REF, or ./PATH).",
)
def init(agent: str, suite_name: str, force: bool, workflows_only: bool, action: str) -> None:
    """Scaffold evalrunner into this project: a suite, a first agent, PR and nightly workflows."""
    if workflows_only:
        suite_name = _project_suite(suite_name)
    files = scaffold(Path.cwd(), suite_name, agent, action)
    if workflows_only:
        files = {p: text for p, text in files.items() if p.suffix == ".yml"}
    _refuse_what_is_not_ours(files, Path.cwd())
    if not force:
        _refuse_to_overwrite(files)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        click.echo(f"wrote {path.relative_to(Path.cwd())}")
    if not workflows_only:
        _ignore_run_files(Path.cwd())
        _next_steps(suite_name)
    if not re.search(r"@[0-9a-f]{40}$", action):
        click.echo(
            f"\nThe workflows use {action}: pin it to a commit before you rely on it "
            "(evalrunner init --workflows --force --action OWNER/REPO@COMMIT)."
        )


_ACTION_REF = re.compile(
    r"(?:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_./-]+)?@[A-Za-z0-9_./-]+"
    r"|\./[A-Za-z0-9_./-]+)"
)


def _action_ref(value: str) -> str:
    """An action reference as a workflow's ``uses:`` takes it, and nothing more: it is
    written into YAML, where a newline would start steps of the caller's choosing."""
    if not _ACTION_REF.fullmatch(value):
        raise click.BadParameter(
            f"{value!r} is not an action reference: use OWNER/REPO[/PATH]@REF "
            "(e.g. evalrunner/evalrunner@<commit>) or ./PATH"
        )
    return value


def _refuse_what_is_not_ours(files: dict[Path, str], root: Path) -> None:
    """Before anything is written: a file or folder on the way that is a symbolic link
    (written through, --force would overwrite wherever it points) or a file where a folder
    must be (suites, .github)."""
    for path in files:
        for part in [*reversed(path.relative_to(root).parents[:-1]), path.relative_to(root)]:
            found = root / part
            if found.is_symlink():
                raise ConfigError(
                    f"{part} is a symbolic link; init does not write through links, even with "
                    "--force: remove it, or write the files yourself"
                )
            if found != path and found.exists() and not found.is_dir():
                raise ConfigError(f"{part} is a file where init needs a folder: move it aside")


def _project_suite(given: str) -> str:
    """The suite the nightly workflow runs: the one given, else the project's own (the
    scaffold's name would be a suite the project does not have)."""
    if click.get_current_context().get_parameter_source("suite_name") != ParameterSource.DEFAULT:
        return given
    suites = sorted(find_suites("suites"))
    if len(suites) > 1:
        raise click.UsageError(
            f"this project has several suites ({', '.join(suites)}) and the nightly workflow "
            "runs one: pass --suite NAME"
        )
    return suites[0] if suites else given


_RUN_FILES = "results/"
"""What a night writes that is not to be committed (its run files; the history and the
baselines are)."""


def _ignore_run_files(root: Path) -> None:
    """``results/`` in the project's .gitignore (appended; never written through a link)."""
    ignore = root / ".gitignore"
    if ignore.is_symlink():
        click.echo(f"note: .gitignore is a link; add {_RUN_FILES} to it yourself")
        return
    text = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    if any(line.strip().strip("/") == "results" for line in text.splitlines()):
        return
    lead = "" if not text or text.endswith("\n") else "\n"
    with ignore.open("a", encoding="utf-8") as out:
        out.write(f"{lead}# evalrunner: a night's run files\n{_RUN_FILES}\n")
    click.echo(f"added {_RUN_FILES} to .gitignore")


def _refuse_to_overwrite(files: dict[Path, str]) -> None:
    existing = [p for p in files if p.exists()]
    if existing:
        names = ", ".join(str(p.relative_to(Path.cwd())) for p in existing)
        raise ConfigError(f"{names} already exist(s); nothing written (--force overwrites)")


def _next_steps(suite_name: str) -> None:
    click.echo(
        "\nNext:\n"
        f"  1. Point {_AGENT_FILE} at your agent (or write its scenarios in suites/{suite_name}.yaml).\n"
        f"  2. evalrunner validate && evalrunner run --suite {suite_name} --runs 5\n"
        "  3. pytest suites --golden-record   (records the frozen scenarios once; commit them)\n"
        f"  4. evalrunner baseline --suite {suite_name} --runs 10 --nights 3   (commit baselines/)\n"
        "  5. Commit .github/workflows/: PRs replay the frozen scenarios, nights run live."
    )
