"""Normalisation removes exactly what varies between two identical runs.

The trajectories here are built with the volatile values real runs produce
(uuid session/trajectory ids at every level, ISO timestamps, generation ids,
provider tool-call ids in the styles real providers send, float-noise costs,
object addresses in prompts, sub-agents in completion order) drawn from a seeded
RNG: the same content under two seeds is "the same run twice".
"""

from __future__ import annotations

import copy
import json
import random
import uuid
from typing import Any

import pytest
from paths import REPO

from evalrunner._jsonio import canonical
from evalrunner.core._diff import diff
from evalrunner.core._normalize import DEFAULT_CONFIG, NormalizeConfig, normalize
from evalrunner.core._shape import shape

COUNTRIES = ["France", "Japan", "Peru", "Kenya", "Italy"]


class _Volatile:
    """The values that differ between two runs of the same agent."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def uid(self) -> str:
        return uuid.UUID(int=self.rng.getrandbits(128)).hex

    def timestamp(self) -> str:
        r = self.rng
        return f"2025-0{r.randint(1, 9)}-1{r.randint(0, 9)}T1{r.randint(0, 9)}:{r.randint(10, 59)}:{r.randint(10, 59)}.{r.randint(0, 999999):06d}Z"

    def call_id(self, fn: str) -> str:
        # The styles real providers send (OpenAI, Anthropic, llama.cpp).
        style = self.rng.randrange(3)
        if style == 0:
            return f"call_{self.rng.getrandbits(48):012x}"
        if style == 1:
            return f"toolu_01{self.rng.getrandbits(64):016x}"
        return f"call__0_{fn}_cmpl-{uuid.UUID(int=self.rng.getrandbits(128))}"

    def address(self) -> str:
        return f"0x7f{self.rng.getrandbits(40):010x}"

    def cost(self) -> float:
        return self.rng.randint(1, 99) / 10000 + 0.000000000000003


def _agent_step(
    v: _Volatile, step_id: int, message: str, calls: list[tuple[str, dict[str, Any], str]]
) -> dict[str, Any]:
    step: dict[str, Any] = {
        "step_id": step_id,
        "timestamp": v.timestamp(),
        "source": "agent",
        "message": message,
        "model_name": "openai/gpt-4o-mini",
        "llm_call_count": 1,
        "metrics": {
            "prompt_tokens": 100 + step_id,
            "completion_tokens": 10 + step_id,
            "cost_usd": v.cost(),
        },
        "extra": {
            "finish_reason": "tool_calls" if calls else "stop",
            "generation_id": f"chatcmpl-{v.uid()}",
        },
    }
    if calls:
        ids = [v.call_id(fn) for fn, _, _ in calls]
        step["tool_calls"] = [
            {"tool_call_id": i, "function_name": fn, "arguments": args}
            for i, (fn, args, _) in zip(ids, calls, strict=True)
        ]
        step["observation"] = {
            "results": [
                {"source_call_id": i, "content": out}
                for i, (_, _, out) in zip(ids, calls, strict=True)
            ]
        }
    return step


def build(
    seed: int,
    *,
    turns: int = 2,
    subagents: int = 2,
    nested: bool = False,
    linked: bool = False,
    task: str = "Find the capitals.",
    name: str = "planner",
) -> dict[str, Any]:
    """A realistic trajectory; everything but the volatile values is fixed by the arguments."""
    v = _Volatile(seed)
    session = v.uid()

    def trajectory(
        agent: str, question: str, n_turns: int, n_subs: int, depth: int
    ) -> dict[str, Any]:
        steps: list[dict[str, Any]] = [
            {
                "step_id": 1,
                "timestamp": v.timestamp(),
                "source": "system",
                # A framework rendering names in scope into the prompt.
                "message": f"You are {agent}. Tools in scope: <function lookup at {v.address()}>, "
                f"<bound method Agent.run of <app.Agent object at {v.address()}>>.",
            },
            {"step_id": 2, "timestamp": v.timestamp(), "source": "user", "message": question},
        ]
        for t in range(n_turns):
            country = COUNTRIES[(t + len(question)) % len(COUNTRIES)]
            calls: list[tuple[str, dict[str, Any], str]] = [
                (
                    "lookup",
                    {"country": country, "timestamp": "as-of-2024"},
                    f"{country} -> capital #{t}",
                )
            ]
            if t % 2:
                calls.append(("population", {"city": country}, f"{t}.5 million"))
            steps.append(_agent_step(v, len(steps) + 1, f"Turn {t}: looking up {country}.", calls))
        subs: list[dict[str, Any]] = []
        if n_subs:
            refs: list[dict[str, Any]] = []
            for k in range(n_subs):
                sub = trajectory(
                    f"{agent}-worker-{k}",
                    f"What is the capital of {COUNTRIES[k % len(COUNTRIES)]}?",
                    1,
                    1 if (depth == 0 and nested) else 0,
                    depth + 1,
                )
                subs.append(sub)
                refs.append({"trajectory_id": sub["trajectory_id"]})
            if linked:
                calls = [("delegate", {"worker": k}, f"worker {k} done") for k in range(n_subs)]
                step = _agent_step(v, len(steps) + 1, "Delegating.", calls)
                for res, ref in zip(step["observation"]["results"], refs, strict=True):
                    res["subagent_trajectory_ref"] = [ref]
            else:  # fan-out: one result pointing at all sub-agents
                step = _agent_step(v, len(steps) + 1, "Fanning out.", [])
                step["observation"] = {"results": [{"subagent_trajectory_ref": refs}]}
            steps.append(step)
        steps.append(
            _agent_step(v, len(steps) + 1, f"Done: Paris, checksum 0xdeadbeef ({agent}).", [])
        )
        traj: dict[str, Any] = {
            "schema_version": "ATIF-v1.8",
            "session_id": session,
            "trajectory_id": v.uid(),
            "agent": {"name": agent, "version": "1.0", "model_name": "openai/gpt-4o-mini"},
            "steps": steps,
            "final_metrics": {
                "total_prompt_tokens": sum(
                    s.get("metrics", {}).get("prompt_tokens", 0) for s in steps
                ),
                "total_completion_tokens": sum(
                    s.get("metrics", {}).get("completion_tokens", 0) for s in steps
                ),
                "total_cost_usd": v.cost(),
                "total_steps": len(steps),
            },
        }
        if subs:
            v.rng.shuffle(subs)  # completion order under asyncio.gather
            traj["subagent_trajectories"] = subs
        return traj

    return trajectory(name, task, turns, subagents, 0)


def _order(traj: dict[str, Any]) -> list[str]:
    return [s["agent"]["name"] for s in traj["subagent_trajectories"]]


def _two_orders(**kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same run twice, with the sub-agents finishing in a different order."""
    a = build(100, **kwargs)
    b = next(
        t for t in (build(seed, **kwargs) for seed in range(101, 200)) if _order(t) != _order(a)
    )
    return a, b


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


