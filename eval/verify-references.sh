#!/usr/bin/env bash
# Proves that every case of the starter suite flips: its check fails on the project as the agent
# gets it and passes once the case's reference patch is applied.
#
# For each case of eval/*.yaml:
#   1. copy the project into a temporary git repository and commit it (as the runner does);
#      copy the check files over it and run the check: it must FAIL (exit status not 0);
#   2. from a fresh copy, `git apply` the reference patch, copy the check files over it and run
#      the check: it must PASS (exit status 0).
#
# Usage: eval/verify-references.sh [CASE_ID...]
# Needs git and the toolchains of the checks (python3 + pytest, cargo, node, go); no network.
# The same proof, from the Rust side: `pitcrew eval check-cases eval/`.
set -euo pipefail

EVAL="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/eval-references.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
git_() { git -c user.name=eval -c user.email=eval@localhost -c commit.gpgsign=false -c core.autocrlf=false "$@"; }

# One line per case, tab-separated: id, repo, check files, check command, reference. The suite
# files are written in one style (`- id:` starts a case; `repo`, `reference` at two spaces;
# `files`, `run` under `check` at four), which is all this reads.
cases() {
  local file
  for file in "$EVAL"/python.yaml "$EVAL"/rust.yaml "$EVAL"/javascript.yaml "$EVAL"/go.yaml; do
    awk -v OFS='\t' '
      function flush() { if (id != "") print id, repo, files, run, ref; id = repo = files = run = ref = "" }
      /^- id: /        { flush(); id = substr($0, 7); next }
      /^  repo: /      { repo = substr($0, 9); next }
      /^    files: /   { files = substr($0, 12); next }
      /^    run: /     { run = substr($0, 10); next }
      /^  reference: / { ref = substr($0, 14); next }
      END { flush() }
    ' "$file"
  done
}

# Copies the case's project to $1 and commits it there.
checkout() {
  local dest="$1"
  rm -rf "$dest"
  cp -R "$EVAL/$repo" "$dest"
  (cd "$dest" && git_ init -q && git_ add -A && git_ commit -q -m "case start") </dev/null
}

# Copies the check files over $1 and runs the check there; its output goes to $2.
check() {
  local dir="$1" log="$2"
  if [[ -n "$files" ]]; then
    cp -R "$EVAL/$files/." "$dir/"
  fi
  (cd "$dir" && timeout 600 bash -c "$run") </dev/null >"$log" 2>&1
}

total=0
bad=0
wanted=" $* "
while IFS=$'\t' read -r id repo files run ref; do
  if [[ $# -gt 0 && "$wanted" != *" $id "* ]]; then
    continue
  fi
  total=$((total + 1))
  if [[ -z "$repo" || -z "$run" || -z "$ref" ]]; then
    bad=$((bad + 1))
    printf 'FAIL  %-24s the case has no repo, check.run or reference line this script can read\n' "$id"
    continue
  fi
  dir="$WORK/$id"
  problem=""

  checkout "$dir"
  if check "$dir" "$WORK/$id.before.log"; then
    problem="the check passes without the reference patch"
    log="$WORK/$id.before.log"
  else
    before=$?
    checkout "$dir"
    if ! (cd "$dir" && git_ apply --whitespace=nowarn "$EVAL/$ref") </dev/null >"$WORK/$id.apply.log" 2>&1; then
      problem="the reference patch does not apply"
      log="$WORK/$id.apply.log"
    elif ! check "$dir" "$WORK/$id.after.log"; then
      problem="the check fails with the reference patch"
      log="$WORK/$id.after.log"
    fi
  fi

  if [[ -z "$problem" ]]; then
    printf 'ok    %-24s before: fails (exit %d)  with %s: passes\n' "$id" "$before" "$(basename "$ref")"
  else
    bad=$((bad + 1))
    printf 'FAIL  %-24s %s; the end of its output:\n' "$id" "$problem"
    tail -n 25 "$log" | sed 's/^/      | /'
  fi
done < <(cases)

if [[ $total -eq 0 ]]; then
  echo "no cases found" >&2
  exit 1
fi
echo "$((total - bad))/$total cases flip: the check fails before and passes with the reference"
[[ $bad -eq 0 ]]
