"""Loading ATIF documents: our own captures strictly, other tools' leniently.

Validation uses the `atif` package's pydantic models (ATIF v1.8 with its
normative rules: sequential step ids, agent-only fields, call-id joins,
resolvable sub-agent refs). Documents from other producers are messy (v1.2 to
v1.8, "1.4" without prefix, arguments as JSON strings, observation content as
objects, step-level `usage` instead of `metrics`, a step message written as
the `{role, content}` chat messages it came from); lenient loading repairs what
has one obvious repair, warns about each repair, and otherwise fails with one
line naming the JSON path and the error that explains the failure.
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from evalrunner._jsonio import JsonLines, parse_json, pydantic_message, read_json
from evalrunner.core._continuation import TOTALS, append
from evalrunner.core._otel import is_otlp, otlp_lines, trajectory_from_otlp
from evalrunner.errors import FileFormatError, TrajectoryError

SUPPORTED_VERSIONS = ("1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8")
_VERSION = re.compile(r"^(?:ATIF-)?v?(\d+\.\d+)$", re.IGNORECASE)


class TrajectoryWarning(UserWarning):
    """A non-conformant document was repaired while loading leniently."""


def _path(loc: tuple[int | str, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def validate(doc: dict[str, Any], source: str = "trajectory") -> None:
    """Raise TrajectoryError (one line, JSON path first) unless ``doc`` is valid ATIF v1.8."""
    from atif import Trajectory

    try:
        Trajectory.model_validate(doc)
    except ValidationError as exc:
        raise TrajectoryError(f"{source}: {_explain(doc, exc.errors())}") from None


class _Located(NamedTuple):
    """A pydantic error split into its JSON path in the document and its union branch."""

    path: tuple[int | str, ...]
    site: int | None  # how much of ``path`` leads to the union that failed, if one did
    branch: str | None  # the union member this error was raised under
    error: ErrorDetails


def _locate(doc: Any, error: ErrorDetails) -> _Located:
    """Tell real path steps from union branch tags ('str', 'list[...]', 'ImageSource')
    by walking the document: a tag is a location step the data does not have."""
    path: list[int | str] = []
    site: int | None = None
    branch: str | None = None
    data = doc
    loc = error["loc"]
    for i, part in enumerate(loc):
        missing = i == len(loc) - 1 and error["type"] == "missing"
        if _has(data, part, missing):
            path.append(part)
            data = data.get(part) if isinstance(data, dict) else data[part]
        elif site is None:  # the outermost union decides which branch this error belongs to
            site, branch = len(path), str(part)
    return _Located(tuple(path), site, branch, error)


def _has(data: Any, part: int | str, missing: bool) -> bool:
    """Whether ``part`` is a step into ``data`` (a key, an index, or the missing key)."""
    if isinstance(data, dict) and isinstance(part, str):
        return part in data or missing
    return isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)


def _explain(doc: dict[str, Any], errors: list[ErrorDetails]) -> str:
    """The error that explains the failure, as ``$.path: message``.

    pydantic lists a failed union's branches in schema order, so the first error
    is often the wrong branch ("Input should be a valid string" for a message
    that is a list). Among the branches of the union the first error failed in,
    the one whose errors reach deepest into the value is the one that was meant.
    """
    first = _locate(doc, errors[0])
    if first.site is None:
        return f"{_path(first.path)}: {pydantic_message(first.error)}"
    prefix = first.path[: first.site]
    rivals = [
        e
        for e in (_locate(doc, err) for err in errors)
        if e.site == first.site and e.path[: e.site] == prefix
    ]
    best = max(rivals, key=lambda e: len(e.path))  # first of the deepest, in pydantic's order
    members = " or ".join(dict.fromkeys(_member(e.branch) for e in rivals))
    value = _at(doc, prefix)
    if best.path == prefix:  # no branch got into the value: it has the wrong type for all
        return f"{_path(prefix)}: expected {members}, got {_JSON_TYPES.get(type(value), 'a value')}"
    notes = _union_notes(rivals, best, members, prefix, value)
    return f"{_path(best.path)}: {pydantic_message(best.error).rstrip('.')} ({'; '.join(notes)})"


def _union_notes(
    rivals: list[_Located], best: _Located, members: str, prefix: tuple[int | str, ...], value: Any
) -> list[str]:
    """What follows the branch's own error: how many more it had, which branch it was read
    as and which it may be, and the chat-message shape lenient loading accepts."""
    same_branch = sum(e.branch == best.branch for e in rivals)
    notes = [f"and {same_branch - 1} more"] if same_branch > 1 else []
    notes.append(f"reading {_path(prefix)} as {_member(best.branch)}; it may be {members}")
    if _chat_parts(value) is not None:
        notes.append("it is a list of {role, content} chat messages, which lenient loading joins")
    return notes


_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def _member(tag: str | None) -> str:
    """'list[function-after[_check_payload(), ContentPart]]' -> 'list[ContentPart]'."""
    return re.sub(r"function-(?:after|before|wrap|plain)\[[^,\]]*, ([^\]]+)\]", r"\1", str(tag))


def _at(doc: Any, path: tuple[int | str, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def load(source: Any, *, strict: bool = False, name: str | None = None) -> dict[str, Any]:
    """Accept an ATIF trajectory as a dict, JSON text, a path (``Path`` or ``str``) or atif models.

    A ``str`` is JSON text if it starts with ``{`` (after whitespace) and is not
    the name of an existing file; any other ``str`` is a path. Returns a plain
    dict. ``strict=True`` rejects anything non-conformant; otherwise known
    deviations are repaired with a :class:`TrajectoryWarning`.
    """
    doc, label, file = _document(source, name)
    if is_otlp(doc):  # an OpenTelemetry export: its GenAI spans read as the trajectory
        doc = trajectory_from_otlp(doc, label)
    doc = _checked(doc, label, strict)
    _count_unconfirmed_copies(doc, label)
    _warn_copied_context_after_work(doc, label, "$")
    if file is not None:
        _follow_files(doc, file, label, strict, {file.resolve()})
    _warn_dangling_refs(doc, label, "$")
    return doc


def _checked(doc: Any, label: str, strict: bool) -> dict[str, Any]:
    """One document validated (and, lenient, repaired) on its own terms."""
    _check_one_document(doc, label)
    checked = _check_versions(doc, label, "$", repair=not strict)
    if not strict:
        checked = _repair(checked, label, "$")
    validate(checked, label)
    _numbers_not_text(checked, label, "$", repair=not strict)
    return checked


def _count_unconfirmed_copies(doc: dict[str, Any], label: str) -> None:
    """ATIF marks ``is_copied_context`` on the steps a continuation or a sub-agent copies
    from the trajectory before it, which is read too and counted there. A top-level
    document read on its own continues nothing read here: steps it marks as copied are
    its own work as far as any count can tell, so they count, and this is said (a real
    264-step run marked 229 of its steps so, and every count lost most of its work)."""
    marked = [s for s in _objects(doc.get("steps")) if s.get("is_copied_context") is True]
    if not marked:
        return
    for step in marked:
        step["is_copied_context"] = False
    _warn(
        label,
        "$.steps",
        f"{len(marked)} step(s) are marked is_copied_context, but this trajectory continues "
        "none read here; they are counted as this run's work. To have them read as copies, "
        "load the trajectory whose continued_trajectory_ref names this file",
    )


def _document(source: Any, name: str | None) -> tuple[Any, str, Path | None]:
    """What ``source`` holds as a JSON document, its label in messages, and the file it
    came from (its links are relative to it), if any."""
    label = name or "trajectory"
    if isinstance(source, BaseModel):
        return source.model_dump(mode="json", exclude_none=True), label, None
    if isinstance(source, Path):
        return _read(source, str(source), "trajectory not found"), name or str(source), source
    if isinstance(source, str):
        return _from_text(source, name, label)
    if isinstance(source, dict):
        return copy.deepcopy(source), label, None
    raise TrajectoryError(
        f"{label}: expected an ATIF dict, JSON text, path or atif model, got {type(source).__name__}"
    )


def _from_text(source: str, name: str | None, label: str) -> tuple[Any, str, Path | None]:
    """A ``str`` source: JSON text if it starts with '{' and names no file, else a path."""
    if _is_json_text(source):
        return parse_json(source, label, TrajectoryError), label, None
    if not source.strip():
        raise TrajectoryError(f"{label}: empty text; expected ATIF JSON text or a path")
    doc = _read(
        Path(source), _shown(source), "no such file (a str is a path unless it starts with '{')"
    )
    return doc, name or _shown(source), Path(source)


def _warn_copied_context_after_work(doc: dict[str, Any], label: str, path: str) -> None:
    """Copied context belongs at the start of a continuation; marked later, it is a
    producer's own work that every count would silently drop."""
    late = _copied_after_work(doc)
    if late:
        _warn(
            label,
            f"{path}.steps[{late[0]}]",
            f"{len(late)} step(s) marked is_copied_context after the trajectory's own steps "
            "began; ATIF copies context at the start of a continuation, so these are left "
            "out of step, call and token counts as copies: if they are this run's own work, "
            "the producer marks them wrongly",
        )
    for i, sub in enumerate(doc.get("subagent_trajectories") or []):
        if isinstance(sub, dict):
            _warn_copied_context_after_work(sub, label, f"{path}.subagent_trajectories[{i}]")


def _warn_dangling_refs(doc: dict[str, Any], label: str, path: str) -> None:
    """A sub-agent reference that names no embedded sub-agent trajectory and no file: the
    sub-agent's work is in no count, which is said rather than accepted in silence."""
    subs = _objects(doc.get("subagent_trajectories"))
    known = {name for sub in subs for name in _names(sub)}
    for where, ref in _placed_refs(doc, path):
        if not ref.get("trajectory_path") and not _names(ref) & known:
            named = ref.get("trajectory_id") or ref.get("session_id")
            _warn(
                label,
                where,
                f"sub-agent {named!r} is neither in subagent_trajectories nor given a "
                "trajectory_path: its steps, calls and tokens are in no count",
            )
    for n, sub in enumerate(subs):
        _warn_dangling_refs(sub, label, f"{path}.subagent_trajectories[{n}]")


def _names(obj: dict[str, Any]) -> set[Any]:
    """The ids a sub-agent trajectory, or a reference to one, goes by."""
    return {obj.get("trajectory_id"), obj.get("session_id")} - {None}


def _objects(value: Any) -> list[dict[str, Any]]:
    """The JSON objects of a list field (anything else: none)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _placed_refs(doc: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each sub-agent reference of the document's own steps, with where it is."""
    for i, step in enumerate(_objects(doc.get("steps"))):
        observation = step.get("observation")
        results = _objects(observation.get("results")) if isinstance(observation, dict) else []
        for j, result in enumerate(results):
            for k, ref in enumerate(_objects(result.get("subagent_trajectory_ref"))):
                yield (
                    f"{path}.steps[{i}].observation.results[{j}].subagent_trajectory_ref[{k}]",
                    ref,
                )


def _copied_after_work(doc: dict[str, Any]) -> list[int]:
    """Where steps marked as copied context come after the document's own first step."""
    steps = [s for s in doc.get("steps") or [] if isinstance(s, dict)]
    copied = [s.get("is_copied_context") is True for s in steps]
    if all(copied):
        return []
    began = copied.index(False)
    return [i for i in range(began + 1, len(steps)) if copied[i]]


def _follow_files(
    doc: dict[str, Any], file: Path, label: str, strict: bool, seen: set[Path]
) -> None:
    """Bring in what the document keeps in other files: sub-agents referenced by
    ``trajectory_path`` and the continuation named by ``continued_trajectory_ref``
    (both relative to ``file``). A link that cannot be followed is a warning: the
    counts then cover this file alone."""
    embedded = {s.get("trajectory_id") for s in doc.get("subagent_trajectories") or []}
    for ref in _sub_agent_refs(doc):
        where = ref.get("trajectory_path")
        if not where or ref.get("trajectory_id") in embedded - {None}:
            continue
        sub = _linked(file, where, "trajectory_path", label, strict, seen)
        if sub is not None:
            ref["trajectory_id"] = sub.setdefault("trajectory_id", where)
            embedded.add(ref["trajectory_id"])
            doc.setdefault("subagent_trajectories", []).append(sub)
    where = doc.get("continued_trajectory_ref")
    if isinstance(where, str) and where:
        rest = _linked(file, where, "continued_trajectory_ref", label, strict, seen)
        if rest is not None:
            append(doc, rest)


def _sub_agent_refs(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for step in doc.get("steps") or []:
        for res in (step.get("observation") or {}).get("results") or []:
            yield from res.get("subagent_trajectory_ref") or []


def _linked(
    file: Path, where: str, field: str, label: str, strict: bool, seen: set[Path]
) -> dict[str, Any] | None:
    target = Path(where) if Path(where).is_absolute() else file.parent / where
    why = None
    if "://" in where:
        why = "not a local file, not followed"
    elif target.resolve() in seen:
        why = "links back to a file already read, not followed again"
    elif not target.is_file():
        why = f"no such file next to {file.name}"
    if why is not None:
        _warn(label, field, f"{where!r}: {why}; the counts cover what was read")
        return None
    seen.add(target.resolve())
    # Validated and repaired on its own terms; what it marks as copied is a copy of the
    # file that links to it (or of its own parent, for a sub-agent).
    doc = _checked(_read(target, str(target), "no such file"), str(target), strict)
    _warn_copied_context_after_work(doc, str(target), "$")
    _follow_files(doc, target, str(target), strict, seen)
    return doc


def _check_one_document(doc: Any, label: str) -> None:
    if isinstance(doc, list) and doc and all(isinstance(t, dict) for t in doc):
        raise TrajectoryError(
            f"{label}: $: a JSON array of {len(doc)} trajectories, not one; load each "
            "element (load_trajectory(element)) or write one trajectory per file"
        )
    if not isinstance(doc, dict):
        raise TrajectoryError(f"{label}: $: expected a JSON object, got {type(doc).__name__}")


def _is_json_text(text: str) -> bool:
    if not text.lstrip().startswith("{"):
        return False
    try:
        return not Path(text).is_file()
    except (OSError, ValueError):  # too long or NUL bytes for a file name: text it is
        return True


def _shown(text: str, limit: int = 200) -> str:
    """A str path as it goes into a one-line message."""
    text = text if text.isprintable() else repr(text)
    return (
        text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"
    )


def _read(path: Path, shown: str, missing: str) -> Any:
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a name too long (or with NUL) names no file
        exists = False
    if not exists:
        raise TrajectoryError(f"{shown}: {missing}")
    try:
        found = read_json(path, "trajectory", lines=True)
    except FileFormatError as exc:  # one error type for every bad input
        raise TrajectoryError(str(exc)) from None
    return one_trace(found, shown)


def one_trace(found: Any, shown: str) -> Any:
    """What a trajectory file held: its document, or the one trace of an OTLP JSON-lines
    file (a JSON-lines file of anything else is refused)."""
    if not isinstance(found, JsonLines):
        return found
    trace = otlp_lines(found)
    if trace is None:
        raise TrajectoryError(
            f"{shown}: one JSON document a line, not all of them OpenTelemetry trace exports "
            "(resourceSpans); give one ATIF trajectory or an OTLP JSON export"
        )
    return trace


def _warn(label: str, path: str, what: str) -> None:
    warnings.warn(f"{label}: {path}: {what}", TrajectoryWarning, stacklevel=3)


def _check_versions(doc: dict[str, Any], label: str, path: str, *, repair: bool) -> dict[str, Any]:
    """Reject unsupported versions (sub-agents included); canonicalise or reject odd tags."""
    version = doc.get("schema_version")
    if isinstance(version, str | int | float) and not isinstance(version, bool):
        m = _VERSION.match(str(version).strip())
        if m is None or m.group(1) not in SUPPORTED_VERSIONS:
            raise TrajectoryError(
                f"{label}: {path}.schema_version: {version!r} is not a supported ATIF version "
                f"(ATIF-v{SUPPORTED_VERSIONS[0]} to ATIF-v{SUPPORTED_VERSIONS[-1]})"
            )
        canonical_version = f"ATIF-v{m.group(1)}"
        if canonical_version != version:
            if not repair:
                raise TrajectoryError(
                    f"{label}: {path}.schema_version: {version!r} is not a version tag; expected {canonical_version!r}"
                )
            _warn(label, f"{path}.schema_version", f"{version!r} read as {canonical_version!r}")
            doc["schema_version"] = canonical_version
    subs = doc.get("subagent_trajectories")
    if isinstance(subs, list):
        for i, sub in enumerate(subs):
            if isinstance(sub, dict):
                _check_versions(sub, label, f"{path}.subagent_trajectories[{i}]", repair=repair)
    return doc


def _repair(doc: dict[str, Any], label: str, path: str) -> dict[str, Any]:
    steps = doc.get("steps")
    if isinstance(steps, list):
        for i, step in enumerate(steps):
            if isinstance(step, dict):
                _repair_step(step, label, f"{path}.steps[{i}]")
    subs = doc.get("subagent_trajectories")
    if isinstance(subs, list):
        doc["subagent_trajectories"] = [
            _repair(s, label, f"{path}.subagent_trajectories[{i}]") if isinstance(s, dict) else s
            for i, s in enumerate(subs)
        ]
    return doc


_COUNTS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd")


def _numbers_not_text(doc: dict[str, Any], label: str, path: str, *, repair: bool) -> None:
    """Token counts, costs and a step's model calls written as text ("12"): pydantic's lax
    validation lets them through, and every sum over them would fail later. Read as
    numbers with a warning (lenient), or refused naming the field (strict)."""
    places: list[tuple[Any, tuple[str, ...], str]] = [
        (doc.get("final_metrics"), TOTALS, f"{path}.final_metrics")
    ]
    for i, step in enumerate(doc.get("steps") or []):
        places.append((step.get("metrics"), _COUNTS, f"{path}.steps[{i}].metrics"))
        # A step's model calls are counted too (shape() summed a "2" and failed).
        places.append((step, ("llm_call_count",), f"{path}.steps[{i}]"))
    for where, keys, at in places:
        if isinstance(where, dict):
            _numbers_in(where, keys, label, at, repair=repair)
    for i, sub in enumerate(doc.get("subagent_trajectories") or []):
        _numbers_not_text(sub, label, f"{path}.subagent_trajectories[{i}]", repair=repair)


def _numbers_in(
    where: dict[str, Any], keys: tuple[str, ...], label: str, at: str, *, repair: bool
) -> None:
    """The ``keys`` of one metrics object written as text read as numbers (or refused)."""
    for key in keys:
        value = where.get(key)
        if not isinstance(value, str):
            continue
        number = float(value)  # validation passed: it is numeric text
        if not repair:
            raise TrajectoryError(f"{label}: {at}.{key}: a number written as text {value!r}")
        where[key] = int(number) if number.is_integer() and "cost" not in key else number
        _warn(label, f"{at}.{key}", f"number written as text {value!r} read as a number")


def _repair_step(step: dict[str, Any], label: str, path: str) -> None:
    _repair_usage(step, label, path)
    _repair_chat_message(step, label, path)
    calls = step.get("tool_calls")
    for j, call in enumerate(calls if isinstance(calls, list) else []):
        if isinstance(call, dict):
            _repair_arguments(call, label, f"{path}.tool_calls[{j}].arguments")
    obs = step.get("observation")
    results = obs.get("results") if isinstance(obs, dict) else None
    for j, res in enumerate(results if isinstance(results, list) else []):
        if isinstance(res, dict) and isinstance(res.get("content"), dict):
            res["content"] = json.dumps(res["content"], sort_keys=True)
            _warn(
                label,
                f"{path}.observation.results[{j}].content",
                "object content serialised to a JSON string",
            )


def _repair_usage(step: dict[str, Any], label: str, path: str) -> None:
    if "usage" in step and "metrics" not in step and isinstance(step["usage"], dict):
        usage = step.pop("usage")
        step["metrics"] = {
            k: usage[k]
            for k in ("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd")
            if k in usage
        }
        _warn(label, f"{path}.usage", "non-standard step-level 'usage' read as 'metrics'")


_CHAT_KEYS = frozenset({"role", "content", "name"})


def _chat_parts(message: Any) -> list[dict[str, Any]] | None:
    """The ATIF content parts of a message written as OpenAI-style chat messages
    (``[{"role": "user", "content": "..."}]``), or None if it is not one.

    Content may be text or a list of parts; text parts and parts already in ATIF
    form (image/audio with a ``source``) are kept, anything else (an OpenAI
    ``image_url``) has no obvious repair.
    """
    if not isinstance(message, list) or not message:
        return None
    parts: list[dict[str, Any]] = []
    for item in message:
        found = _chat_message_parts(item)
        if found is None:
            return None
        parts += found
    return parts


def _chat_message_parts(item: Any) -> list[dict[str, Any]] | None:
    """One chat message's content as ATIF parts, or None if it is no chat message."""
    if not (isinstance(item, dict) and {"role", "content"} <= item.keys() <= _CHAT_KEYS):
        return None
    content = item["content"]
    if content is None:  # an assistant message that only called tools
        return []
    if not isinstance(content, str | list):
        return None
    parts = [
        {"type": "text", "text": part} if isinstance(part, str) else part
        for part in ([content] if isinstance(content, str) else content)
    ]
    return parts if all(_atif_part(part) for part in parts) else None


def _atif_part(part: Any) -> bool:
    if not isinstance(part, dict):
        return False
    if part.get("type") == "text":
        return isinstance(part.get("text"), str) and part.keys() == {"type", "text"}
    return part.get("type") in ("image", "audio") and isinstance(part.get("source"), dict)


def _repair_chat_message(step: dict[str, Any], label: str, path: str) -> None:
    """One exporter writes a step's message as the chat messages it came from."""
    message = step.get("message")
    parts = _chat_parts(message)
    if parts is None or not isinstance(message, list):
        return
    roles = ", ".join(dict.fromkeys(str(m["role"]) for m in message))
    if all(p["type"] == "text" for p in parts):
        step["message"] = "\n\n".join(p["text"] for p in parts)
        into = "one text"
    else:
        step["message"] = parts
        into = "content parts"
    _warn(label, f"{path}.message", f"{len(message)} chat message(s) ({roles}) joined into {into}")


def _repair_arguments(call: dict[str, Any], label: str, path: str) -> None:
    """Arguments written as a JSON string become the object they hold (if they hold one)."""
    if not isinstance(call.get("arguments"), str):
        return
    try:
        parsed = json.loads(call["arguments"]) if call["arguments"].strip() else {}
    except json.JSONDecodeError:
        return
    if isinstance(parsed, dict):
        call["arguments"] = parsed
        _warn(label, path, "JSON string parsed into an object")