def _keys(obj: Any) -> set[str]:
    """Keys at every level, except inside tool arguments (the agent's data)."""
    if isinstance(obj, dict):
        return set(obj) | {k for key, v in obj.items() if key != "arguments" for k in _keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in _keys(v)}
    return set()


# ------------------------------------------------------------------ volatile fields


def test_runs_differing_only_in_ids_and_timestamps_have_no_deltas() -> None:
    a, b = build(1, nested=True), build(2, nested=True)
    assert a != b
    # Every kind of volatile value really differs between the two raw runs.
    assert a["session_id"] != b["session_id"]
    assert a["steps"][0]["message"] != b["steps"][0]["message"]  # object addresses
    assert a["steps"][2]["timestamp"] != b["steps"][2]["timestamp"]
    assert (
        a["steps"][2]["tool_calls"][0]["tool_call_id"]
        != b["steps"][2]["tool_calls"][0]["tool_call_id"]
    )
    assert a["steps"][2]["extra"]["generation_id"] != b["steps"][2]["extra"]["generation_id"]
    assert a["final_metrics"]["total_cost_usd"] != b["final_metrics"]["total_cost_usd"]
    assert _order(a) != _order(b)

    na, nb = normalize(a), normalize(b)
    assert na == nb
    assert canonical(na) == canonical(nb)
    assert diff(na, nb) == []
    assert shape(na) == shape(nb)


def test_generation_ids_under_any_name_are_volatile() -> None:
    doc = build(2)
    doc["steps"][1]["extra"] = {
        "generation_id": "g1",
        "parent_generation_id": "g0",
        "previousGenerationId": "g-1",
        "generations": 2,  # not an id: behaviour, kept
    }
    assert normalize(doc)["steps"][1]["extra"] == {"generations": 2}


