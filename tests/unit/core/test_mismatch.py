"""A replay miss names what differs: system message, tools, tool_choice, a message
index; long strings are diffed by word, or by line when they span lines."""

from __future__ import annotations

from typing import Any

from evalrunner.core._mismatch import differences, nearest, text_diff

TOOL = {"name": "lookup", "description": "Find a capital.", "parameters": {"type": "object"}}


def view(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "api": "chat",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Capital of France?"},
        ],
        "tools": [{"type": "function", "function": TOOL}],
    }
    return {**base, **over}


def test_each_differing_field_is_named() -> None:
    new = view(
        tool_choice="required",
        messages=[
            {"role": "system", "content": "You are verbose."},
            {"role": "user", "content": "Capital of France?"},
            {"role": "user", "content": "Quick!"},
        ],
        tools=[{"type": "function", "function": {**TOOL, "description": "Find any capital."}}],
    )
    lines = differences(view(), new)
    assert lines == [
        "system message: recorded 'You are terse.', now 'You are verbose.'",
        "message count: recorded 2, now 3 (the request now has 1 more, from message 3 (user): 'Quick!')",
        "tool_choice: recorded (not sent), now 'required'",
        "tools: 'lookup' description: recorded 'Find a capital.', now 'Find any capital.'",
    ]


def test_added_and_removed_tools_and_roles() -> None:
    new = view(
        tools=[{"type": "function", "function": {**TOOL, "name": "search"}}],
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "assistant", "content": "x"},
        ],
    )
    lines = differences(view(), new)
    assert "message 2 (assistant): role: recorded 'user', now 'assistant'" in lines
    assert "tools: added ['search'], removed ['lookup']" in lines


def test_a_long_one_line_string_is_diffed_by_word() -> None:
    old = " ".join(f"word{i}" for i in range(800))
    new = old.replace("word400 ", "changed400 ")
    diff = text_diff(old, new)
    assert diff == (
        "…word394 word395 word396 word397 word398 word399 [-word400-] {+changed400+} "
        "word401 word402 word403 word404 word405 word406…"
    )
    assert text_diff(old, old.replace(" ", "  ")) == "whitespace differs only"


def test_a_multi_line_string_is_diffed_by_line() -> None:
    old = "\n".join(f"line {i}" for i in range(50))
    new = old.replace("line 20", "line twenty")
    assert text_diff(old, new).split("\n    ")[1:] == [
        "@@ -20,3 +20,3 @@",
        " line 19",
        "-line 20",
        "+line twenty",
        " line 21",
    ]


def test_the_nearest_recording_is_the_most_alike_unused_one() -> None:
    a = view()
    b = view(messages=[*view()["messages"], {"role": "user", "content": "More"}])
    probe = view(messages=[*view()["messages"], {"role": "user", "content": "Mor"}])
    assert nearest(probe, [a, b], [False, False]) == 1
    assert nearest(probe, [a, b], [False, True]) == 0


def test_a_recorded_request_whose_fingerprint_is_not_its_own_says_so() -> None:
    # A merge took one branch's request view and the other's fingerprint. Before: "it
    # differs in:" and an empty list.
    from evalrunner.core._mismatch import Recorded, RequestBook
    from evalrunner.core._request_key import request_key

    request = view()
    book = RequestBook(
        [Recorded(request, "0" * 16, "recorded call 1 (1 messages)")],
        "demo.llm.json",
        "pytest --golden-record",
    )
    message = str(book.miss(1, request, request_key(request)))
    assert "differs in" not in message
    assert (
        "recorded call 1 (1 messages) stores this very request, but a fingerprint that is not "
        "its own (the recording was merged or edited by hand)"
    ) in message
