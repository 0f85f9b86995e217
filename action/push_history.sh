#!/usr/bin/env bash
# Commit tonight's history file to the history branch. Nights of several suites
# may push at once: a push that lost the race fetches again and retries (files
# have unique names, so there is never a conflict).
set -euo pipefail
new=$(pwd)/evalrunner-out/new-history
if [ ! -d "$new" ] || [ -z "$(ls -A "$new")" ]; then
  echo "evalrunner: no new history file to keep"
  exit 0
fi
branch=${HISTORY_BRANCH:-evalrunner-history}
remote=${HISTORY_REMOTE:-${GITHUB_SERVER_URL:-}/${GITHUB_REPOSITORY:-}}
source "$(dirname "$0")/auth.sh"
for attempt in 1 2 3 4 5; do
  work=$(mktemp -d)
  git init -q "$work"
  cd "$work"
  git config user.name "evalrunner nightly"
  git config user.email "evalrunner@users.noreply.github.com"
  if git "${auth[@]}" fetch -q --depth 1 "$remote" "$branch" 2>/dev/null; then
    git checkout -q -b "$branch" FETCH_HEAD
  else
    git checkout -q --orphan "$branch"
  fi
  mkdir -p reports/history
  cp -r "$new/." reports/history/
  git add reports/history
  git commit -qm "history: ${SUITE:-suite} night ${GITHUB_RUN_ID:-local}" || exit 0
  if git "${auth[@]}" push -q "$remote" "HEAD:$branch"; then
    echo "evalrunner: history appended to $branch (attempt $attempt)"
    exit 0
  fi
  cd - >/dev/null
  rm -rf "$work"
  sleep $((attempt * 2))
done
echo "error: could not push the history to $branch after 5 attempts" >&2
exit 1