def test_volatile_keys_are_gone_at_every_level_and_behaviour_is_kept() -> None:
    norm = normalize(build(3, nested=True))
    keys = _keys(norm)
    for key in ("session_id", "timestamp", "generation_id", "cost_usd", "total_cost_usd"):
        assert key not in keys
    assert "trajectory_id" not in norm
    subs = norm["subagent_trajectories"]
    assert [s["trajectory_id"] for s in subs] == ["subagent_1", "subagent_2"]
    assert subs[0]["subagent_trajectories"][0]["trajectory_id"] == "subagent_1"
    # What is behaviour stays: schema version, model names, tokens, tool arguments
    # (even one called "timestamp": arguments are the agent's data).
    assert norm["schema_version"] == "ATIF-v1.8"
    assert norm["agent"]["model_name"] == "openai/gpt-4o-mini"
    step = norm["steps"][2]
    assert step["model_name"] == "openai/gpt-4o-mini"
    assert step["metrics"] == {"prompt_tokens": 103, "completion_tokens": 13}
    assert step["tool_calls"][0]["arguments"]["timestamp"] == "as-of-2024"


def test_live_captures_of_the_same_run_normalise_equal() -> None:
    """Two real captures through litellm against the loopback endpoint: fresh provider
    call ids, generation ids, uuids and timestamps each time; nothing else differs."""
    from agents_for_tests import with_subagent
    from fake_endpoint import FakeEndpoint, Reply

    from evalrunner.core._scope import run_captured

    def responder(body: dict[str, Any], n: int) -> Reply:
        if body.get("tools") and not any(m["role"] == "tool" for m in body["messages"]):
            return Reply(
                None,
                tool_calls=[("lookup", '{"country": "Japan"}')],
                prompt_tokens=20,
                completion_tokens=5,
            )
        return Reply("Tokyo.", prompt_tokens=30, completion_tokens=2)

    runs = []
    for _ in range(2):
        with FakeEndpoint(responder=responder) as ep:
            res = run_captured(with_subagent, ep.api_base)
        assert res.error is None, res.traceback
        runs.append(res.trajectory)
    a, b = runs
    assert (
        a["steps"][1]["tool_calls"][0]["tool_call_id"]
        != b["steps"][1]["tool_calls"][0]["tool_call_id"]
    )
    assert a["steps"][1]["extra"]["generation_id"] != b["steps"][1]["extra"]["generation_id"]
    assert (
        a["subagent_trajectories"][0]["trajectory_id"]
        != b["subagent_trajectories"][0]["trajectory_id"]
    )
    na, nb = normalize(a), normalize(b)
    assert na == nb
    assert diff(na, nb) == []
    assert normalize(na) == na
    # The parent's tool call and its observation still join, and the sub-agent ref resolves.
    step = na["steps"][1]
    assert step["tool_calls"][0]["tool_call_id"] == "call_1"
    (result,) = step["observation"]["results"]
    assert result["source_call_id"] == "call_1"
    assert result["subagent_trajectory_ref"] == [{"trajectory_id": "subagent_1"}]
    assert na["subagent_trajectories"][0]["trajectory_id"] == "subagent_1"


# ------------------------------------------------------------------ idempotence


@pytest.mark.parametrize("keep_order", [False, True])
def test_normalize_is_idempotent_over_many_built_trajectories(keep_order: bool) -> None:
    config = DEFAULT_CONFIG.extended(keep_order=keep_order)
    for seed in range(40):
        rng = random.Random(seed)
        traj = build(
            seed,
            turns=rng.randrange(4),
            subagents=rng.randrange(4),
            nested=rng.random() < 0.5,
            linked=rng.random() < 0.5,
        )
        once = normalize(traj, config)
        assert normalize(once, config) == once, f"seed {seed}"
        assert canonical(normalize(once, config)) == canonical(once)


def test_normalize_does_not_change_its_input() -> None:
    traj = build(5, nested=True, linked=True)
    before = copy.deepcopy(traj)
    normalize(traj)
    assert traj == before


def test_normalize_is_idempotent_on_the_committed_goldens() -> None:

    from evalrunner.frozen._golden import Golden

    goldens = sorted((REPO / "suites" / "goldens").glob("*/*.json"))
    goldens = [g for g in goldens if not g.name.endswith(".llm.json")]
    assert goldens
    for path in goldens:
        golden = Golden.load(path)
        assert normalize(golden.trajectory) == golden.trajectory, path
        assert shape(golden.trajectory) == golden.shape, path


# ------------------------------------------------------------------ object addresses


