"""docs/cli.md: every `evalrunner` command's --help, as a terminal shows it.

    python docs/gen_cli.py            # rewrite docs/cli.md from the commands' help
    python docs/gen_cli.py --check    # exit 1 naming each command whose help the page lacks

tests/meta/test_cli_docs.py runs the check, so the page and the commands cannot drift apart.
The help is rendered from click's own contexts, as `--help` renders it, without running the
group's callback (which prepares the process for a real command).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from evalrunner.cli._main import main as evalrunner

PAGE = Path(__file__).resolve().parent / "cli.md"
# What a terminal 80 columns wide (or wider) shows: click wraps help at 78 there.
WIDTH = 78
REGENERATE = "python docs/gen_cli.py"
HEADER = f"""# Command line

Every `evalrunner` command's `--help`, as a terminal 80 columns wide shows it.
This page is generated: `{REGENERATE}` rewrites it, and `tests/meta/test_cli_docs.py`
fails when a command's help and this page differ.
"""
_SECTION = re.compile(r"^## `(.+?)`\n\n```text\n(.*?)\n```\n", re.M | re.S)


def _helps(command: click.Command, name: str, parent: click.Context | None) -> dict[str, str]:
    ctx = click.Context(command, info_name=name, parent=parent, terminal_width=WIDTH)
    helps = {ctx.command_path: command.get_help(ctx)}
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            subcommand = command.get_command(ctx, sub)
            if subcommand is not None and not subcommand.hidden:
                helps.update(_helps(subcommand, sub, ctx))
    return helps


def live_helps() -> dict[str, str]:
    """Command path (`evalrunner run`) -> the help it prints, the group's first."""
    return _helps(evalrunner, "evalrunner", None)


def render(helps: dict[str, str]) -> str:
    sections = [f"## `{path}`\n\n```text\n{text}\n```\n" for path, text in helps.items()]
    return "\n".join([HEADER, *sections])


def page_helps(text: str) -> dict[str, str]:
    """Command path -> the help the page shows for it."""
    return {match[1]: match[2] for match in _SECTION.finditer(text)}


def differing(page: str, helps: dict[str, str]) -> list[str]:
    """The commands whose help the page lacks or shows otherwise, and any it shows extra."""
    shown = page_helps(page)
    return [path for path in {**helps, **shown} if shown.get(path) != helps.get(path)]


def main(argv: list[str]) -> int:
    helps = live_helps()
    if argv == ["--check"]:
        stale = differing(PAGE.read_text(encoding="utf-8"), helps)
        for path in stale:
            print(f"docs/cli.md: `{path} --help` differs from the page; run {REGENERATE}")
        return 1 if stale else 0
    PAGE.write_text(render(helps), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
