"""Normalisation: remove from a trajectory what varies between two identical runs.

Pure functions over ATIF dicts. What is volatile was learned by running real
agents twice and diffing (see docs/design.md), not by reading the schema:
ids at every level, timestamps, durations, generation ids, cost, token-id and logprob
arrays, object addresses in reprs, provider tool-call ids, and the completion
order of concurrent sub-agents. Volatile keys are dropped at every level
(``agent.extra.parent_session_id`` as much as the root ``session_id``), except
inside tool arguments and tool definitions, which are the agent's own data. ``schema_version`` and ``model_name`` are kept:
a schema bump or a model swap is a change users want to see.

``normalize(normalize(t)) == normalize(t)`` holds for every input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalrunner._jsonio import canonical

DEFAULT_VOLATILE_KEYS: frozenset[str] = frozenset(
    {
        # Session ids under any name: `session_id`, `parent_session_id`, `sessionId`, ...
        "session_id",
        "*_session_id",
        "sessionId",
        "*SessionId",
        "timestamp",
        # Provider response ids under any name: `generation_id`, `parent_generation_id`, ...
        "generation_id",
        "*_generation_id",
        "generationId",
        "*GenerationId",
        "cost_usd",
        "total_cost_usd",
        # How long a tool ran (its span's): live mode's tool_latency_s, never a golden's.
        "duration_s",
        # Token ids and logprobs change with every sample and bloat goldens.
        "prompt_token_ids",
        "completion_token_ids",
        "logprobs",
    }
)

# `<function f at 0x7f3c2a...>` and friends. Only the repr form is masked: a
# blanket hex mask would also hide real hex values the model produced. The
# pattern cannot match its own output (hex digits must run up to the `>`), so
# masking is idempotent.
ADDRESS_MASK = (re.compile(r"<([^<>\"]*?) at 0x[0-9a-fA-F]+>"), r"<\1 at 0xADDR>")

# Values under these keys are the agent's data, not bookkeeping: a tool
# argument called "timestamp" is behaviour and must survive.
_OPAQUE_KEYS = frozenset({"arguments", "tool_definitions"})


class _Volatility(dict[str, bool]):
    """key -> dropped?, filled on first sight: exact names, and `*suffix` patterns."""

    def __init__(self, keys: frozenset[str]) -> None:
        super().__init__()
        self.exact = frozenset(k for k in keys if not k.startswith("*"))
        self.suffixes = tuple(sorted(k[1:] for k in keys if k.startswith("*") and k[1:]))

    def __missing__(self, key: str) -> bool:
        dropped = key in self.exact or key.endswith(self.suffixes)
        self[key] = dropped
        return dropped


@dataclass(frozen=True)
class NormalizeConfig:
    """What to strip and mask. Extend per suite with :meth:`extended`.

    A volatile key that starts with ``*`` drops every key ending in the rest
    (``*_request_id`` drops ``request_id``'s relatives ``parent_request_id``, ...).
    """

    volatile_keys: frozenset[str] = DEFAULT_VOLATILE_KEYS
    masks: tuple[tuple[re.Pattern[str], str], ...] = (ADDRESS_MASK,)
    sort_subagents: bool = True
    # Whether a key is volatile, memoised per key name (a dict lookup on the hot path).
    volatile: _Volatility = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "volatile", _Volatility(self.volatile_keys))

    def extended(
        self,
        volatile_keys: Iterable[str] = (),
        masks: Iterable[tuple[str, str]] = (),
        keep_order: bool = False,
    ) -> NormalizeConfig:
        return NormalizeConfig(
            volatile_keys=self.volatile_keys | frozenset(volatile_keys),
            masks=self.masks + tuple((re.compile(p), r) for p, r in masks),
            sort_subagents=self.sort_subagents and not keep_order,
        )


DEFAULT_CONFIG = NormalizeConfig()


def normalize(
    trajectory: Mapping[str, Any], config: NormalizeConfig = DEFAULT_CONFIG
) -> dict[str, Any]:
    """Return a normalised copy of an ATIF trajectory dict (the input is not changed)."""
    out = _normalize_trajectory(trajectory, config)
    out.pop("trajectory_id", None)
    return out


def _normalize_trajectory(traj: Mapping[str, Any], config: NormalizeConfig) -> dict[str, Any]:
    # Sub-agents first: their canonical content decides their order and ids.
    subs, id_map = _normalized_subagents(traj, config)
    steps = _Steps(config, id_map)
    out: dict[str, Any] = {}
    for key, value in traj.items():
        if config.volatile[key] or key == "subagent_trajectories":
            continue
        if key == "steps":
            out["steps"] = [steps.step(s) for s in value]
        else:
            out[key] = _clean(value, config, key)
    if subs:
        out["subagent_trajectories"] = subs
    return out


def _normalized_subagents(
    traj: Mapping[str, Any], config: NormalizeConfig
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The sub-agents normalised, in order, numbered ``subagent_1``, ...; and the map
    from their old trajectory ids to the new ones."""
    subs: list[tuple[str | None, dict[str, Any]]] = [
        (sub.get("trajectory_id"), _normalize_trajectory(sub, config))
        for sub in traj.get("subagent_trajectories") or []
    ]
    if config.sort_subagents:
        # Ties (identical sub-agents) go by where the parent first refers to
        # them, so which call's ref gets which id does not follow completion order.
        first_ref = _first_refs(traj)
        subs.sort(
            key=lambda pair: (
                canonical({**pair[1], "trajectory_id": None}),
                first_ref.get(str(pair[0]), len(first_ref)),
            )
        )
    id_map: dict[str, str] = {}
    for i, (old_id, norm) in enumerate(subs, start=1):
        new_id = f"subagent_{i}"
        if old_id is not None:
            id_map.setdefault(old_id, new_id)
        norm["trajectory_id"] = new_id
    return [norm for _, norm in subs], id_map


def _first_refs(traj: Mapping[str, Any]) -> dict[str, int]:
    """Sub-agent trajectory id -> order of its first reference in the steps."""
    order: dict[str, int] = {}
    for step in traj.get("steps") or []:
        for res in (step.get("observation") or {}).get("results") or []:
            for ref in res.get("subagent_trajectory_ref") or []:
                order.setdefault(str(ref.get("trajectory_id")), len(order))
    return order


class _Steps:
    """Normalises the steps of one trajectory. Provider call ids become ``call_1``,
    ``call_2``, ... in order of first appearance (calls and results share the
    numbering, so they still join); sub-agent refs follow ``id_map``."""

    def __init__(self, config: NormalizeConfig, id_map: dict[str, str]) -> None:
        self.config = config
        self.id_map = id_map
        self.call_map: dict[str, str] = {}

    def step(self, step: Mapping[str, Any]) -> dict[str, Any]:
        config = self.config
        out: dict[str, Any] = {}
        for key, value in step.items():
            if config.volatile[key]:
                continue
            if key == "tool_calls" and value is not None:
                out[key] = [self._call(call) for call in value]
            elif key == "observation" and value is not None:
                out[key] = self._observation(value)
            else:
                out[key] = _clean(value, config, key)
        return out

    # Hot path (every call and result of every step): the id mapping and field
    # cleaning are written out where used rather than behind helper calls.

    def _call(self, call: Mapping[str, Any]) -> dict[str, Any]:
        config, call_map, volatile = self.config, self.call_map, self.config.volatile
        new = {k: _clean(v, config, k) for k, v in call.items() if not volatile[k]}
        old = call.get("tool_call_id")
        if old is not None:
            new["tool_call_id"] = call_map.setdefault(str(old), f"call_{len(call_map) + 1}")
        return new

    def _observation(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        config = self.config
        results = _in_call_order([self._result(res) for res in obs.get("results") or []])
        if config.sort_subagents:
            results = _sort_ref_only(results)
        out = {
            k: _clean(v, config, k)
            for k, v in obs.items()
            if k != "results" and not config.volatile[k]
        }
        out["results"] = results
        return out

    def _result(self, res: Mapping[str, Any]) -> dict[str, Any]:
        config, call_map, volatile = self.config, self.call_map, self.config.volatile
        new = {k: _clean(v, config, k) for k, v in res.items() if not volatile[k]}
        if new.get("extra") == {} and "duration_s" in res["extra"]:
            # Its tool's duration was all it held: the result reads as it did untimed, so
            # goldens recorded before tools were timed still match.
            del new["extra"]
        src = res.get("source_call_id")
        if src is not None:
            new["source_call_id"] = call_map.setdefault(str(src), f"call_{len(call_map) + 1}")
        refs = res.get("subagent_trajectory_ref")
        if refs:
            new_refs = [self._ref(ref) for ref in refs]
            if config.sort_subagents:
                new_refs.sort(key=canonical)
            new["subagent_trajectory_ref"] = new_refs
        return new

    def _ref(self, ref: Mapping[str, Any]) -> dict[str, Any]:
        config, volatile = self.config, self.config.volatile
        new = {k: _clean(v, config, k) for k, v in ref.items() if not volatile[k]}
        old = ref.get("trajectory_id")
        if old is not None:
            new["trajectory_id"] = self.id_map.get(old, old)
        return new


def _in_call_order(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool results in the order of the calls they answer (their ids are numbered in call
    order by now): calls made at once finish in any order, which is not behaviour. Results
    of no call keep their places."""
    placed = [r for r in results if isinstance(r.get("source_call_id"), str)]
    if len(placed) <= 1:
        return results
    places = {id(r) for r in placed}
    ordered = iter(sorted(placed, key=lambda r: _call_number(r["source_call_id"])))
    return [next(ordered) if id(r) in places else r for r in results]


def _call_number(call_id: str) -> tuple[int, str]:
    """``call_12`` -> (12, ...): numeric order, not text order (call_10 after call_9)."""
    head, _, number = call_id.rpartition("_")
    return (int(number), head) if head == "call" and number.isdigit() else (1 << 62, call_id)


def _sort_ref_only(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results that only point at sub-agents arrive in completion order: sort them in
    place among the others. Tool results keep the order of the calls that produced them."""
    ref_only = [
        r for r in results if r.get("source_call_id") is None and r.get("subagent_trajectory_ref")
    ]
    if len(ref_only) <= 1:
        return results
    places = {id(r) for r in ref_only}
    ordered = iter(sorted(ref_only, key=canonical))
    return [next(ordered) if id(r) in places else r for r in results]


def _clean(value: Any, config: NormalizeConfig, key: str | None = None) -> Any:
    """Drop volatile keys and mask strings, recursively."""
    if isinstance(value, str):
        return _mask(value, config)
    if isinstance(value, dict):
        if key in _OPAQUE_KEYS:
            return _mask_only(value, config)
        volatile = config.volatile
        return {k: _clean(v, config, k) for k, v in value.items() if not volatile[k]}
    if isinstance(value, list):
        if key in _OPAQUE_KEYS:  # tool_definitions is a list of schemas
            return [_mask_only(v, config) for v in value]
        return [_clean(v, config) for v in value]
    return value


def _mask_only(value: Any, config: NormalizeConfig) -> Any:
    if isinstance(value, str):
        return _mask(value, config)
    if isinstance(value, dict):
        return {k: _mask_only(v, config) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_only(v, config) for v in value]
    return value


def _mask(text: str, config: NormalizeConfig) -> str:
    for pattern, repl in config.masks:
        if pattern is ADDRESS_MASK[0] and " at 0x" not in text:
            continue  # fast path: almost no string holds a repr
        text = pattern.sub(repl, text)
    return text