def test_repr_addresses_are_masked_but_real_hex_is_kept() -> None:
    traj = build(7, turns=0, subagents=0)
    traj["steps"][1]["message"] = (
        "Call <function f at 0x7f3c2a1b4e50> on 0xdeadbeef and 0x7f3c2a1b4e50."
    )
    norm = normalize(traj)
    assert norm["steps"][0]["message"] == (
        "You are planner. Tools in scope: <function lookup at 0xADDR>, "
        "<bound method Agent.run of <app.Agent object at 0xADDR>>."
    )
    assert (
        norm["steps"][1]["message"]
        == "Call <function f at 0xADDR> on 0xdeadbeef and 0x7f3c2a1b4e50."
    )
    # Model output with hex in it is behaviour.
    assert norm["steps"][-1]["message"] == "Done: Paris, checksum 0xdeadbeef (planner)."
    assert normalize(norm) == norm
    assert all("0x7f" not in s for s in _strings(normalize(build(8))) if " at 0x" in s)


def test_addresses_in_tool_arguments_and_observations_are_masked() -> None:
    a, b = build(9, turns=1, subagents=0), build(10, turns=1, subagents=0)
    for traj, addr in ((a, "0x7f0000000001"), (b, "0x55aa00000002")):
        traj["steps"][2]["tool_calls"][0]["arguments"]["callback"] = f"<function cb at {addr}>"
        traj["steps"][2]["observation"]["results"][0]["content"] = f"<Node object at {addr}> done"
    assert normalize(a) == normalize(b)
    assert (
        normalize(a)["steps"][2]["tool_calls"][0]["arguments"]["callback"]
        == "<function cb at 0xADDR>"
    )


# ------------------------------------------------------------------ tool-call ids


def test_tool_call_ids_are_renumbered_and_observations_follow() -> None:
    traj = build(11, turns=3, subagents=0)
    raw_ids = [c["tool_call_id"] for s in traj["steps"] for c in s.get("tool_calls") or []]
    assert len(set(raw_ids)) == 4
    norm = normalize(traj)
    steps = [s for s in norm["steps"] if s.get("tool_calls")]
    ids = [c["tool_call_id"] for s in steps for c in s["tool_calls"]]
    assert ids == ["call_1", "call_2", "call_3", "call_4"]
    for step in steps:
        calls = {c["tool_call_id"]: c for c in step["tool_calls"]}
        for res in step["observation"]["results"]:
            # The join survives: each result still names the call that produced it.
            call = calls[res["source_call_id"]]
            assert (
                res["content"].startswith(call["arguments"].get("country", ""))
                or call["function_name"] == "population"
            )


def test_provider_id_styles_all_map_to_the_same_numbering() -> None:
    def one(call_ids: list[str]) -> dict[str, Any]:
        traj = build(12, turns=1, subagents=0)
        step = traj["steps"][2]
        step["tool_calls"] = [
            {"tool_call_id": cid, "function_name": "lookup", "arguments": {"country": c}}
            for cid, c in zip(call_ids, ["France", "Peru"], strict=True)
        ]
        # Results in the other order than the calls: the join is by id, not position.
        step["observation"] = {
            "results": [
                {"source_call_id": call_ids[1], "content": "Lima"},
                {"source_call_id": call_ids[0], "content": "Paris"},
            ]
        }
        return normalize(traj)

    styles = [
        ["call_3hfgfv2c", "call_9xk2m1qp"],
        ["toolu_01A09q90qw90lq917835lq9", "toolu_01B77"],
        [
            "call__0_lookup_cmpl-614aebf2-91ab-4e9a-a25a-8f02221f429d",
            "call__1_lookup_cmpl-614aebf2-91ab-4e9a-a25a-8f02221f429d",
        ],
    ]
    norms = [one(ids) for ids in styles]
    assert norms[0] == norms[1] == norms[2]
    results = norms[0]["steps"][2]["observation"]["results"]
    # Joined by id, then put in the calls' order (which call finished first is not behaviour).
    assert results == [
        {"source_call_id": "call_1", "content": "Paris"},
        {"source_call_id": "call_2", "content": "Lima"},
    ]


# ------------------------------------------------------------------ sub-agents


def test_subagents_are_sorted_and_refs_rewritten() -> None:
    a, b = _two_orders(subagents=3)
    na, nb = normalize(a), normalize(b)
    assert na == nb
    subs = na["subagent_trajectories"]
    assert [s["trajectory_id"] for s in subs] == ["subagent_1", "subagent_2", "subagent_3"]
    refs = [
        r["trajectory_id"]
        for s in na["steps"]
        for res in (s.get("observation") or {}).get("results", [])
        for r in res.get("subagent_trajectory_ref", [])
    ]
    assert sorted(refs) == ["subagent_1", "subagent_2", "subagent_3"]


