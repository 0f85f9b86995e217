"""How a history column is held in memory: a report over a year holds every night's columns."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner
from history_factory import build_entries, history_from_entries, write_history

from evalrunner.errors import SkippedHistoryFile
from evalrunner.history import load_history
from evalrunner.history._entry import HistoryEntry
from evalrunner.history._values import _pylist, arrow_pairs, pair_array
from evalrunner.stats._metric_result import FLAGGED


def test_a_text_column_of_few_values_holds_one_object_per_value() -> None:
    values = ["ok", "regression", None, "ok"] * 100
    column = pa.chunked_array([pa.array(values[:150]), pa.array(values[150:])])
    read = _pylist(column)
    assert read == values
    oks = [v for v in read if v == "ok"]
    assert all(v is oks[0] for v in oks)  # one object, not 200
    # Without nulls, and read from Parquet as a dictionary (as a history file's are).
    full = [v or "skipped" for v in values]
    encoded = pa.array(full).dictionary_encode()
    for given in (pa.array(full), encoded, encoded[7:], pa.array(full)[7:]):
        read = _pylist(given)
        assert read == full[len(full) - len(given) :]
        assert all(v is read[0] for v in read if v == read[0])
    # Mostly distinct texts (run ids) are read as they are.
    ids = [f"s/m/{i}" for i in range(200)]
    assert _pylist(pa.chunked_array([pa.array(ids)])) == ids


def _with_missing_values(entry: HistoryEntry) -> HistoryEntry:
    verdicts = list(entry.verdicts)
    verdicts[0] = verdicts[0].model_copy(update={"q": None, "effect_ci": None, "night_ci": None})
    return entry.model_copy(update={"verdicts": verdicts})


def test_numbers_and_intervals_read_as_arrays_with_missing_values_as_nan(tmp_path: Path) -> None:
    # A year of trend charts reads five numbers and two intervals of every result: as
    # arrays they are 8 and 16 bytes a row, where Python objects took ~90 MB in all.
    [entry] = build_entries(nights=1, scenarios=2, runs=3)
    entry = _with_missing_values(entry)
    write_history(str(tmp_path), [entry])
    (source,) = load_history(str(tmp_path)).sources
    q = source.floats("verdicts", "q")
    expected_q = [math.nan if v.q is None else v.q for v in entry.verdicts]
    assert q.dtype == np.float64 and np.array_equal(q, expected_q, equal_nan=True)
    ci = source.pairs("verdicts", "effect_ci")
    assert ci.shape == (len(entry.verdicts), 2) and np.isnan(ci[0]).all()
    assert [tuple(row) for row in ci[1:]] == [v.effect_ci for v in entry.verdicts[1:]]
    # The same from a night built in memory, and as Python values (None where missing).
    built = history_from_entries([entry]).sources[0]
    assert np.array_equal(built.floats("verdicts", "q"), q, equal_nan=True)
    assert np.array_equal(built.pairs("verdicts", "effect_ci"), ci, equal_nan=True)
    assert source.column("verdicts", "effect_ci")[0] is None


REPORT_PROBE = """
import sys
import evalrunner.report._report as chooses
from evalrunner.cli import main

loaded = []
load_history = chooses.load_history


def watched(*args, **kwargs):
    loaded.append(load_history(*args, **kwargs))
    return loaded[-1]


chooses.load_history = watched  # what the command loads the history with
try:
    main(["report", "--history", sys.argv[1], "--out", sys.argv[2]])
except SystemExit as exc:
    assert not exc.code, exc.code
