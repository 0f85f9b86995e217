#!/usr/bin/env bash
# Propose tonight's results as the suite's baseline, on a new branch, in a pull request.
# NIGHT_EXIT (the run step's exit output) decides how:
#   0  the night flagged nothing: its runs are appended (one more night of the same
#      behaviour matures the baseline);
#   1  the night flagged a change (or crashed runs), and accepting it says the change is
#      intended: the baselines are rebuilt from this night alone. Appended, a baseline
#      of both behaviours would flag neither (the night's own advice says so);
#   else (2 bad input, 3 an outage) there is no behaviour to accept: nothing is proposed.
# EVALRUNNER_DRY_RUN=1 stops after the commit (what it would push is shown).
set -euo pipefail
: "${SUITE:?accept needs the suite}"
: "${NIGHT_EXIT:?accept needs the night's exit code (the run step's exit output)}"
case "$NIGHT_EXIT" in
  0)
    how=(--append)
    said="appended"
    body="Appends the night's runs to the $SUITE baselines: it flagged nothing, so it is one more night of the same behaviour."
    ;;
  1)
    how=()
    said="replaces the baselines: it flagged a change"
    body="Replaces the $SUITE baselines with this night's runs: the night flagged a change (or crashed runs), and accepting it says the change is intended. The old nights go, as a baseline of both behaviours would flag neither; the new one gates once it holds the suite's min_baseline_nights (accept later nights to append them)."
    ;;
  *)
    echo "evalrunner accept: the night exited $NIGHT_EXIT (2: bad input, 3: an outage), so it measured no behaviour to accept; nothing was proposed" >&2
    exit 1
    ;;
esac
evalrunner baseline --suite "$SUITE" --from evalrunner-out/results "${how[@]}"
branch="evalrunner/baseline-$SUITE-${GITHUB_RUN_ID:-local}"
git checkout -q -b "$branch"
git add baselines
git -c user.name="evalrunner nightly" -c user.email="evalrunner@users.noreply.github.com" \
  commit -qm "baseline: accept night ${GITHUB_RUN_ID:-local} of $SUITE ($said)"
if [ "${EVALRUNNER_DRY_RUN:-}" = 1 ]; then
  git show --stat --oneline HEAD
  exit 0
fi
source "$(dirname "$0")/auth.sh"
git "${auth[@]}" push -q "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY" "$branch"
gh pr create --head "$branch" --title "evalrunner: accept night ${GITHUB_RUN_ID:-} of $SUITE as baseline" \
  --body "$body Review the baseline files' diffs before merging."
# A pull request opened with the workflow's token starts no pull_request workflow: start
# the PR check on its branch, so the baselines are reviewed beside the frozen replay.
gh workflow run "${PR_WORKFLOW:-evalrunner-pr.yml}" --ref "$branch" \
  || echo "::notice::evalrunner could not start ${PR_WORKFLOW:-evalrunner-pr.yml} on $branch" \
    "(it needs a workflow_dispatch trigger, and this job actions: write); run it from the" \
    "Actions tab"
