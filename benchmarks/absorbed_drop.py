"""Does a persistent drop widen its own band? The night share of the changed cell, night by night.

A 40-cell suite (one model), each cell anchored on 3 nights x 10 runs that all passed;
from the 12th night one cell passes about 70 % of its runs (the other cells 100 % or
90 %). At 10 runs a night among 200 gating tests no single night can fail it, so the
nights since the anchor keep every consecutive pair, the one across the drop included.
Each night goes through ``compare_night`` with the evidence carried, as the CLI does;
the script prints the changed cell's success-rate night share, p and verdict for the
nights around the drop (docs/calibration.md, "Nights since the anchor").

    PYTHONPATH=. python benchmarks/absorbed_drop.py            # seed 2, as the docs quote
    PYTHONPATH=. python benchmarks/absorbed_drop.py --seed 5
"""

from __future__ import annotations

import argparse
import random

from evalrunner.stats import CellBaseline, CellNight, EvidenceState, compare_night
from evalrunner.suite import Tolerance
from evalrunner.suite._record import CellKey, RunRecord


def runs(cell: str, passed: int, start: int, n: int = 10) -> list[RunRecord]:
    return [
        RunRecord(
            run_id=f"{cell}/m/{start + i}",
            suite="t",
            scenario=cell,
            model="m",
            index=start + i,
            outcome="passed" if i < passed else "failed",
            step_count=3,
            llm_calls=3,
            tool_calls=2,
            tools=["search", "read"],
            prompt_tokens=1000,
            completion_tokens=200,
            latency_s=2.0,
            final_answer="Paris" if i < passed else "no",
        )
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--cells", type=int, default=40)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cells = [f"s{i}" for i in range(args.cells)]
    anchors = {
        c: CellBaseline(
            CellKey(c, "m"), Tolerance(), [runs(c, 10, 10 * i) for i in range(3)], "anchor"
        )
        for c in cells
    }
    states: dict[str, EvidenceState | None] = {c: None for c in cells}
    print("night  passed  verdict        night share  p")
    for night in range(19):
        tonight = []
        for c in cells:
            if c == "s0" and night >= 11:
                passed = sum(rng.random() < 0.7 for _ in range(10))
            else:
                passed = 10 if rng.random() < 0.9 else 9
            tonight.append(CellNight(anchors[c], runs(c, passed, 100 + 10 * night), states[c]))
        compared = compare_night(tonight)
        for cell in compared.cells:
            states[cell.key.scenario] = cell.evidence
        if night >= 10:
            r = next(
                r for r in compared.results if r.metric == "success_rate" and r.scenario == "s0"
            )
            print(
                f"{night + 1:5d}  {r.night_estimate:6.1f}  {r.verdict:13s}  "
                f"{r.night_share:11.3f}  {r.p:.3g}"
            )


if __name__ == "__main__":
    main()
