"""What a PR check costs before it has tested anything: pytest sessions, CPU seconds.

Every line is a fresh process with a user's environment (``PATH`` and ``HOME``
only; nothing this checkout's test session exports), its CPU (user + system,
children included) taken from the kernel when it exits. The lines alternate
round by round, so a loaded machine slows them alike; each line's median counts.

- ``proxied golden, 1 test``: a temporary project with one test that calls an
  OpenAI SDK agent through ``golden_trajectory.proxied`` (the clean-room
  journey), recorded once against a loopback endpoint, then replayed by plain
  ``pytest``: the capture proxy, the replay and the golden comparison.
  Target: <= 2 s.
- ``litellm golden, 1 test``: the README's first golden test, in process: a test
  module that imports its litellm agent at the top (so litellm is imported while
  pytest collects, with the collector paused by the plugin), recorded once, then
  replayed by plain ``pytest``.
- ``PR subset (pytest suites)``: this checkout's frozen items (the example
  suite's ``frozen`` scenarios), replayed from their recordings. Target: <= 3 s.
  The example agents call litellm, so this line pays its import.
- ``import litellm``: that import alone (with the settings evalrunner gives
  it), in a process that then exits: the agents' own library's cost as a plain
  ``import`` pays it.
- ``import litellm, evalrunner's way``: the same through ``import_litellm()``,
  which pauses the collector while importing and leaves litellm's objects to the
  operating system at exit (``evalrunner/_heap.py``): the part of the PR subset
  that is litellm's.
- ``a plain test, plugin on`` / ``plugin off`` (``-p no:evalrunner``): what
  the plugin costs a session that never uses it.

    python benchmarks/bench_pr.py              # 5 rounds
    python benchmarks/bench_pr.py --rounds 3   # a quicker look
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "support")]

from fake_endpoint import FakeEndpoint, Reply  # noqa: E402 - after the path setup

PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")

PROXIED_TEST = """
def agent(task):
    from openai import OpenAI
    reply = OpenAI().chat.completions.create(model="m", messages=[{"role": "user", "content": task}])
    return reply.choices[0].message.content


def test_agent(golden_trajectory):
    assert golden_trajectory.proxied(agent, "hi").output == "hello there"
"""

LITELLM_AGENT = """
import os

import litellm


def answer(task):
    reply = litellm.completion(
        model="openai/fake", api_base=os.environ.get("BENCH_API_BASE"), api_key="sk-bench-000000",
        messages=[{"role": "user", "content": task}],
    )
    return reply.choices[0].message.content
"""

LITELLM_TEST = """
from bench_agent import answer


def test_capital(golden_trajectory):
    assert golden_trajectory(answer, "hi").output == "hello there"
"""

IMPORTED = "import litellm, evalrunner's way"

PLAIN_TEST = """
def test_plain():
    assert 1 + 1 == 2
"""


def user_env(home: Path, **extra: str) -> dict[str, str]:
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    return {"PATH": path, "HOME": str(home), **extra}


def cpu_of(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """CPU seconds of one process and its children; it must succeed."""
    child = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    out = child.stdout.read() if child.stdout else b""
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed in {cwd}:\n{out.decode()[-3000:]}")
    return usage.ru_utime + usage.ru_stime


def proxied_project(root: Path) -> Path:
    project = root / "proxied"
    project.mkdir()
    (project / "test_agent.py").write_text(PROXIED_TEST, encoding="utf-8")
    with FakeEndpoint(responder=lambda body, n: Reply("hello there")) as ep:
        env = user_env(project, EVALRUNNER_MODEL="openai/fake", EVALRUNNER_API_BASE=ep.api_base)
        cpu_of([*PYTEST, "--golden-record"], project, env)
    return project


def litellm_project(root: Path) -> Path:
    project = root / "litellm"
    project.mkdir()
    (project / "bench_agent.py").write_text(LITELLM_AGENT, encoding="utf-8")
    (project / "test_capital.py").write_text(LITELLM_TEST, encoding="utf-8")
    with FakeEndpoint(responder=lambda body, n: Reply("hello there")) as ep:
        env = user_env(project, BENCH_API_BASE=ep.api_base, PYTHONPATH=str(project))
        cpu_of([*PYTEST, "--golden-record"], project, env)
    return project


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-pr-") as tmp:
        root = Path(tmp)
        proxied = proxied_project(root)
        in_process = litellm_project(root)
        plain = root / "plain"
        plain.mkdir()
        (plain / "test_plain.py").write_text(PLAIN_TEST, encoding="utf-8")
        lines: dict[str, tuple[list[str], Path, dict[str, str], float | None]] = {
            "proxied golden, 1 test": ([*PYTEST], proxied, user_env(proxied), 2.0),
            "litellm golden, 1 test": (
                [*PYTEST],
                in_process,
                user_env(in_process, PYTHONPATH=str(in_process)),
                None,
            ),
            "PR subset (pytest suites)": ([*PYTEST, "suites"], REPO, user_env(root), 3.0),
            "import litellm": (
                [sys.executable, "-c", "import litellm"],
                root,
                user_env(root, LITELLM_LOCAL_MODEL_COST_MAP="True"),
                None,
            ),
            IMPORTED: (
                [sys.executable, "-c", "from evalrunner._litellm import import_litellm as i; i()"],
                root,
                user_env(root),
                None,
            ),
            "a plain test, plugin on": ([*PYTEST], plain, user_env(plain), None),
            "a plain test, plugin off": (
                [*PYTEST, "-p", "no:evalrunner"],
                plain,
                user_env(plain),
                None,
            ),
        }
        cpu: dict[str, list[float]] = {name: [] for name in lines}
        for _ in range(args.rounds):
            for name, (argv, cwd, env, _) in lines.items():
                cpu[name].append(cpu_of(argv, cwd, env))
    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds, {os.cpu_count()} CPUs, load {load:.2f}; CPU s (user + system)")
    print(f"{'line':32} {'median':>7} {'min':>6} {'max':>6}  target")
    for name, (_, _, _, target) in lines.items():
        values = cpu[name]
        mark = (
            ""
            if target is None
            else f"<= {target:.0f} s "
            + ("met" if statistics.median(values) <= target else "NOT met")
        )
        print(
            f"{name:32} {statistics.median(values):7.2f} {min(values):6.2f} {max(values):6.2f}  {mark}"
        )
    subset = statistics.median(cpu["PR subset (pytest suites)"])
    floor = statistics.median(cpu[IMPORTED])
    print(
        f"PR subset without litellm's import, as evalrunner imports it: {subset - floor:.2f} s "
        f"(the example agents call litellm; an agent that does not never imports it)"
    )
    return 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"({time.monotonic() - started:.0f} s)")
    sys.exit(code)
