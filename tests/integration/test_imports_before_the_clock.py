"""The first run of a night does not pay for importing litellm inside its timeout.

On a loaded machine ``import litellm`` takes 12-19 s; paid by the first run it made that
run an infra_error with no model call in 4 of 18 nights (issue 53, row 7). In a fresh
interpreter, the agent of the first run finds litellm already imported when it starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fake_endpoint import FakeEndpoint, Reply
from night_process import EVALRUNNER
from runner_agents import FAKE_KEY, write_suite

AGENT = """
import sys
from pathlib import Path

def agent(task, ctx):
    Path("first.seen").write_text(str("litellm" in sys.modules))
    from evalrunner.reference_agent import run_agent
    return run_agent(task, ctx, {}, max_tool_rounds=1)
"""


def test_the_first_run_starts_with_litellm_already_imported(tmp_path: Path) -> None:
    (tmp_path / "clock_agent.py").write_text(AGENT, encoding="utf-8")
    scenario = {"id": "first", "agent": "clock_agent:agent", "input": "Say hi."}
    write_suite(tmp_path / "suites", "clock", [scenario], runs=1, concurrency=1)
    with FakeEndpoint(default=Reply("hi")) as ep:
        env = {
            **os.environ,
            "EVALRUNNER_API_BASE": ep.api_base,
            "OPENAI_API_KEY": FAKE_KEY,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        }
        env.pop("EVALRUNNER_MODEL", None)
        command = [EVALRUNNER, "run", "--suite", "clock", "--suites-dir", str(tmp_path / "suites")]
        ran = subprocess.run(
            [*command, "--out", str(tmp_path / "out"), "--no-history", "--no-compare"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert (tmp_path / "first.seen").read_text() == "True"
