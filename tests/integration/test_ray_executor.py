"""`--executor ray` on a real local Ray (2 CPUs, no dashboard), against the fake endpoint.

A night on Ray gives the same records and verdicts as the local executor, and an
adaptive night the same runs and stops; a worker killed mid-run loses no run; a driver killed or interrupted mid-night
leaves a directory that ``--resume`` finishes exactly; the embedded model is
served on each node by an actor pinned there (two nodes: tests/support/ray_two_nodes.py),
used by that node's workers, and stopped with the night. One Ray instance serves the
session (starting one takes ~13 s here).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from baseline_agents import evalrunner
from dataset_world import Capitals, countries, dataset_scenario, write_jsonl
from fake_endpoint import FakeEndpoint, Fault
from night_process import SCENARIOS, planned, respond, start, stop, suite_file, wait_for_runs
from paths import REPO
from runner_agents import FAKE_KEY, fake_pool, write_suite
from suite_runs import run_suite

from evalrunner.baseline._build import build_baselines
from evalrunner.baseline._compare import compare_with_baselines
from evalrunner.endpoints._endpoints import EndpointPool
from evalrunner.endpoints._local_model import embedded_model_available
from evalrunner.live._execute import JobExecutor, LocalExecutor
from evalrunner.live._ray import WORKER_LOST, RayExecutor
from evalrunner.live._results import ResultsDir
from evalrunner.suite._loader import load_suite
from evalrunner.suite._record import RunRecord

ray = pytest.importorskip(
    "ray", reason="ray is not installed (the `ray` extra; .ci/run installs it)"
)

pytestmark = pytest.mark.ray

MACHINE_FIELDS = {"latency_s", "started_at"}
"""What measures the machine rather than the agent: differs between any two nights."""


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """A local Ray for the session; its workers import the test agents (tests/support)."""
    support = str(Path(__file__).resolve().parents[1] / "support")
    # Workers are started by Ray's raylet with its environment: PYTHONPATH (evalrunner and
    # the test agents) and the fake key, as a cluster's runtime_env would give them.
    env = {
        "PYTHONPATH": os.pathsep.join([str(REPO), support, os.environ.get("PYTHONPATH", "")]),
        "OPENAI_API_KEY": FAKE_KEY,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield str(context.address_info["gcs_address"])
    ray.shutdown()


def _night(
    tmp_path: Path, ep: FakeEndpoint, out: str, executor: JobExecutor, **settings: Any
) -> list[RunRecord]:
    suite = load_suite(suite_file(tmp_path, **settings))
    report = asyncio.run(
        run_suite(suite, out=tmp_path / out, pool=fake_pool(ep.api_base), executor=executor)
    )
    return report.records


def _comparable(records: list[RunRecord]) -> list[dict[str, Any]]:
    return sorted(
        (r.model_dump(exclude=MACHINE_FIELDS) for r in records), key=lambda r: r["run_id"]
    )


def test_a_night_on_ray_gives_the_local_records_and_verdicts(
    tmp_path: Path, ray_address: str
) -> None:
    # The endpoint answers at once; a generous run timeout keeps a busy machine (workers
    # starting while other jobs hold the cores) from timing a run out on one side only.
    # Priced (issue 55): each run's cost is made on the worker that ran it, from the
    # endpoint's price the job carries, and equals the local executor's.
    pricing = {"openai/fake": {"input_per_million": 1.0, "output_per_million": 2.0}}
    settings: dict[str, Any] = {"concurrency": 4, "timeout_s": 60, "pricing": pricing}
    with FakeEndpoint(responder=respond) as ep:
        local = _night(tmp_path, ep, "local", LocalExecutor(), **settings)
        executor = RayExecutor(workers=2)
        try:
            on_ray = _night(tmp_path, ep, "ray", executor, **settings)
        finally:
            executor.close()
    assert {r.run_id for r in on_ray} == planned()
    assert _comparable(on_ray) == _comparable(local)
    assert {r.outcome for r in on_ray} == {"passed"}
    assert all(r.cost_usd is not None and r.cost_usd > 0 for r in on_ray)

    suite = load_suite(suite_file(tmp_path, **settings))
    build_baselines(suite, [tmp_path / "local"], tmp_path / "baselines")
    verdicts = [
        sorted(
            (v.scenario, v.metric, v.verdict)
            for v in compare_with_baselines(suite, records, tmp_path / "baselines").results
            if v.metric != "latency_s"  # the machine's, not the agent's
        )
        for records in (local, on_ray)
    ]
    assert verdicts[0] and verdicts[0] == verdicts[1]


def test_a_dataset_night_on_ray_gives_the_local_records_row_by_row(
    tmp_path: Path, ray_address: str
) -> None:
    write_jsonl(tmp_path / "capitals.jsonl", countries(4))
    path = write_suite(tmp_path, "atlas", [dataset_scenario(runs=2)], concurrency=4, timeout_s=60)
    suite = load_suite(path)
    nights = {}
    with FakeEndpoint(responder=Capitals(wrong={1})) as ep:
        for name, executor in (("local", LocalExecutor()), ("ray", RayExecutor(workers=2))):
            try:
                out = tmp_path / name
                pool = fake_pool(ep.api_base)
                nights[name] = asyncio.run(run_suite(suite, out=out, pool=pool, executor=executor))
            finally:
                executor.close()
    on_ray = nights["ray"].records
    assert _comparable(on_ray) == _comparable(nights["local"].records)
    assert sorted((r.row, r.outcome) for r in on_ray) == sorted(
        (f"c{i:02d}", "failed" if i == 1 else "passed") for i in range(4) for _ in range(2)
    )


def test_a_worker_killed_mid_run_loses_no_run(tmp_path: Path, ray_address: str) -> None:
    out = tmp_path / "out"
    with FakeEndpoint(responder=respond, latency=0.3) as ep:
        executor = RayExecutor(workers=2)
        victim = executor.worker_pids()[0]

        async def night() -> list[RunRecord]:
            suite = load_suite(suite_file(tmp_path, concurrency=6))
            task = asyncio.create_task(
                run_suite(suite, out=out, pool=fake_pool(ep.api_base), executor=executor)
            )
            while len(ResultsDir(out).run_files()) < 3:  # some runs done, others in flight
                await asyncio.sleep(0.05)
            os.kill(victim, signal.SIGKILL)
            return (await task).records

        try:
            records = asyncio.run(night())
            survivors = executor.worker_pids()
        finally:
            executor.close()
    assert victim not in survivors  # Ray restarted the killed worker
    assert {r.run_id for r in records} == planned()
    assert {r.outcome for r in records} <= {"passed", "infra_error"}
    lost = [r for r in records if r.outcome == "infra_error"]
    assert all(r.reason and r.reason.startswith(WORKER_LOST) for r in lost)


def test_resume_after_the_driver_is_killed(tmp_path: Path, ray_address: str) -> None:
    out = tmp_path / "out"
    suite_file(tmp_path)
    with FakeEndpoint(responder=respond, latency=0.2) as ep:
        args = ("--suite", "resumable", "--out", str(out), "--no-history", "--no-compare")
        proc = start(ep, tmp_path, *args, "--executor", "ray", "--ray-address", ray_address)
        wait_for_runs(proc, out, 4)
        stop(proc, signal.SIGKILL)
        before = {p: p.read_bytes() for p in ResultsDir(out).run_files()}
        assert 4 <= len(before) < len(planned()), "the kill came too late to test anything"

        suite = load_suite(tmp_path / "resumable.yaml")
        executor = RayExecutor(workers=2)
        try:
            report = asyncio.run(
                run_suite(
                    suite, out=out, resume=True, pool=fake_pool(ep.api_base), executor=executor
                )
            )
        finally:
            executor.close()
    ids = [r.run_id for r in report.records]
    assert sorted(ids) == sorted(planned())  # each planned run once
    assert all(before[p] == p.read_bytes() for p in before)  # finished runs untouched
    assert report.resumed_skipped == len(before)


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (signal.SIGINT, 130, "interrupted"),
        # Before: exit 15 with Ray's stack dump and no resume line, as ray.init set its own
        # SIGTERM handler (a review): a cancelled CI job on Ray.
        (signal.SIGTERM, 143, "terminated (SIGTERM)"),
    ],
    ids=["ctrl-c", "sigterm"],
)
def test_ctrl_c_on_the_driver_cancels_the_cluster_runs_and_leaves_a_resumable_directory(
    tmp_path: Path, ray_address: str, signum: signal.Signals, code: int, said: str
) -> None:
    out = tmp_path / "out"
    suite_file(tmp_path)
    with FakeEndpoint(responder=respond, latency=0.3) as ep:
        args = ("--suite", "resumable", "--out", str(out), "--no-history", "--no-compare")
        ray_args = ("--executor", "ray", "--ray-address", ray_address, "--ray-workers", "2")
        proc = start(ep, tmp_path, *args, *ray_args)
        wait_for_runs(proc, out, 2)
        _, stderr = stop(proc, signum)
        assert proc.returncode == code, stderr[-3000:]
        assert f"{said}; finished runs are saved. Resume with:" in stderr
        assert "Traceback" not in stderr
        results = ResultsDir(out)
        assert results.read_manifest().status == "interrupted"
        done = {p: p.read_bytes() for p in results.run_files()}
        assert len(done) < len(planned()), "the interrupt came too late to test anything"
        # Nothing of the night goes on without its driver: no request after a moment's grace.
        time.sleep(1.0)
        quiet_from = len(ep.requests)
        time.sleep(1.0)
        assert len(ep.requests) == quiet_from

        executor = RayExecutor(workers=2)
        try:
            report = asyncio.run(
                run_suite(
                    load_suite(tmp_path / "resumable.yaml"),
                    out=out,
                    resume=True,
                    pool=fake_pool(ep.api_base),
                    executor=executor,
                )
            )
        finally:
            executor.close()
    assert sorted(r.run_id for r in report.records) == sorted(planned())
    assert all(p.read_bytes() == data for p, data in done.items())


def test_an_adaptive_night_on_ray_makes_the_runs_the_local_executor_makes(
    tmp_path: Path, ray_address: str
) -> None:
    # Latency on loopback measures the machine (and differs between executors), not the agent.
    tolerance = {"min_baseline_nights": 1, "margins": {"latency_s": 20.0}}
    suite_file(tmp_path, runs=10, concurrency=4, tolerance=tolerance)
    common = ("--suite", "resumable", "--suites-dir", str(tmp_path), "--no-history")
    baselines = str(tmp_path / "baselines")
    nights: dict[str, tuple[dict[str, int], list[str]]] = {}
    shown: dict[str, str] = {}
    # A fixed endpoint latency: run latency is then mostly the endpoint's, not the load's.
    with FakeEndpoint(responder=respond, latency=0.05) as ep:
        base = evalrunner(ep, "run", *common, "--out", str(tmp_path / "base"), "--no-compare")
        assert base.exit_code == 0, base.output
        built = evalrunner(
            ep, "baseline", *common[:4], "--from", str(tmp_path / "base"), "--baselines", baselines
        )
        assert built.exit_code == 0, built.output
        for kind in ("local", "ray"):
            extra = ("--ray-address", ray_address, "--ray-workers", "2") if kind == "ray" else ()
            out = tmp_path / kind
            result = evalrunner(
                ep, "run", *common, "--out", str(out), "--adaptive", "--baselines", baselines,
                "--executor", kind, *extra,
            )  # fmt: skip
            assert result.exit_code == 0, result.output
            counts: dict[str, int] = {}
            for record in ResultsDir(out).records():
                counts[record.scenario] = counts.get(record.scenario, 0) + 1
            # The decision, not the tie-break among metrics with no chance of a flag.
            said = [
                line.split(" (best chance")[0]
                for line in result.stderr.splitlines()
                if line.startswith("adaptive:")
            ]
            nights[kind] = (counts, said)
            shown[kind] = result.stderr
    # Nothing changed, so every cell stops at its first look, on either executor.
    assert nights["ray"] == nights["local"], shown
    counts, said = nights["ray"]
    assert set(counts) == set(SCENARIOS) and len(set(counts.values())) == 1
    assert all("stopped after" in line for line in said[:-1]), said


@pytest.mark.skipif(not embedded_model_available(), reason="needs the `local` extra")
def test_the_embedded_model_is_served_by_an_actor_on_the_node_that_runs(
    tmp_path: Path, ray_address: str
) -> None:
    scenario = {"id": "s", "agent": "runner_agents:plain_agent", "input": "Capital of France?"}
    suite = load_suite(write_suite(tmp_path, "lm", [scenario], runs=2, timeout_s=120))
    said: list[str] = []
    executor = RayExecutor(workers=2)
    try:
        pool = EndpointPool(notify=said.append, serve_local=executor.serve_local)
        report = asyncio.run(
            run_suite(suite, out=tmp_path / "out", models=["local"], pool=pool, executor=executor)
        )
        node = ray.get_runtime_context().get_node_id()
        base, error = ray.get(ray.get_actor(f"evalrunner-local-model-{node}").api_base.remote())
        pool.close()
    finally:
        executor.close()
    assert error is None and base.startswith("http://127.0.0.1:")
    assert said == [
        "starting local model (the embedded SmolLM2-135M) on 1 Ray node(s) ...",
        "local model ready on 1 Ray node(s)",
    ]
    # The model answered every run (whatever it said): no infra error, no crash.
    assert {r.model for r in report.records} == {"local"}
    assert {r.outcome for r in report.records} <= {"passed", "failed"}, report.records
    assert all(r.llm_calls >= 1 for r in report.records)
    # Stopped with the night: the actor is gone, and so is its server.
    with pytest.raises(ValueError):
        ray.get_actor(f"evalrunner-local-model-{node}")
    with pytest.raises(OSError):
        urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            f"{base}/models", timeout=2
        )


@pytest.mark.skipif(not embedded_model_available(), reason="needs the `local` extra")
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="the agent finds the server in /proc")
def test_an_embedded_server_that_dies_on_a_ray_node_is_named_with_its_kept_log(
    tmp_path: Path, ray_address: str
) -> None:
    # On Ray the server runs in an actor on each node, not in the driver's pool: the
    # night knew only that every run failed to connect ("check the model endpoint").
    import io

    from evalrunner import NightOptions, run_live

    scenario = {"id": "s", "agent": "runner_agents:server_killing_agent", "input": "Hi"}
    suite = write_suite(tmp_path, "dies", [scenario], runs=2, models=["local"], concurrency=1)
    heard: list[str] = []
    options = NightOptions(
        out=tmp_path / "out", baselines_dir=None, history=None, executor="ray", ray_workers=1
    )
    result = run_live(str(suite), options, progress_stream=io.StringIO(), notify=heard.append)
    # No run reached the model: an outage, not behaviour.
    assert result.outage is not None, [(r.outcome, r.reason) for r in result.report.records]
    [line] = [h for h in heard if "embedded model server" in h]
    assert " on Ray node " in line and "exited with signal 9 (SIGKILL) during the night" in line
    log = Path(line.split("Its log: ")[1])
    assert log.is_file() and " --model " in log.read_text()  # kept for the reader
    import shutil

    shutil.rmtree(log.parent)


@pytest.mark.skipif(not embedded_model_available(), reason="needs the `local` extra")
def test_on_two_nodes_each_worker_uses_its_own_nodes_embedded_model(tmp_path: Path) -> None:
    # Two Ray nodes on this machine (ray.cluster_utils), in a process of its own.
    support = Path(__file__).resolve().parents[1] / "support"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(support)]),
        "NO_PROXY": "127.0.0.1,localhost",
    }
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(
        [sys.executable, str(support / "ray_two_nodes.py"), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    servers, workers = found["servers"], found["workers"]
    assert len(servers) == 2  # one server per node ...
    assert all(s["on"] == node for node, s in servers.items())  # ... pinned to that node
    assert len({s["serves"] for s in servers.values()}) == 2
    # Each worker that ran a job sent it to its own node's server.
    used = [w for w in workers if w["used"] is not None]
    assert used and all(w["used"] == servers[w["on"]]["serves"] for w in used)
    assert found["outcomes"] and set(found["outcomes"]) <= {"passed", "failed"}


@pytest.mark.parametrize("kind", ["503", "empty_choices", "error_body", "reset"])
def test_faults_on_ray_are_retried_in_the_worker_or_end_as_infra_error(
    tmp_path: Path, ray_address: str, kind: str
) -> None:
    # Every other request fails (one run at a time, so each call's first attempt fails
    # and its retry succeeds): the worker's transport retries and every run passes.
    # Every request fails: every run is infra_error, none failed or crashed.
    flaky = threading.Lock(), [0]

    def every_other(body: dict[str, Any], n: int) -> Any:
        with flaky[0]:
            flaky[1][0] += 1
            fail = flaky[1][0] % 2 == 1
        return Fault(kind) if fail else respond(body, n)

    retry = {"max_attempts": 3, "backoff_s": 0.01, "max_backoff_s": 0.05, "request_timeout_s": 2}
    executor = RayExecutor(workers=2)
    try:
        with FakeEndpoint(responder=every_other) as ep:
            passing = _night(
                tmp_path, ep, "flaky", executor, timeout_s=60, retry=retry, concurrency=1
            )
        with FakeEndpoint(default=Fault(kind)) as ep:
            down = _night(tmp_path, ep, "down", executor, timeout_s=60, retry=retry)
    finally:
        executor.close()
    assert {r.outcome for r in passing} == {"passed"}
    assert {r.outcome for r in down} == {"infra_error"}
    assert {r.run_id for r in down} == planned()


def test_an_agent_s_own_keyboard_interrupt_on_a_ray_worker_crashes_its_run_and_the_night_goes_on(
    tmp_path: Path, ray_address: str
) -> None:
    """On the local executor an agent raising KeyboardInterrupt itself is its run's crash;
    on a Ray worker, where no Ctrl-C is watched, it was taken as a stop (issue 53, row 2)."""
    scenarios = [
        {"id": "interrupt", "agent": "runner_agents:interrupting_agent", "input": "q"},
        {"id": "ainterrupt", "agent": "runner_agents:ainterrupting_agent", "input": "q"},
        {"id": "plain", "agent": "runner_agents:plain_agent", "input": "q"},
    ]
    suite = load_suite(write_suite(tmp_path / "suites", "stops", scenarios, runs=2, timeout_s=60))
    executor = RayExecutor(workers=2)
    try:
        with FakeEndpoint(responder=respond) as ep:
            report = asyncio.run(
                run_suite(
                    suite, out=tmp_path / "out", pool=fake_pool(ep.api_base), executor=executor
                )
            )
    finally:
        executor.close()
    found = {(r.scenario, r.outcome, r.reason) for r in report.records}
    assert found == {
        (
            "interrupt",
            "crashed",
            "AgentStopped: the agent raised KeyboardInterrupt(the agent's own)",
        ),
        (
            "ainterrupt",
            "crashed",
            "AgentStopped: the agent raised KeyboardInterrupt(the agent's own)",
        ),
        ("plain", "passed", None),
    }, found
    assert len(report.records) == 6


def test_a_command_agent_s_own_spans_give_the_same_records_on_ray(
    tmp_path: Path, ray_address: str
) -> None:
    """Issue 56 on Ray: a command agent's spans exported to its worker's capture proxy,
    and another's trace written as its run's trajectory, give the records the local
    executor makes: the failed lookup, the tool run alone, each tool's duration."""
    pytest.importorskip("pydantic_ai", reason="the `frameworks` extra")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the `frameworks` extra")
    from sdk_agents import content_responder

    script = str(REPO / "tests" / "support" / "otel_command_agent.py")
    task = "Capitals of: France, Atlantis"
    scenarios: list[dict[str, Any]] = [
        {"id": "exported", "command": [sys.executable, script, "{task}", "--audit"], "input": task},
        {
            "id": "written",
            "command": [sys.executable, script, "{task}", "--write-trace"],
            "input": task,
            "trajectory_file": True,
        },
    ]

    def night(name: str, executor: JobExecutor) -> list[RunRecord]:
        path = write_suite(tmp_path / name, "otel", scenarios, runs=2, timeout_s=60, concurrency=2)
        with FakeEndpoint(responder=content_responder) as ep:
            report = asyncio.run(
                run_suite(
                    load_suite(path),
                    out=tmp_path / name / "out",
                    pool=fake_pool(ep.api_base),
                    executor=executor,
                )
            )
        return report.records

    here = LocalExecutor()  # given, not owned: closed here (its command agents' proxy too)
    try:
        local = night("local", here)
    finally:
        here.close()
    executor = RayExecutor(workers=2)
    try:
        on_ray = night("ray", executor)
    finally:
        executor.close()
    timed = MACHINE_FIELDS | {"tool_latency_s"}  # how long a tool ran: the machine's too

    def untimed(records: list[RunRecord]) -> list[dict[str, Any]]:
        return sorted((r.model_dump(exclude=timed) for r in records), key=lambda r: r["run_id"])

    assert untimed(on_ray) == untimed(local)
    ran = sorted(on_ray, key=lambda r: r.run_id)
    assert [(r.scenario, r.outcome, r.tool_errors) for r in ran] == [
        ("exported", "passed", 1),
        ("exported", "passed", 1),
        ("written", "passed", 1),
        ("written", "passed", 1),
    ]
    assert all(r.tool_latency_s is not None for r in on_ray)
    assert [r.tools_alone for r in on_ray if r.scenario == "exported"] == [["audit"]] * 2
