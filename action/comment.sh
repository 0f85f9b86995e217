#!/usr/bin/env bash
# Post the run's comment (evalrunner-out/comment.md) on the pull request, or update the one
# posted before: found by the marker on its first line, so another bot's comment is never
# touched. A token that cannot write (fork and Dependabot pull requests get a read-only
# one) leaves the comment in the job summary and this step green: the check passes or fails
# on its own step.
set -uo pipefail
body=evalrunner-out/comment.md
[ -s "$body" ] || exit 0
marker=$(head -n 1 "$body")
case "$marker" in
  "<!-- evalrunner:"*" -->") ;;
  *) marker="" ;;
esac
ours=""
if [ -n "$marker" ]; then
  ours=$(gh api "repos/$GITHUB_REPOSITORY/issues/$PR/comments" --paginate \
    --jq ".[] | select(.body | startswith(\"$marker\")) | .id" 2>/dev/null | tail -n 1)
fi
if [ -n "$ours" ]; then
  gh api -X PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$ours" -F "body=@$body" \
    >/dev/null && exit 0
elif gh pr comment "$PR" --body-file "$body" >/dev/null; then
  exit 0
fi
echo "::notice::evalrunner could not post its pull request comment (the token is read-only," \
  "as on fork and Dependabot pull requests); the job summary holds it"
exit 0
