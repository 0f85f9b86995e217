"""Diff two normalised trajectories: named behavioural deltas, then text.

Structural deltas come first because they say *what* changed ("step_count
3 -> 4"); the content hash comes last and only says that something else moved
too. The human rendering adds a diff of the pretty JSON so the cause is
visible (a prompt change shows up as a changed system step).

Everything rendered is bounded, whatever the size of the trajectories (the
bounds are :mod:`evalrunner.core._bounded_text`'s): a sequence too long for its
line is summarised, every line is cut around the place that differs, and the
text diff goes block by block, each with its own quota of lines: the steps first
(aligned step by step, ignoring step ids and run-wide call ids, so a removed
step is one hunk and not a renumbering of every later step), then sub-agents,
then the other blocks, and the schema (``schema_version``, ``agent``,
``agent.tool_definitions``) last.
"""

from __future__ import annotations

import difflib
import json
import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from evalrunner._jsonio import canonical, dumps
from evalrunner.core._bounded_text import ELLIPSIS, cap, capped, change, common_ends
from evalrunner.core._shape import Shape, shape

# Order matters: structure first, tokens next, content last.
STRUCTURAL_FIELDS = (
    "step_count",
    "steps",
    "tools",
    "subagent_count",
    "subagent_tools",
    "llm_calls",
    "tool_calls",
    "crashed",
    "subagents_crashed",
)
TOKEN_FIELDS = ("prompt_tokens", "completion_tokens")

_ABSENT: Any = object()  # a list item or key one side does not have (None is JSON null)
# The blocks of a trajectory that describe the agent's setup rather than its run:
# diffed last, so a big tool_definitions change cannot crowd out the steps.
_SCHEMA_KEYS = ("schema_version", "agent")


class Delta(NamedTuple):
    field: str
    golden: Any
    actual: Any

    def __str__(self) -> str:
        return cap(f"{self.field}: {change(self.golden, self.actual)}")


# -- deltas --------------------------------------------------------------------------------


def diff_shapes(
    golden: Shape, actual: Shape, *, token_tolerance: float = 0.0, compare_content: bool = True
) -> list[Delta]:
    deltas = [
        Delta(f, getattr(golden, f), getattr(actual, f))
        for f in STRUCTURAL_FIELDS
        if getattr(golden, f) != getattr(actual, f)
    ]
    for f in TOKEN_FIELDS:
        g, a = getattr(golden, f), getattr(actual, f)
        if abs(a - g) > token_tolerance * max(g, 1):
            deltas.append(Delta(f, g, a))
    if compare_content:
        if golden.final_answer != actual.final_answer:
            deltas.append(Delta("final_answer", golden.final_answer, actual.final_answer))
        if golden.content_hash != actual.content_hash:
            deltas.append(Delta("content_hash", golden.content_hash, actual.content_hash))
    return deltas


def diff(
    golden: Mapping[str, Any],
    actual: Mapping[str, Any],
    *,
    token_tolerance: float = 0.0,
    compare_content: bool = True,
) -> list[Delta]:
    """Deltas between two normalised trajectories: structural fields first, content_hash last.

    ``token_tolerance`` is relative (0.1 = 10%); ``compare_content=False`` ignores
    wording (final answer and hash), as live mode does.
    """
    return diff_shapes(
        shape(golden),
        shape(actual),
        token_tolerance=token_tolerance,
        compare_content=compare_content,
    )


def summary(
    deltas: list[Delta],
    golden: Mapping[str, Any] | None = None,
    actual: Mapping[str, Any] | None = None,
) -> str:
    """One line naming every change: "step_count: 3 -> 4, tools: (lookup,) -> (lookup, lookup)".

    Given the two normalised trajectories, a changed content hash also says where they
    first differ (``content_hash: 'a…' -> 'b…' (first difference: $.steps[2].tool_calls[0]
    .arguments.city: "Paris" -> "Lyon")``): the hash alone names nothing a reader can act on,
    and this line is what pytest's short summary shows. Bounded: each delta is at most
    ``LINE_WIDTH`` characters.
    """
    if not deltas:
        return "no behavioural change"
    parts = [str(d) for d in deltas]
    if golden is not None and actual is not None and deltas[-1].field == "content_hash":
        where = first_difference(golden, actual)
        if where is not None:
            parts[-1] = cap(f"{parts[-1]} (first difference: {where})")
    return ", ".join(parts)


def first_difference(golden: Any, actual: Any, path: str = "$") -> str | None:
    """``path: golden -> actual`` of the first value that differs, in the order a diff shows
    a trajectory (steps, then sub-agents, then the rest, the agent's setup last); None when
    they are equal."""
    if golden == actual:
        return None
    if isinstance(golden, Mapping) and isinstance(actual, Mapping):
        found = _first_in_mapping(golden, actual, path)
    elif isinstance(golden, list) and isinstance(actual, list):
        found = _first_in_list(golden, actual, path)
    else:
        found = None
    return found or f"{path}: {_leaf(golden)} -> {_leaf(actual)}"


