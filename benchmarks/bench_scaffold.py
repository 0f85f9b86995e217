"""`evalrunner init`'s scaffold recorded on the embedded model: do its goldens record?

Issue 54's A8: a new team's first golden is the scaffold's, recorded on the embedded model
(`pytest suites --golden-record`, step 3 of init's next steps). For each agent kind init
writes (`litellm`, `command`) and each engine, N fresh projects (a temp directory, a
scrubbed environment): init, then the recording; printed per kind and engine: recordings
whose checks passed (a golden is written only then), and the seconds each took.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_scaffold.py              # 8 each, ~6 min
    PYTHONPATH=. .venv/bin/python benchmarks/bench_scaffold.py --tries 3 --engine prebuilt
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean, median

ENGINES = ("prebuilt", "llama-cpp-python")
KINDS = ("litellm", "command")


def record(kind: str, engine: str) -> tuple[bool, float]:
    """One fresh project: init, then the golden recording. (passed, seconds)."""
    with tempfile.TemporaryDirectory(prefix="bench-scaffold-") as tmp:
        bin_dir = str(Path(sys.executable).parent)
        env = {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "HOME": tmp,
            "EVALRUNNER_LOCAL_ENGINE": engine,
        }
        cli = str(Path(bin_dir) / "evalrunner")
        subprocess.run([cli, "init", "--agent", kind], cwd=tmp, env=env, check=True,
                       capture_output=True)  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "suites", "--golden-record", "-q",
             "-p", "no:cacheprovider"],
            cwd=tmp, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        took = time.perf_counter() - start
        written = any(Path(tmp, "suites", "goldens").rglob("*.json"))
        return done.returncode == 0 and written, took


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tries", type=int, default=8)
    parser.add_argument("--engine", action="append", choices=ENGINES, help="default: both")
    args = parser.parse_args()
    print(f"{'engine':<18}{'agent':<9}{'recorded':>10}{'median s':>10}{'mean s':>8}{'max s':>7}")
    for engine in args.engine or ENGINES:
        for kind in KINDS:
            got = [record(kind, engine) for _ in range(args.tries)]
            seconds = [s for _, s in got]
            print(
                f"{engine:<18}{kind:<9}{sum(p for p, _ in got):>7}/{len(got):<2}"
                f"{median(seconds):>10.1f}{mean(seconds):>8.1f}{max(seconds):>7.1f}",
                flush=True,
            )


if __name__ == "__main__":
    os.environ.pop("EVALRUNNER_LOCAL_ENGINE", None)
    main()
