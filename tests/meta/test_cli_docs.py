"""docs/cli.md shows every command's --help as the command prints it (docs/gen_cli.py)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from paths import REPO


def _gen_cli() -> ModuleType:
    # docs/ is no package: the generator is loaded from its file, as `python docs/gen_cli.py` runs.
    spec = importlib.util.spec_from_file_location("gen_cli", REPO / "docs" / "gen_cli.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_page_shows_each_commands_help() -> None:
    gen_cli = _gen_cli()
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    helps = gen_cli.live_helps()
    stale = gen_cli.differing(page, helps)
    assert stale == [], (
        f"docs/cli.md differs from `--help` of: {', '.join(stale)}; "
        f"regenerate it with {gen_cli.REGENERATE}"
    )


def test_the_check_names_a_command_whose_help_changed() -> None:
    gen_cli = _gen_cli()
    helps = gen_cli.live_helps()
    page = gen_cli.render({**helps, "evalrunner run": "Usage: evalrunner run (old help)"})
    assert gen_cli.differing(page, helps) == ["evalrunner run"]
    assert gen_cli.differing(gen_cli.render(helps), helps) == []
    assert "evalrunner run" in helps and "evalrunner" in helps