[history] = loaded
opened = [s for s in history.sources if getattr(s.file, "_open", s) is not None]
print(len(history.sources), len(opened), *sorted(m for m in ("pandas", "scipy") if m in sys.modules))
"""


def test_a_report_holds_no_file_open_and_imports_no_pandas(tmp_path: Path) -> None:
    # A year of nights held open was 110 MB of parsed footers; pandas (pulled in by
    # pyarrow's list and numpy conversions) and scipy another 80 MB; neither is used.
    write_history(str(tmp_path / "history"), build_entries(nights=6, scenarios=3, runs=4))
    probe = subprocess.run(
        [sys.executable, "-c", REPORT_PROBE, str(tmp_path / "history"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    sources, opened, *modules = probe.stdout.splitlines()[-1].split()
    assert sources == "6" and modules == [], probe.stdout
    assert int(opened) <= 1, probe.stdout  # only the night shown in full was read again
    assert (tmp_path / "out" / "report.html").is_file()


def test_a_report_takes_arrows_buffers_from_malloc_and_leaves_the_pool_as_it_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pyarrow's default pool (mimalloc) kept ~60 MB of freed pages at a year's peak
    # (benchmarks/bench_report.py). The process that called the command keeps its pool.
    import evalrunner.report
    from evalrunner.cli._main import main as cli

    write_history(str(tmp_path / "history"), build_entries(nights=2, scenarios=2, runs=3))
    seen = []
    write_report = evalrunner.report.write_report

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(pa.default_memory_pool().backend_name)
        return write_report(*args, **kwargs)

    monkeypatch.setattr(evalrunner.report, "write_report", watched)
    before = pa.default_memory_pool().backend_name
    args = ["report", "--history", str(tmp_path / "history"), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert seen == ["system"]
    assert pa.default_memory_pool().backend_name == before
    assert (tmp_path / "out" / "report.html").is_file()


def test_intervals_are_parsed_inside_arrow_to_the_numbers_python_reads() -> None:
    # A year of an organisation's intervals (4.5 million a column) took the report seconds
    # as Python strings; parsed in Arrow they must still be exactly what json would read.
    texts = ["[0.1,0.30000000000000004]", "null", "[NaN,Infinity]", "[-Infinity,1e-300]", "[1,2]"]
    fast = arrow_pairs(pa.array(texts))
    assert fast is not None and fast.shape == (5, 2)
    assert np.array_equal(fast, pair_array(texts), equal_nan=True)
    # Anything but pairs and nulls is left to the slow path, which says what it is.
    for odd in (
        ["[1,2,3]"],
        ['["a",1]'],
        ['{"a":1}'],
        ["[1,2]", None],
        ["[[1,2]]"],
        ["[1,2]null"],
        ["[,]"],
        ["nullnull"],
        [""],
    ):
        assert arrow_pairs(pa.array(odd, pa.string())) is None


def test_intervals_stored_as_numbers_read_as_the_values_written(tmp_path: Path) -> None:
    # Since history format 5 an interval is a column of two numbers (a year of charts read
    # and parsed its JSON texts in seconds): nulls, non-finite ends, slices and chunks must
    # read back exactly, as arrays and as the results' tuples.
    kind = pa.list_(pa.float64(), 2)
    values = [[0.1, 0.30000000000000004], None, [math.nan, math.inf], [-math.inf, 1e-300]]
    expected = pair_array([None if v is None else tuple(v) for v in values])
    column = pa.array(values, kind)
    for given, rows in ((column, expected), (column[1:], expected[1:])):
        read = arrow_pairs(given)
        assert read is not None and np.array_equal(read, rows, equal_nan=True)
    chunked = pa.chunked_array([column[:1], column[1:]])
    assert np.array_equal(arrow_pairs(chunked), expected, equal_nan=True)  # type: ignore[arg-type]
    [entry] = build_entries(nights=1, scenarios=2, runs=3)
    entry = _with_missing_values(entry)
    [path] = write_history(str(tmp_path), [entry])
    import pyarrow.parquet as pq

    assert pq.read_schema(path).field("verdicts.effect_ci").type == kind
    [again] = load_history(str(tmp_path)).entries
    assert again.verdicts == entry.verdicts
    assert again.verdicts[1].effect_ci == entry.verdicts[1].effect_ci
    assert isinstance(again.verdicts[1].effect_ci, tuple)


def test_number_and_text_columns_read_from_their_buffers_are_what_python_reads() -> None:
    # Read from Arrow's buffers (a year of an organisation's nights is millions of rows a
    # column): nulls, sliced arrays and every integer width must read as to_pylist does.
    from evalrunner.history._values import _floats_of, _shared_strings, float_array

    numbers = [None, 3, 0, None, 7, 2**40, 5] * 12
    for kind in (pa.int64(), pa.int32(), pa.uint16(), pa.float64(), pa.float32()):
        fitting = [v if v is None or v < 2**15 else 9 for v in numbers]
        column = pa.array(fitting, type=kind)
        for part in (column, column.slice(3, 40), column.slice(5, 0)):
            assert np.array_equal(
                _floats_of(part), float_array(part.to_pylist()), equal_nan=True
            ), kind
    assert np.isnan(_floats_of(pa.array([None, None]))).all()
    texts = pa.array(["ok", None, "skip", "ok"] * 30).dictionary_encode()
    for part in (texts, texts.slice(1, 100)):
        words = _shared_strings(part)
        assert words is not None and words.values() == part.to_pylist()


def test_a_nights_flagged_results_are_read_without_the_rest_of_its_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The report's flag tables build a few flagged results from each of many nights (150
    # nights of 12,000 results at 16x): written apart, they are read without the others.
    import pyarrow.parquet as pq

    [entry] = build_entries(nights=1, scenarios=40, runs=3, regressed=(0,), regress_nights=1)
    flagged = [i for i, v in enumerate(entry.verdicts) if v.verdict in FLAGGED]
    assert 0 < len(flagged) * 10 <= len(entry.verdicts)
    [path] = write_history(str(tmp_path), [entry])
    read: list[int] = []
    read_row_group = pq.ParquetFile.read_row_group

    def counted(self: Any, i: int, *args: Any, **kwargs: Any) -> Any:
        table = read_row_group(self, i, *args, **kwargs)
        read.append(table.num_rows)
        return table

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", counted)
    (source,) = load_history(str(tmp_path)).sources
    picked = [flagged[-1], flagged[0]]
    assert source.rows("verdicts", picked) == [entry.verdicts[i] for i in picked]
    assert read == [len(flagged)]
    # Asked for a row among the others, the table is read; as a whole, the same rows.
    assert source.rows("verdicts", [1, flagged[0]]) == [
        entry.verdicts[1],
        entry.verdicts[flagged[0]],
    ]
    assert read[-1] == len(entry.verdicts)
    assert load_history(str(tmp_path)).entries == [entry]
    assert pq.ParquetFile(path).num_row_groups == 4  # the head, records, results, flagged


def test_rows_apart_that_do_not_fit_their_table_make_the_file_unreadable(tmp_path: Path) -> None:
    import json

    import pyarrow.parquet as pq

    from evalrunner.history._columnar import META_KEY

    [entry] = build_entries(nights=1, scenarios=40, runs=3, regressed=(0,), regress_nights=1)
    [path] = write_history(str(tmp_path), [entry])
    file = pq.ParquetFile(path)
    groups = [file.read_row_group(i) for i in range(file.num_row_groups)]
    layout = json.loads(file.schema_arrow.metadata[META_KEY])
    layout["apart"]["verdicts"][0] = 10**6  # a place past the end of the results
    schema = file.schema_arrow.with_metadata({META_KEY: json.dumps(layout)})
    with pq.ParquetWriter(path, schema) as writer:
        for group in groups:
            writer.write_table(group.cast(schema), row_group_size=max(group.num_rows, 1))
    with pytest.warns(SkippedHistoryFile, match=r"rows apart of 'verdicts' do not fit the table"):
        assert load_history(str(tmp_path)).sources == []
