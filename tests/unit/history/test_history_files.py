"""History files: written once per night, read back typed; older files still load; bad files fail in one line."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from history_factory import build_entries, history_from_entries, write_history
from pydantic import BaseModel

from evalrunner._jsonio import canonical
from evalrunner.errors import ConfigError, SkippedHistoryFile
from evalrunner.history._columnar import (
    COLUMNAR_FORMAT_VERSION,
    ENTRY,
    META_KEY,
    READS,
    read_parquet,
    to_parquet,
)
from evalrunner.history._entry import BaselineSummary
from evalrunner.history._store import InParquet, evidence_so_far, load_history, read_entries
from evalrunner.live._results import Manifest
from evalrunner.report._html import render_html
from evalrunner.report._junit import render_junit
from evalrunner.stats._metric_result import MetricResult
from evalrunner.suite._record import CellKey

V1 = Path(__file__).parent / "data" / "history_v1"
"""Two nights written by evalrunner before entries were typed (verdicts and summaries as plain dicts)."""


def test_report_from_history_files(tmp_path: Path) -> None:
    """The JSON round trip (intervals become lists, keys become 'scenario|model') renders the same."""
    entries = build_entries(nights=3, scenarios=2, models=2)
    write_history(str(tmp_path / "history"), entries)
    loaded = load_history(str(tmp_path / "history"))
    in_memory = history_from_entries(entries)
    assert render_html(loaded, generated_at="x") == render_html(in_memory, generated_at="x")
    assert render_junit(loaded) == render_junit(in_memory)
    assert loaded.entries == in_memory.entries


def test_files_written_before_entries_were_typed_still_load() -> None:
    history = load_history(str(V1))
    assert [e.created_at for e in history.entries] == [
        "2025-01-01T02:00:00Z",
        "2025-01-02T02:00:00Z",
    ]
    entry = history.entries[-1]
    assert isinstance(entry.manifest, Manifest)
    assert all(isinstance(v, MetricResult) for v in entry.verdicts)
    cell = CellKey("scenario-00", "openai/gpt-4o-mini")
    assert set(entry.baselines) == {cell, CellKey("scenario-01", "openai/gpt-4o-mini")}
    assert isinstance(entry.baselines[cell], BaselineSummary)
    assert sum(entry.baselines[cell].tool_sequences.values()) == pytest.approx(1.0)
    assert cell in entry.typical and cell in entry.baseline_typical
    # Nothing written then is lost: the verdicts gained optional fields (accumulated
    # evidence, baseline nights) with defaults, and the old two-sided direction "any"
    # reads as "changed"; everything else is what was written then.
    for path in sorted(V1.glob("*/*.json.gz")):
        [again] = [
            e for e in history.entries if path.name.startswith(e.created_at[:10].replace("-", ""))
        ]
        written = json.loads(gzip.decompress(path.read_bytes()))
        now = again.model_dump(mode="json")
        for before, after in zip(written["verdicts"], now["verdicts"], strict=True):
            kept = {k: after[k] for k in before}
            assert kept == {**before, "direction": before["direction"].replace("any", "changed")}
            assert after["evidence"] is None and after["baseline_nights"] == 0
        rest = {k: v for k, v in now.items() if k != "verdicts"}
        assert canonical(rest) == canonical({k: v for k, v in written.items() if k != "verdicts"})
    page = render_html(history, generated_at="x")
    assert '<details class="key regression"' in page and "Behaviour changed:" in page


def test_append_writes_one_file_per_night_that_reads_back_equal(tmp_path: Path) -> None:
    entries = build_entries(nights=2, scenarios=1)
    paths = write_history(str(tmp_path), entries)
    assert [Path(p).parent.name for p in paths] == ["demo", "demo"]
    assert all(p.endswith(".parquet") for p in paths) and len(set(paths)) == 2
    assert read_entries(str(tmp_path)) == entries


def test_a_night_with_no_verdicts_reads_back_and_renders(tmp_path: Path) -> None:
    # A first night: no baseline yet, so no metric results at all (an empty table).
    [entry] = build_entries(nights=1, scenarios=1)
    first = entry.model_copy(update={"verdicts": []})
    write_history(str(tmp_path), [first])
    loaded = load_history(str(tmp_path))
    assert render_html(loaded, generated_at="x") == render_html(
        history_from_entries([first]), generated_at="x"
    )
    assert "demo" in render_junit(loaded)


def test_plain_json_files_load_too(tmp_path: Path) -> None:
    [entry] = build_entries(nights=1, scenarios=1)
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "night.json").write_text(json.dumps(entry.model_dump(mode="json")))
    assert read_entries(str(tmp_path)) == [entry]


def test_a_shared_history_on_an_fsspec_url(tmp_path: Path) -> None:
    root = f"memory://{tmp_path.name}/history"
    entries = build_entries(nights=2, scenarios=1)
    try:
        assert all(p.startswith("memory://") for p in write_history(root, entries))
        assert load_history(root).entries == entries
    finally:
        import fsspec

        fsspec.filesystem("memory").rm(f"/{tmp_path.name}", recursive=True)


def test_suites_and_since_filter_the_entries(tmp_path: Path) -> None:
    write_history(str(tmp_path), build_entries(nights=3, scenarios=1))
    write_history(str(tmp_path), build_entries(nights=1, scenarios=1, suite="other"))
    assert {e.suite for e in read_entries(str(tmp_path))} == {"demo", "other"}
    assert {e.suite for e in read_entries(str(tmp_path), suites=["other"])} == {"other"}
    since = read_entries(str(tmp_path), suites=["demo"], since="2025-01-02")
    assert [e.created_at[:10] for e in since] == ["2025-01-02", "2025-01-03"]
    assert read_entries(str(tmp_path / "nothing-yet")) == []


def test_history_tables_for_analysis() -> None:
    history = load_history(str(V1))
    runs, verdicts = history.runs, history.verdicts
    assert len(runs) == sum(len(e.records) for e in history.entries)
    assert len(verdicts) == sum(len(e.verdicts) for e in history.entries)
    assert {"suite", "created_at", "scenario", "model", "outcome", "tools"} <= set(runs.columns)
    assert {"suite", "created_at", "scenario", "model", "metric", "verdict", "q"} <= set(
        verdicts.columns
    )


@pytest.fixture
def v1_copy(tmp_path: Path) -> Path:
    shutil.copytree(V1, tmp_path / "h")
    return tmp_path / "h"


def _rewrite(path: Path, change: object) -> None:
    data = json.loads(gzip.decompress(path.read_bytes()))
    change(data)  # type: ignore[operator]
    path.write_bytes(gzip.compress(json.dumps(data).encode()))


def _left_out(root: Path, path: Path, said: str) -> None:
    """A file that cannot be read is left out with one warning naming it and why: every
    later night, plan and report goes on without it (the report lists it)."""
    before = len(list(root.rglob("*.*z*"))) + len(list(root.rglob("*.parquet")))
    with pytest.warns(SkippedHistoryFile, match=said) as caught:
        history = load_history(str(root))
    (line,) = [str(w.message) for w in caught if w.category is SkippedHistoryFile]
    assert "\n" not in line and str(path) in line
    assert history.skipped == [line]
    assert len(history.sources) == before - 1
    assert path.exists()  # nothing deleted: moving it aside is the user's call


def test_a_truncated_file_is_named(v1_copy: Path) -> None:
    path = sorted(v1_copy.glob("*/*.gz"))[0]
    path.write_bytes(path.read_bytes()[:100])
    _left_out(v1_copy, path, rf"{path.name}: unreadable history file .* move it aside")


def test_a_file_that_is_not_json_is_named(v1_copy: Path) -> None:
    path = sorted(v1_copy.glob("*/*.gz"))[0]
    path.write_bytes(gzip.compress(b"{not json"))
    _left_out(v1_copy, path, rf"{path.name}: not valid JSON at line 1")


def test_an_unknown_format_version_says_what_to_do(v1_copy: Path) -> None:
    path = sorted(v1_copy.glob("*/*.gz"))[0]
    _rewrite(path, lambda d: d.update(format_version=2))
    _left_out(v1_copy, path, r"unsupported history format_version 2 .* upgrade evalrunner")


def test_a_bad_field_is_named(v1_copy: Path) -> None:
    path = sorted(v1_copy.glob("*/*.gz"))[-1]
    _rewrite(path, lambda d: d["verdicts"][0].update(verdict="maybe"))
    _left_out(v1_copy, path, rf"{path.name}: verdicts\.0\.verdict: ")


def test_a_cell_key_without_a_model_is_named(v1_copy: Path) -> None:
    path = sorted(v1_copy.glob("*/*.gz"))[-1]
    _rewrite(path, lambda d: d.update(typical={"no-model-here": {}}))
    _left_out(v1_copy, path, r"typical\.no-model-here.*'scenario\|model'")


def test_a_location_fsspec_cannot_open_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="history location 'nosuchscheme://x' cannot be used"):
        load_history("nosuchscheme://x")


class _Row(BaseModel):
    name: str
    count: int
    share: float | None = None
    tags: list[str] = []
    interval: tuple[float, float] | None = None


class _Entry(BaseModel):
    title: str
    notes: dict[str, str] = {}
    rows: list[_Row]


class _RowWithMore(_Row):
    added: int = 7


class _EntryWithMore(_Entry):
    rows: list[_RowWithMore]  # type: ignore[assignment]


def test_parquet_columns_follow_the_models() -> None:
    """Plain fields become typed columns, nested ones JSON; a field a file predates reads as
    its default, so fields added to records or verdicts need no change to the format."""
    import io

    import pyarrow.parquet as pq

    rows = [
        _Row(name="a", count=1, share=0.5, tags=["x"], interval=(0.1, 0.2)),
        _Row(name="b", count=2),
    ]
    entry = _Entry(title="t", notes={"k": "v"}, rows=rows)
    raw = to_parquet(_Entry, entry.model_dump(mode="json"))
    assert read_parquet(_Entry, raw, "f") == entry
    schema = pq.ParquetFile(io.BytesIO(raw)).schema_arrow
    assert str(schema.field("rows.count").type) == "int64"
    assert str(schema.field("rows.share").type) == "double"
    newer = read_parquet(_EntryWithMore, raw, "f")
    assert [r.added for r in newer.rows] == [7, 7]
    assert newer.rows[0].interval == (0.1, 0.2)


def test_a_damaged_parquet_file_fails_in_one_line(tmp_path: Path) -> None:
    [path] = write_history(str(tmp_path), build_entries(nights=1, scenarios=1))
    raw = Path(path).read_bytes()
    Path(path).write_bytes(raw[: len(raw) // 2])
    _left_out(tmp_path, Path(path), "unreadable history file")


def _with_layout_version(path: Path, version: object) -> None:
    import pyarrow.parquet as pq

    found = pq.ParquetFile(path)
    layout = json.loads(found.schema_arrow.metadata[META_KEY])
    layout["format_version"] = version
    schema = found.schema_arrow.with_metadata({META_KEY: json.dumps(layout).encode()})
    groups = [found.read_row_group(i) for i in range(found.num_row_groups)]
    with pq.ParquetWriter(path, schema) as writer:  # row group by row group, as written
        for group in groups:
            writer.write_table(group.replace_schema_metadata(schema.metadata))


def test_a_night_a_newer_release_wrote_is_left_out_with_upgrade_not_move_it_aside(
    tmp_path: Path,
) -> None:
    # A shared history (CI on a newer release, a laptop on this one): the newer night is
    # valid, so the line says to upgrade, and the report goes on without it.
    paths = write_history(str(tmp_path), build_entries(nights=2, scenarios=1))
    _with_layout_version(Path(paths[-1]), 99)
    _left_out(
        tmp_path,
        Path(paths[-1]),
        rf"history format_version 99 is newer than this evalrunner \([^)]+\) reads \(up to {max(READS)}\); "
        r"upgrade evalrunner to read it \(left out\)$",
    )


def test_a_parquet_file_of_an_unknown_format_version_is_refused(tmp_path: Path) -> None:
    [path] = write_history(str(tmp_path), build_entries(nights=1, scenarios=1))
    _with_layout_version(Path(path), "two")
    _left_out(tmp_path, Path(path), "unsupported history format_version 'two'")


def test_a_night_written_as_history_format_2_still_reads(tmp_path: Path) -> None:
    entries = build_entries(nights=2, scenarios=1)
    paths = write_history(str(tmp_path), entries)
    _with_layout_version(Path(paths[0]), 2)
    assert read_entries(str(tmp_path)) == entries


def test_json_history_and_parquet_history_load_together(tmp_path: Path) -> None:
    entries = build_entries(nights=2, scenarios=1)
    write_history(str(tmp_path), entries[:1], parquet=False)
    write_history(str(tmp_path), entries[1:])
    assert sorted(p.suffix for p in (tmp_path / "demo").iterdir()) == [".gz", ".parquet"]
    assert read_entries(str(tmp_path)) == entries


def test_a_write_that_fails_half_way_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full disk under --history: the night says so in one line (the CLI's job);
    # the history directory must not keep a half-written *.tmp for later readers.
    import errno

    from fsspec.implementations.local import LocalFileOpener

    real = LocalFileOpener.write

    def full(self: LocalFileOpener, data: bytes) -> int:
        real(self, bytes(data)[:100])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(LocalFileOpener, "write", full)
    with pytest.raises(OSError, match="No space left"):
        write_history(str(tmp_path), build_entries(nights=1, scenarios=1))
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_parquet_file_whose_head_is_damaged_is_left_out_not_a_stop(tmp_path: Path) -> None:
    # Damage inside the entry's head (the file's footer whole) was found only when a night
    # read the evidence there: `run` and `plan` stopped with exit 2 and a pydantic fragment,
    # and `report` said nothing (a review).
    import pyarrow.parquet as pq

    entries = build_entries(nights=2, scenarios=1)
    paths = write_history(str(tmp_path), entries)
    path = Path(paths[0])
    source = pq.ParquetFile(path)
    groups = [source.read_row_group(i) for i in range(source.num_row_groups)]
    column = groups[0].schema.get_field_index(f"{ENTRY}.json")
    [head] = groups[0].column(column).to_pylist()  # the head is row group 0, one row
    damaged = head[:100] + "garbage" + head[107:]
    groups[0] = groups[0].set_column(column, groups[0].field(column), [[damaged]])
    with pq.ParquetWriter(path, source.schema_arrow) as writer:  # its row groups kept
        for group in groups:
            writer.write_table(group)
    said = r"unreadable history file \(Invalid JSON: [^;()]*\); move it aside \(left out\)"
    with pytest.warns(SkippedHistoryFile, match=said):  # a night reading its evidence goes on
        evidence_so_far(str(tmp_path), "demo")
    assert path.exists()  # nothing deleted: moving it aside is the user's call


def test_a_parquet_night_says_whether_it_was_an_outage_without_its_head_parsed(
    tmp_path: Path,
) -> None:
    # The report asks it of every night (an outage compared nothing), and a head of a
    # 50-scenario night takes milliseconds to parse: a year of them, seconds.
    entries = build_entries(nights=2, scenarios=1)
    entries[1] = entries[1].model_copy(update={"outage": True})
    write_history(str(tmp_path), entries)
    sources = load_history(str(tmp_path)).sources
    assert [s.outage for s in sources] == [False, True]
    files = [s.file for s in sources if isinstance(s, InParquet)]
    assert len(files) == 2 and all("head" not in vars(f) for f in files)  # never parsed


PARQUET_0_2_0 = Path(__file__).parent / "data" / "history_parquet_0_2_0"
"""One night written by evalrunner 0.2.0 (``history_factory.build_entries(nights=1,
scenarios=2, models=1)``), before outcomes were an enum."""


def _layout(path: Path) -> dict[str, object]:
    import pyarrow.parquet as pq

    return json.loads(pq.read_schema(path).metadata[META_KEY])  # type: ignore[no-any-return]


def test_a_parquet_history_written_by_0_2_0_reads_and_is_written_the_same_way(
    tmp_path: Path,
) -> None:
    [old] = sorted(PARQUET_0_2_0.glob("*/*.parquet"))
    history = load_history(str(PARQUET_0_2_0))
    [source] = history.sources
    outcomes = [o for o in source.column("records", "outcome") if o is not None]
    assert outcomes and all(o in {"passed", "failed", "skipped", "crashed"} for o in outcomes)
    assert [r.outcome for r in history.entries[0].records] == outcomes
    # Written again by this release: the same layout, the outcome a plain string column
    # (a JSON column would hold '"passed"', which 0.2.0 reads with its quotes).
    [again] = write_history(str(tmp_path), history.entries)
    # The same columns; its number is this release's (4 since entries say why a cell was
    # not compared, a field of their head), and since 5 the intervals are numbers, not JSON.
    layout = _layout(old)
    intervals = ["baseline_ci", "night_ci", "effect_ci", "mean_diff_ci", "evidence_ci"]
    assert layout["tables"]["verdicts"]["json_columns"] == intervals  # type: ignore[index]
    layout["tables"]["verdicts"]["json_columns"] = []  # type: ignore[index]
    # A run's tools executed with no model call asking (issue 56) are a column of their own.
    records = layout["tables"]["records"]  # type: ignore[index]
    assert records["json_columns"] == ["tools", "checks", "scores", "judge_grades"]
    records["json_columns"] = ["tools", "tools_alone", "checks", "scores", "judge_grades"]
    assert _layout(Path(again)) == {**layout, "format_version": COLUMNAR_FORMAT_VERSION}
    [written] = load_history(str(tmp_path)).sources
    assert written.column("records", "outcome") == source.column("records", "outcome")
    for name in intervals:
        assert written.column("verdicts", name) == source.column("verdicts", name)
        assert np.array_equal(
            written.pairs("verdicts", name), source.pairs("verdicts", name), equal_nan=True
        )
    assert load_history(str(tmp_path)).entries == history.entries
