"""Cyclomatic complexity of the package (radon): the average, and every function above the limit.

    .venv/bin/python benchmarks/complexity.py [--limit 15]

The measurement lives in ``tests/support/complexity_measure.py``; the test that holds the
package to it (CC 12, with a short allow-list of reasons, none above 15, modules of at
most 600 lines) is ``tests/meta/test_complexity.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from complexity_measure import functions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=15)
    args = parser.parse_args()
    scored = functions()
    over = sorted((f for f in scored if f.complexity > args.limit), key=lambda f: -f.complexity)
    average = sum(f.complexity for f in scored) / len(scored)
    print(f"{len(scored)} functions, average complexity {average:.2f}")
    for f in over:
        print(f"  {f.complexity:3}  {f.path}:{f.lineno} {f.name}")
    print(f"{len(over)} function(s) above {args.limit}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
