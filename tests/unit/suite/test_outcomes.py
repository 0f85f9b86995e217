"""The table of outcome traits: one row per outcome, the strings records hold unchanged."""

from __future__ import annotations

import json
import warnings

import pytest
from pydantic import ValidationError

from evalrunner.suite._record import OUTCOME_TRAITS, OUTCOMES, Outcome, RunRecord


def record(outcome: str) -> RunRecord:
    return RunRecord(run_id="s/m/0", suite="t", scenario="s", model="m", index=0, outcome=outcome)


def test_every_outcome_has_one_row_and_its_own_label() -> None:
    assert list(OUTCOME_TRAITS) == list(OUTCOMES) == list(Outcome)
    assert len({t.label for t in OUTCOME_TRAITS.values()}) == len(OUTCOMES)
    assert all(o.traits is OUTCOME_TRAITS[o] for o in Outcome)


def test_the_outcomes_are_the_strings_every_file_holds() -> None:
    assert [str(o) for o in OUTCOMES] == ["passed", "failed", "skipped", "infra_error", "crashed"]
    assert [f"{o}" for o in OUTCOMES] == [o.value for o in OUTCOMES]
    made = record("infra_error")
    assert json.loads(made.model_dump_json())["outcome"] == "infra_error"
    assert '"outcome":"infra_error"' in made.model_dump_json()
    assert json.dumps(made.model_dump()["outcome"]) == '"infra_error"'


def test_only_an_infrastructure_fault_is_left_out_of_the_statistics() -> None:
    faults = [o for o in OUTCOMES if o.traits.fault]
    assert faults == [Outcome.INFRA_ERROR]
    assert all(o.traits.behaviour == (o not in faults) for o in OUTCOMES)
    assert [o for o in OUTCOMES if o.traits.judged] == [Outcome.PASSED, Outcome.FAILED]
    assert [o for o in OUTCOMES if o.traits.fails_command] == [Outcome.CRASHED]
    assert OUTCOME_TRAITS[Outcome.INFRA_ERROR].label == "infra"


def test_a_record_asks_the_table_even_when_its_outcome_is_a_plain_string() -> None:
    # model_copy does not validate: the outcome stays the string it was given.
    copied = record("passed").model_copy(update={"outcome": "infra_error"})
    assert type(copied.outcome) is str
    assert not copied.measured and not copied.judged
    assert record("failed").measured and record("failed").judged
    assert record("skipped").measured and not record("skipped").judged


def test_an_unknown_outcome_is_refused_where_the_record_is_made() -> None:
    with pytest.raises(ValidationError, match="outcome"):
        record("timeout")


def test_a_record_writes_its_outcome_as_the_plain_string_however_it_holds_it() -> None:
    copied = record("passed").model_copy(update={"outcome": "infra_error"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "expected enum" serializer warning
        assert '"outcome":"infra_error"' in copied.model_dump_json()
        dumped = record("crashed").model_dump()["outcome"]
    assert type(dumped) is str and dumped == "crashed"
