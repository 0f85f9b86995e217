#!/usr/bin/env bash
# Propose tonight's results as the new baseline: append them to the suite's
# baselines on a new branch and open a pull request for review.
# EVALRUNNER_DRY_RUN=1 stops after the commit (what it would push is shown).
set -euo pipefail
: "${SUITE:?accept needs the suite}"
evalrunner baseline --suite "$SUITE" --from evalrunner-out/results --append
branch="evalrunner/baseline-$SUITE-${GITHUB_RUN_ID:-local}"
git checkout -q -b "$branch"
git add baselines
git -c user.name="evalrunner nightly" -c user.email="evalrunner@users.noreply.github.com" \
  commit -qm "baseline: accept night ${GITHUB_RUN_ID:-local} of $SUITE"
if [ "${EVALRUNNER_DRY_RUN:-}" = 1 ]; then
  git show --stat --oneline HEAD
  exit 0
fi
source "$(dirname "$0")/auth.sh"
git "${auth[@]}" push -q "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY" "$branch"
gh pr create --head "$branch" --title "evalrunner: accept night ${GITHUB_RUN_ID:-} of $SUITE as baseline" \
  --body "Appends the night's runs to the $SUITE baselines. Review the summary diffs before merging."
