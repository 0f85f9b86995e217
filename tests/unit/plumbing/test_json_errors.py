"""A file that is not valid JSON is refused in one line naming the file, line and column."""

from __future__ import annotations

import pytest

from evalrunner._jsonio import parse_json
from evalrunner.errors import FileFormatError


def test_a_cut_off_string_is_said_in_a_whole_sentence() -> None:
    # Before: "...: not valid JSON at line 1 column 13: Unterminated string starting at;
    # restore it", json's message cut off where its position used to follow.
    with pytest.raises(FileFormatError) as info:
        parse_json('{"answer": "Par', "run.json", fix="restore it")
    assert str(info.value) == (
        "run.json: not valid JSON at line 1 column 12: Unterminated string starting there; "
        "restore it"
    )


def test_other_decoding_errors_keep_json_s_own_words() -> None:
    with pytest.raises(FileFormatError, match=r"^g\.json: not valid JSON at line 1 column 2: "):
        parse_json("{,}", "g.json")


def test_a_file_saved_with_a_byte_order_mark_reads_as_without_it() -> None:
    # Before: "Unexpected UTF-8 BOM (decode using utf-8-sig)" for a golden an editor
    # on Windows had saved.
    text = '{"format_version": 1}'
    assert parse_json("\ufeff" + text, "g.json") == {"format_version": 1}
    assert parse_json(("\ufeff" + text).encode(), "g.json") == {"format_version": 1}