def _first_in_mapping(
    golden: Mapping[str, Any], actual: Mapping[str, Any], path: str
) -> str | None:
    keys = list(dict.fromkeys([*golden, *actual]))
    first = [k for k in ("steps", "subagent_trajectories") if k in keys]
    rest = [k for k in keys if k not in first and k not in _SCHEMA_KEYS]
    for key in [*first, *rest, *(k for k in _SCHEMA_KEYS if k in keys)]:
        found = first_difference(
            golden.get(key, _ABSENT), actual.get(key, _ABSENT), f"{path}.{key}"
        )
        if found is not None:
            return found
    return None


def _first_in_list(golden: list[Any], actual: list[Any], path: str) -> str | None:
    for i in range(max(len(golden), len(actual))):
        found = first_difference(
            golden[i] if i < len(golden) else _ABSENT,
            actual[i] if i < len(actual) else _ABSENT,
            f"{path}[{i}]",
        )
        if found is not None:
            return found
    return None


def _leaf(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:59] + ELLIPSIS


# -- the text diff -------------------------------------------------------------------------


def render(
    golden: Mapping[str, Any],
    actual: Mapping[str, Any],
    deltas: list[Delta],
    context: int = 3,
    max_lines: int = 200,
) -> str:
    """The deltas, then a diff of the two pretty-printed normalised trajectories.

    The diff is unified-diff text under one ``--- golden`` / ``+++ actual``
    header, in hunks headed ``@@ <JSON path> -a,b +c,d @@`` (line numbers
    within that block's pretty JSON). Changed steps, of the agent and its
    sub-agents, share ``max_lines``; every other block gets ``max_lines // 4``.
    """
    lines = ["Behaviour changed:"] + [f"  {d}" for d in deltas]
    body: list[str] = []
    quotas = _LineQuotas(max_lines, max(1, max_lines // 4))
    for block, quota in _blocks(golden, actual, "$", 4, quotas):
        block.emit(body, quota, context)
    body += [b.summary(block.what) for block, b in quotas.spent()]
    if body:
        lines += ["", "--- golden", "+++ actual", *body]
    return "\n".join(lines)


class _LineQuota:
    """The diff lines a kind of block may still show."""

    def __init__(self, max_lines: int) -> None:
        self.left = max_lines
        # Changed items past the quota, by where they are: one line at the end says it.
        self.hidden: dict[str, int] = {}

    def summary(self, what: str) -> str:
        count = sum(self.hidden.values())
        where = (
            f" in {next(iter(self.hidden))}"
            if len(self.hidden) == 1
            else f" in {len(self.hidden)} places"
        )
        return f"... {count} more changed {what}{where} not shown"


class _LineQuotas:
    """One line quota per kind of block, shared by the whole tree: a thousand changed
    sub-agents cost what one does, not a thousand quotas."""

    def __init__(self, steps: int, block: int) -> None:
        self.block = block
        self.by_kind: dict[str, tuple[_Block, _LineQuota]] = {}
        self.steps = steps

    def of(self, kind: str, block: _Block) -> _LineQuota:
        size = self.steps if kind == "steps" else self.block
        return self.by_kind.setdefault(kind, (block, _LineQuota(size)))[1]

    def spent(self) -> list[tuple[_Block, _LineQuota]]:
        """The quotas that ran out before their blocks did (with a block of their kind)."""
        return [(block, b) for block, b in self.by_kind.values() if b.hidden]


class _Hunk(NamedTuple):
    """One changed item: its path, and the golden and actual values (or _ABSENT)."""

    path: str
    golden: Any
    actual: Any
    indent: int

    def lines(self, context: int) -> list[str]:
        g = _pretty(self.golden, self.indent)
        a = _pretty(self.actual, self.indent)
        out: list[str] = []
        for line in list(difflib.unified_diff(g, a, n=context, lineterm=""))[2:]:
            if line.startswith("@@"):
                line = f"@@ {self.path} {line[3:]}"
            out.append(line)
        return capped(out)


def _pretty(value: Any, indent: int) -> list[str]:
    if value is _ABSENT:
        return []
    pad = " " * indent
    return [pad + line for line in dumps(value).splitlines()]


class _Block(NamedTuple):
    """The hunks of one block (a trajectory's steps, or one other key), cheap to
    build: a hunk is diffed only when there is quota left to show it."""

    what: str
    where: str
    hunks: list[_Hunk]

    def emit(self, out: list[str], quota: _LineQuota, context: int) -> None:
        for shown, hunk in enumerate(self.hunks):
            if quota.left <= 0:
                hidden = quota.hidden.get(self.where, 0)
                quota.hidden[self.where] = hidden + len(self.hunks) - shown
                return
            lines = hunk.lines(context)
            out.extend(lines[: quota.left])
            if len(lines) > quota.left:
                out.append(f"... {len(lines) - quota.left} more diff lines")
            quota.left -= len(lines)


def _paired(
    golden: Sequence[Mapping[str, Any]], actual: Sequence[Mapping[str, Any]]
) -> list[tuple[int | None, int | None]]:
    """Which golden sub-agent each actual one is: the same ones first (unchanged, wherever
    sorting by content put them), then the rest in order; a side's extras alone.

    Paired by index, one changed worker that moved past another read as two changed
    workers, each diffed against the wrong one."""
    text_g = [canonical({**g, "trajectory_id": None}) for g in golden]
    text_a = [canonical({**a, "trajectory_id": None}) for a in actual]
    rest_g, rest_a = list(range(len(golden))), list(range(len(actual)))
    pairs = _unchanged_pairs(text_g, text_a, rest_g, rest_a)
    both = min(len(rest_g), len(rest_a))
    pairs += list(zip(rest_g[:both], rest_a[:both], strict=True))
    pairs += [(gi, None) for gi in rest_g[both:]] + [(None, ai) for ai in rest_a[both:]]
    return sorted(pairs, key=lambda pair: (pair[0] is None, pair[0] or 0, pair[1] or 0))


def _unchanged_pairs(
    text_g: list[str], text_a: list[str], rest_g: list[int], rest_a: list[int]
) -> list[tuple[int | None, int | None]]:
    """The sub-agents the same on both sides, paired; they leave ``rest_g`` and ``rest_a``."""
    pairs: list[tuple[int | None, int | None]] = []
    for gi in list(rest_g):
        same = next((ai for ai in rest_a if text_a[ai] == text_g[gi]), None)
        if same is not None:
            pairs.append((gi, same))
            rest_g.remove(gi)
            rest_a.remove(same)
    return pairs


def _subagent_blocks(
    golden: Mapping[str, Any],
    actual: Mapping[str, Any],
    path: str,
    indent: int,
    quotas: _LineQuotas,
) -> Iterator[tuple[_Block, _LineQuota]]:
    """The sub-agents' blocks: a pair's own blocks, or one hunk for a side's extra one."""
    g_subs = golden.get("subagent_trajectories") or []
    a_subs = actual.get("subagent_trajectories") or []
    for gi, ai in _paired(g_subs, a_subs):
        sub = f"{path}.subagent_trajectories[{gi if gi is not None else ai}]"
        if gi is not None and ai is not None:
            if gi != ai:  # sorted by content, a changed sub-agent may have moved
                sub += f" (now [{ai}])"
            yield from _blocks(g_subs[gi], a_subs[ai], sub, indent + 4, quotas)
            continue
        g_sub = g_subs[gi] if gi is not None else _ABSENT
        a_sub = a_subs[ai] if ai is not None else _ABSENT
        block = _Block(
            "sub-agents", f"{path}.subagent_trajectories", [_Hunk(sub, g_sub, a_sub, indent)]
        )
        yield block, quotas.of("sub-agents", block)


def _blocks(
    golden: Mapping[str, Any],
    actual: Mapping[str, Any],
    path: str,
    indent: int,
    quotas: _LineQuotas,
) -> Iterator[tuple[_Block, _LineQuota]]:
    """The changed blocks of a trajectory, in the order they are shown."""
    g_steps, a_steps = golden.get("steps") or [], actual.get("steps") or []
    step_hunks = _list_hunks(f"{path}.steps", g_steps, a_steps, indent, steps=True)
    block = _Block("steps", f"{path}.steps", step_hunks)
    yield block, quotas.of("steps", block)
    yield from _subagent_blocks(golden, actual, path, indent, quotas)
    for key, g, a in _other_blocks(golden, actual):
        if g != a:
            hunks = (
                _list_hunks(f"{path}.{key}", g, a, indent)
                if isinstance(g, list) and isinstance(a, list)
                else [_Hunk(f"{path}.{key}", g, a, indent - 2)]
            )
            block = _Block("items", f"{path}.{key}", hunks)
            yield block, quotas.of(f"items of {key}", block)


def _other_blocks(
    golden: Mapping[str, Any], actual: Mapping[str, Any]
) -> Iterator[tuple[str, Any, Any]]:
    """(key, golden value, actual value) of every block but the steps and sub-agents,
    the schema last and ``agent.tool_definitions`` on its own after the agent."""
    keys = sorted(
        (golden.keys() | actual.keys()) - {"steps", "subagent_trajectories"},
        key=lambda k: (k in _SCHEMA_KEYS, _SCHEMA_KEYS.index(k) if k in _SCHEMA_KEYS else 0, k),
    )
    for key in keys:
        g, a = golden.get(key, _ABSENT), actual.get(key, _ABSENT)
        if key == "agent" and isinstance(g, dict) and isinstance(a, dict):
            yield key, _without(g, "tool_definitions"), _without(a, "tool_definitions")
            tools = "tool_definitions"
            yield f"agent.{tools}", g.get(tools, _ABSENT), a.get(tools, _ABSENT)
        else:
            yield key, g, a


def _without(d: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key}


def _list_hunks(
    path: str, golden: Sequence[Any], actual: Sequence[Any], indent: int, steps: bool = False
) -> list[_Hunk]:
    """One hunk per changed item. Common ends are trimmed first (one cheap pass:
    the usual change is a few items in a long run), the rest aligned by content;
    steps are compared without their step ids and run-wide call ids."""
    same, key = (_same_step, _step_key) if steps else (operator.eq, canonical)
    start, end = common_ends(golden, actual, same)
    g_mid, a_mid = golden[start : len(golden) - end], actual[start : len(actual) - end]
    matcher = difflib.SequenceMatcher(None, [key(x) for x in g_mid], [key(x) for x in a_mid])
    hunks: list[_Hunk] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = start + i1 + k, start + j1 + k
            g = golden[i] if i1 + k < i2 else _ABSENT
            a = actual[j] if j1 + k < j2 else _ABSENT
            hunks.append(_Hunk(path + _item_where(i, j, g, a), g, a, indent))
    return hunks


def _item_where(i: int, j: int, golden: Any, actual: Any) -> str:
    """Where a changed list item sits: added, removed, or at its index (and where it went)."""
    if golden is _ABSENT:
        return f"[{j}] added"
    if actual is _ABSENT:
        return f"[{i}] removed"
    return f"[{i}]" if i == j else f"[{i}] -> [{j}]"


def _same_step(golden: Any, actual: Any) -> bool:
    """``_step_key(golden) == _step_key(actual)``, without serialising either."""
    if golden == actual:
        return True
    if (
        not (isinstance(golden, dict) and isinstance(actual, dict))
        or golden.keys() != actual.keys()
    ):
        return False
    ids: dict[Any, Any] = {}
    if not all(_same_part(k, g, actual[k], ids) for k, g in golden.items()):
        return False
    return len(set(ids.values())) == len(ids)  # the id mapping is one-to-one


def _same_part(key: str, golden: Any, actual: Any, ids: dict[Any, Any]) -> bool:
    """One field of two steps the same, call ids mapped consistently (into ``ids``)."""
    if key == "tool_calls":
        return _same_items(golden, actual, "tool_call_id", ids)
    if key == "observation" and isinstance(golden, dict) and isinstance(actual, dict):
        return _same_items(
            golden.get("results"), actual.get("results"), "source_call_id", ids
        ) and _without(golden, "results") == _without(actual, "results")
    return key == "step_id" or golden == actual


def _same_items(golden: Any, actual: Any, field: str, ids: dict[Any, Any]) -> bool:
    """Lists of dicts equal but for ``field``, whose values map consistently (into ``ids``)."""
    if not (isinstance(golden, list) and isinstance(actual, list)) or len(golden) != len(actual):
        return bool(golden == actual)
    return all(_same_item(g, a, field, ids) for g, a in zip(golden, actual, strict=True))


def _same_item(golden: Any, actual: Any, field: str, ids: dict[Any, Any]) -> bool:
    """Two items equal but for ``field`` of two dicts, whose values map into ``ids``."""
    if (
        not (isinstance(golden, dict) and isinstance(actual, dict))
        or golden.keys() != actual.keys()
    ):
        return bool(golden == actual)
    for k, value in golden.items():
        if k == field and value is not None:
            if ids.setdefault(value, actual[k]) != actual[k]:
                return False
        elif value != actual[k]:
            return False
    return True


def _step_key(step: Any) -> str:
    """What a step is, apart from where it sits: without its step id, and with call
    ids numbered within the step (normalised ids are numbered run-wide, so one
    removed call would otherwise change every later step)."""
    if not isinstance(step, dict):
        return canonical(step)
    ids: dict[Any, str] = {}
    key = {k: v for k, v in step.items() if k != "step_id"}
    calls = step.get("tool_calls")
    if isinstance(calls, list):
        key["tool_calls"] = [_local_id(c, "tool_call_id", ids) for c in calls]
    obs = step.get("observation")
    if isinstance(obs, dict) and isinstance(obs.get("results"), list):
        results = [_local_id(r, "source_call_id", ids) for r in obs["results"]]
        key["observation"] = {**obs, "results": results}
    return canonical(key)


def _local_id(item: Any, field: str, ids: dict[Any, str]) -> Any:
    if not isinstance(item, dict) or item.get(field) is None:
        return item
    return {**item, field: ids.setdefault(item[field], f"#{len(ids)}")}
