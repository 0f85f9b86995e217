# Sourced by the action's scripts: `git "${auth[@]}" ...` carries the job's token
# (GH_TOKEN) in a header for that one command; it is never written to .git/config,
# and checkouts keep no credentials. Empty without a token (a local run, a test).
auth=()
if [ -n "${GH_TOKEN:-}" ]; then
  auth=(-c "http.extraheader=AUTHORIZATION: basic $(printf 'x-access-token:%s' "$GH_TOKEN" | base64 -w0)")
fi
