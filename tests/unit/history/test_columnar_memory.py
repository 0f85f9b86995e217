"""How a history column is held in memory: a report over a year holds every night's columns."""

from __future__ import annotations

import pyarrow as pa

from evalrunner.history._columnar import _pylist


def test_a_text_column_of_few_values_holds_one_object_per_value() -> None:
    values = ["ok", "regression", None, "ok"] * 100
    column = pa.chunked_array([pa.array(values[:150]), pa.array(values[150:])])
    read = _pylist(column)
    assert read == values
    oks = [v for v in read if v == "ok"]
    assert all(v is oks[0] for v in oks)  # one object, not 200
    # Mostly distinct texts (run ids) are read as they are.
    ids = [f"s/m/{i}" for i in range(200)]
    assert _pylist(pa.chunked_array([pa.array(ids)])) == ids