def test_linked_subagents_keep_their_call_join_whatever_the_completion_order() -> None:
    a, b = _two_orders(subagents=3, linked=True)
    na, nb = normalize(a), normalize(b)
    assert na == nb
    by_id = {s["trajectory_id"]: s for s in na["subagent_trajectories"]}
    step = next(s for s in na["steps"] if s["message"] == "Delegating.")
    for call, res in zip(step["tool_calls"], step["observation"]["results"], strict=True):
        assert res["source_call_id"] == call["tool_call_id"]
        (ref,) = res["subagent_trajectory_ref"]
        worker = call["arguments"]["worker"]
        assert by_id[ref["trajectory_id"]]["agent"]["name"] == f"planner-worker-{worker}"


def test_identical_subagents_map_refs_by_first_reference() -> None:
    """Two sub-agents with the same content (same task, same replayed answer)
    sort as ties; which id each call's ref gets must not follow completion order."""
    a = build(25, subagents=2, linked=True)
    for sub in a["subagent_trajectories"]:
        sub["agent"]["name"] = "twin"
        sub["steps"] = copy.deepcopy(a["subagent_trajectories"][0]["steps"])
    b = copy.deepcopy(a)
    b["subagent_trajectories"].reverse()
    assert normalize(a) == normalize(b)
    assert normalize(normalize(a)) == normalize(a)


def test_keep_order_switch_keeps_completion_order() -> None:
    config = DEFAULT_CONFIG.extended(keep_order=True)
    assert config.sort_subagents is False
    a, b = _two_orders(subagents=3)
    na, nb = normalize(a, config), normalize(b, config)
    assert na != nb
    assert _order(na) == _order(a)
    assert [s["trajectory_id"] for s in na["subagent_trajectories"]] == [
        "subagent_1",
        "subagent_2",
        "subagent_3",
    ]
    deltas = diff(na, nb)
    assert [d.field for d in deltas] == ["content_hash"]
    # Same completion order: still equal with order kept.
    assert normalize(build(7, subagents=3), config) == normalize(build(7, subagents=3), config)


# ------------------------------------------------------------------ extension


def test_extended_volatile_keys() -> None:
    a, b = build(30, subagents=1), build(31, subagents=1)
    for traj, rid in ((a, "req-1"), (b, "req-2")):
        traj["steps"][2]["extra"]["request_id"] = rid
        traj["subagent_trajectories"][0]["extra"] = {"request_id": rid, "kept": True}
    assert normalize(a) != normalize(b)
    config = DEFAULT_CONFIG.extended(volatile_keys=["request_id"])
    assert "request_id" in config.volatile_keys and "session_id" in config.volatile_keys
    na, nb = normalize(a, config), normalize(b, config)
    assert na == nb
    assert na["subagent_trajectories"][0]["extra"] == {"kept": True}
    assert normalize(na, config) == na


def test_extended_masks_apply_after_the_defaults_and_stay_idempotent() -> None:
    a, b = build(32, turns=1, subagents=0), build(33, turns=1, subagents=0)
    a["steps"][1]["message"] = "Today is 2025-01-07, temp dir /tmp/tmpab12cd."
    b["steps"][1]["message"] = "Today is 2026-11-30, temp dir /tmp/tmpzz99yy."
    config = DEFAULT_CONFIG.extended(
        masks=[(r"\d{4}-\d{2}-\d{2}", "<DATE>"), (r"/tmp/tmp\w+", "<TMP>")]
    )
    assert len(config.masks) == len(DEFAULT_CONFIG.masks) + 2
    na, nb = normalize(a, config), normalize(b, config)
    assert na == nb
    assert na["steps"][1]["message"] == "Today is <DATE>, temp dir <TMP>."
    assert na["steps"][0]["message"].count("0xADDR") == 2  # defaults still apply
    assert normalize(na, config) == na
    # Extending is pure: the default config is untouched.
    assert DEFAULT_CONFIG.masks == NormalizeConfig().masks


def test_normalised_form_is_plain_json() -> None:
    norm = normalize(build(40, nested=True, linked=True))
    assert json.loads(json.dumps(norm)) == norm


