"""A night against the embedded model on two Ray nodes (one machine, ``ray.cluster_utils``).

Run as a script by tests/integration/test_ray_executor.py, in a process of its
own: a second Ray cluster cannot share the test session's. Prints one JSON
object: per node, where its embedded-model actor runs and what it serves; per
worker, its node and the server it sent runs to; the night's outcomes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import ray as _ray
from ray.cluster_utils import Cluster
from runner_agents import write_suite
from suite_runs import run_suite

from evalrunner.endpoints._endpoints import EndpointPool
from evalrunner.live._ray import RayExecutor
from evalrunner.suite._loader import load_suite

ray: Any = _ray  # untyped calls, as in evalrunner/live/_ray.py


def _node(actor: Any) -> str:
    return str(ray.get_runtime_context().get_node_id())


def main(tmp: Path) -> dict[str, Any]:
    cluster: Any = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    scenario = {"id": "s", "agent": "runner_agents:plain_agent", "input": "Capital of France?"}
    suite = load_suite(write_suite(tmp, "lm", [scenario], runs=4, timeout_s=180))
    executor = RayExecutor(workers=4)
    try:
        pool = EndpointPool(serve_local=executor.serve_local)
        report = asyncio.run(
            run_suite(suite, out=tmp / "out", models=["local"], pool=pool, executor=executor)
        )
        servers: dict[str, dict[str, Any]] = {}
        for node in [n["NodeID"] for n in ray.nodes() if n["Alive"]]:
            actor = ray.get_actor(f"evalrunner-local-model-{node}")
            served = ray.get(actor.api_base.remote())
            servers[node] = {"on": ray.get(actor.__ray_call__.remote(_node)), "serves": served[0]}
        workers = [
            {
                "on": ray.get(w.__ray_call__.remote(_node)),
                "used": ray.get(w.__ray_call__.remote(lambda self: self._local_base)),
            }
            for w in executor.workers
        ]
    finally:
        executor.close()
        ray.shutdown()
        cluster.shutdown()
    return {
        "servers": servers,
        "workers": workers,
        "outcomes": [r.outcome for r in report.records],
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
