#!/usr/bin/env bash
# The action's run step: frozen (pytest replay) or night (a live run and its
# report). Writes evalrunner-out/ (comment.md, the report, the results), appends
# to $GITHUB_STEP_SUMMARY and sets `exit` in $GITHUB_OUTPUT; never fails itself,
# so the report, comment and history steps still run (the last step fails).
set -uo pipefail
out=evalrunner-out
mkdir -p "$out"
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
code=0
case "$MODE" in
  frozen)
    # Strict unless told otherwise: a golden --golden-update wrote from answers recorded for
    # other requests (a changed prompt, not re-recorded) passes a lenient replay for good.
    strict=()
    [ "${STRICT:-true}" = false ] || strict=(--golden-strict)
    # shellcheck disable=SC2086  # PATHS is a list of paths
    python -m pytest ${PATHS:-suites} "${strict[@]}" -p no:cacheprovider -q \
      --junitxml "$out/frozen.xml" >"$out/frozen.txt" 2>&1 || code=$?
    [ "$code" = 5 ] && code=0  # no frozen tests collected is not a failure
    python "$EVALRUNNER_SRC/action/frozen_summary.py" "$out/frozen.xml" >"$out/comment.md"
    cat "$out/comment.md" >>"$summary"
    ;;
  night)
    : "${SUITE:?night mode needs the suite input}"
    history=history/reports/history
    mkdir -p "$history"
    # The whole history, so the evidence accumulated since the baseline carries on.
    source "$EVALRUNNER_SRC/action/auth.sh"  # a private repo's history needs the token
    if git "${auth[@]}" fetch -q --depth 1 origin "${HISTORY_BRANCH:-evalrunner-history}" 2>/dev/null; then
      git archive FETCH_HEAD reports/history 2>/dev/null | tar -x -C history || true
    fi
    touch "$out/.started"
    evalrunner run --suite "$SUITE" ${RUNS:+--runs "$RUNS"} ${MODEL:+--model "$MODEL"} \
      ${BUDGET:+--budget "$BUDGET"} --out "$out/results" --history "$history" || code=$?
    # Tonight's history file (files are immutable, one per night) for push_history.sh.
    mkdir -p "$out/new-history"
    (cd "$history" && find . -type f -newer "../../../$out/.started" \
      -exec cp --parents {} "../../../$out/new-history/" \;)
    if evalrunner report --history "$history" --suite "$SUITE" --out "$out/report"; then
      cp "$out/report/summary.md" "$out/comment.md"
    else
      # The run wrote no history (it stopped before its runs): say so, do not fail here.
      echo "evalrunner: no night of suite $SUITE in the history to report (exit $code)" \
        >"$out/comment.md"
    fi
    cat "$out/comment.md" >>"$summary"
    ;;
  *)
    echo "error: mode must be frozen or night, not '$MODE'" >&2
    code=2
    ;;
esac
echo "exit=$code" >>"${GITHUB_OUTPUT:-/dev/null}"
exit 0