def test_tool_parameters_named_like_volatile_keys_survive_normalisation() -> None:
    schema = {
        "type": "object",
        "properties": {"timestamp": {"type": "string"}, "session_id": {"type": "string"}},
    }
    traj = {
        "schema_version": "ATIF-v1.8",
        "agent": {
            "name": "a",
            "version": "1",
            "tool_definitions": [
                {"type": "function", "function": {"name": "f", "parameters": schema}}
            ],
        },
        "steps": [
            {"step_id": 1, "source": "user", "message": "hi", "timestamp": "2026-01-01T00:00:00Z"}
        ],
    }
    out = normalize(traj)
    assert out["agent"]["tool_definitions"][0]["function"]["parameters"] == schema
    assert "timestamp" not in out["steps"][0]


def test_session_ids_are_dropped_under_any_name_at_every_level() -> None:
    """harbor's summarisation sub-agents name their parent run in
    ``agent.extra.parent_session_id``; other producers write ``sessionId`` or
    ``rootSessionId``. All are session ids; tool data keeps its keys."""
    path = REPO / "tests" / "unit" / "core" / "data" / "summarisation_subagent.json"
    runs = []
    for n in (1, 2):
        traj = json.loads(path.read_text())
        traj["session_id"] = f"run-{n}-summary"
        traj["agent"]["extra"]["parent_session_id"] = f"run-{n}"
        traj["steps"][4]["extra"] = {"sessionId": f"s{n}", "rootSessionId": f"r{n}", "kept": 1}
        traj["steps"][1]["tool_calls"][0]["arguments"]["parent_session_id"] = "tool data"
        traj["agent"]["tool_definitions"] = [{"parameters": {"parent_session_id": "schema"}}]
        runs.append(normalize(traj))
    a, b = runs
    assert a == b and normalize(a) == a
    assert a["agent"]["extra"] == {"summarization_index": 1}
    assert a["steps"][4]["extra"] == {"kept": 1}
    assert a["steps"][1]["tool_calls"][0]["arguments"]["parent_session_id"] == "tool data"
    assert a["agent"]["tool_definitions"] == [{"parameters": {"parent_session_id": "schema"}}]
    bookkeeping = copy.deepcopy(a)
    del bookkeeping["agent"]["tool_definitions"]
    assert not any(k.endswith(("session_id", "SessionId", "sessionId")) for k in _keys(bookkeeping))


def test_a_star_volatile_key_drops_every_key_with_that_suffix() -> None:
    traj = build(50, turns=1, subagents=1)
    traj["steps"][2]["extra"]["parent_request_id"] = "req-1"
    traj["steps"][2]["extra"]["request_id_note"] = "kept: not a suffix match"
    config = DEFAULT_CONFIG.extended(volatile_keys=["*_request_id"])
    extra = normalize(traj, config)["steps"][2]["extra"]
    assert "parent_request_id" not in extra and extra["request_id_note"].startswith("kept")
    assert "parent_request_id" in normalize(traj)["steps"][2]["extra"]  # defaults untouched


def test_results_of_calls_made_at_once_are_in_call_order_whatever_finished_first() -> None:
    # Before: the same two parallel calls answered in the other order were a change
    # (content_hash only), a false alarm in every golden of an agent that runs tools at once.
    def run(first: str, second: str, answers: tuple[str, str]) -> dict[str, Any]:
        calls = [
            {"tool_call_id": first, "function_name": "lookup", "arguments": {"country": "France"}},
            {"tool_call_id": second, "function_name": "lookup", "arguments": {"country": "Peru"}},
        ]
        results = {first: "Paris", second: "Lima"}
        return {
            "schema_version": "ATIF-v1.5",
            "session_id": "s",
            "agent": {"name": "a", "version": "1"},
            "steps": [
                {"step_id": 1, "source": "user", "message": "capitals?"},
                {
                    "step_id": 2,
                    "source": "agent",
                    "message": "",
                    "tool_calls": calls,
                    "observation": {
                        "results": [{"source_call_id": c, "content": results[c]} for c in answers]
                    },
                },
            ],
        }

    in_order = normalize(run("call_a", "call_b", ("call_a", "call_b")))
    finished_late = normalize(run("call_x", "call_y", ("call_y", "call_x")))
    assert in_order == finished_late
    assert [r["content"] for r in in_order["steps"][1]["observation"]["results"]] == [
        "Paris",
        "Lima",
    ]
    # What the calls were answered still counts: another answer to the first is a change.
    other = copy.deepcopy(in_order)
    other["steps"][1]["observation"]["results"][0]["content"] = "Lyon"
    assert normalize(other) != in_order
