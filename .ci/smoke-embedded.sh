#!/usr/bin/env bash
# Smoke test of the embedded default, as a newcomer meets it: a clone in a private
# folder (mode 700, as mktemp -d makes), the README's start command exactly as written
# (`npm ci && npm start`, no DATABASE_URL, port 3030), which builds dist/ and runs it on
# the project's Node 24, a curl walk-through, every `sh` block of the README and docs/
# exactly as written (scripts/doc-commands.ts), a clean stop by SIGTERM to npm alone
# (nothing left running), a restart that keeps the data, and a restart after a crash (node and postgres
# killed, stale postmaster.pid left behind).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
app="$work/app"
# The README's port: its walk-through and the docs' commands name http://127.0.0.1:3030.
port=3030
pgport=$((40000 + RANDOM % 20000))
pid=""
cleanup() {
  [ -n "$pid" ] && kill -TERM -- "-$pid" 2>/dev/null || true
  sleep 1
  # The service's cluster, and the tests' one the docs' fuzz commands started.
  for data in "$app/data" "$app/data/test"; do
    if [ -f "$data/CLUSTER-LOCATION.txt" ]; then home=$(tail -1 "$data/CLUSTER-LOCATION.txt"); else home="$data"; fi
    if [ -f "$home/pg/postmaster.pid" ]; then kill -INT "$(head -1 "$home/pg/postmaster.pid")" 2>/dev/null || true; fi
    case "$home" in /var/lib/qehs-records/clusters/*) rm -rf "$home" ;; esac
  done
  rm -rf "$work"
}
trap cleanup EXIT

git clone -q "$repo" "$app"
cd "$app"
unset DATABASE_URL PORT
if curl -s -o /dev/null "http://127.0.0.1:$port/"; then echo "smoke: port $port is taken; the README's walk-through needs it"; exit 1; fi
# The README's start command (its first `sh setup` block), exactly as written.
start_command=$(bash .ci/readme-setup.sh 1)
[ "$start_command" = "npm ci && npm start" ] || { echo "smoke: unexpected README start command: $start_command"; exit 1; }

installing() { [ -n "$1" ] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q '^npm ci'; }
start() {
  : >"$work/out"
  EMBEDDED_PG_PORT=$pgport setsid bash -c "${1:-npm start}" >"$work/out" 2>"$work/err" &
  pid=$!
  local waited=0
  while [ "$waited" -lt 600 ]; do
    grep -q 'Listening on' "$work/out" && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$work/err"; echo "smoke: npm start exited"; exit 1; }
    # The first start's `npm ci` (downloads, Node 24, the build) does not count against the 5 minutes to start.
    installing "$(pgrep -P "$pid" | head -1)" || waited=$((waited + 1))
    sleep 0.5
  done
  cat "$work/err"; echo "smoke: service did not start within 5 minutes"; exit 1
}
# The npm process of a start: bash itself when it exec'd npm (a lone command), else bash's child.
npm_pid() { if grep -q '^npm' "/proc/$pid/comm" 2>/dev/null; then echo "$pid"; else pgrep -P "$pid" | head -1; fi; }
stop() {
  # SIGTERM to npm alone, as a supervisor sends it (the issue 26 orphan): npm forwards it to
  # the service's node, its only child, and exits after it; nothing of the start may be left.
  kill -TERM "$(npm_pid)"
  wait "$pid" || true
  for _ in $(seq 1 60); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 -- "-$pid" 2>/dev/null; then ps -o pid,ppid,args -g "$pid"; echo "smoke: processes left 30 s after SIGTERM to npm"; exit 1; fi
  pid=""
}
cluster_home() { if [ -f data/CLUSTER-LOCATION.txt ]; then tail -1 data/CLUSTER-LOCATION.txt; else echo "$app/data"; fi; }
api() { curl -s -o "$work/body" -w '%{http_code}' -H "Authorization: Bearer $key" -H 'Content-Type: application/json' "$@"; }
expect() { if [ "$1" != "$2" ]; then echo "smoke: $3: expected $2, got $1"; cat "$work/body"; exit 1; fi; }

base="http://127.0.0.1:$port"
start "$start_command"
# `npm ci` built dist/ (the `prepare` script) and `npm start` runs that build on the project's Node.
for _ in $(seq 1 20); do grep -q '"msg":"running from' "$work/err" && break; sleep 0.5; done
grep -q '"msg":"running from the build (dist/)"' "$work/err" || { cat "$work/err"; echo "smoke: npm start did not run the build"; exit 1; }
grep -q '"node":"v24\.' "$work/err" || { echo "smoke: the service does not run on the project's Node 24"; exit 1; }
# Not a terminal: one JSON line on stdout holds it (`apiKey`); the log (stderr) never does.
key=$(grep -oE 'svc_k_[0-9A-Za-z]{40}' "$work/out" | tail -1)
grep -q 'svc_k_' "$work/err" && { echo "smoke: the API key is in the log (stderr)"; exit 1; }
[ -n "$key" ] || { echo "smoke: no demo API key printed on first start"; exit 1; }

code=$(api -X POST "$base/api/v1/records" -d '{"moduleKey":"incident","payload":{"title":"Smoke test","description":"Embedded default","occurredAt":"2026-11-20T08:30:00Z","site":"CI","category":"near-miss","severity":"low"}}')
expect "$code" 201 "create"
id=$(jq -r .id "$work/body")
code=$(api -X POST "$base/api/v1/records/$id:transition" -d '{"transition":"start-investigation","payload":{"investigationLead":"6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11"}}')
expect "$code" 200 "transition"
expect "$(jq -r .state "$work/body")" investigating "state after transition"
code=$(api "$base/api/v1/records?moduleKey=incident")
expect "$code" 200 "list"
expect "$(jq '.items | length' "$work/body")" 1 "items listed"

# The tenant's OpenAPI document types its modules; the reference page loads from the npm package.
code=$(api "$base/api/docs/spec.json")
expect "$code" 200 "spec.json"
expect "$(jq -r '.openapi + " " + (.components.schemas.IncidentPayload.required | index("title") | tostring)' "$work/body")" "3.1.0 0" "tenant document"
code=$(curl -s -o "$work/body" -w '%{http_code}' "$base/api/docs/assets/swagger-ui-bundle.js")
expect "$code" 200 "reference page assets"

# An attachment through the local driver's signed URLs, and a bulk load of two rows.
printf 'smoke test attachment\n' > "$work/file.txt"
code=$(api -X POST "$base/api/v1/attachments" -d "{\"recordId\":\"$id\",\"fileName\":\"note.txt\",\"contentType\":\"text/plain\",\"size\":$(stat -c %s "$work/file.txt"),\"sha256\":\"$(sha256sum "$work/file.txt" | cut -d' ' -f1)\"}")
expect "$code" 201 "attachment upload URL"
upload_url=$(jq -r .upload.url "$work/body")
attachment=$(jq -r .id "$work/body")
code=$(curl -s -o "$work/body" -w '%{http_code}' -X PUT -H 'Content-Type: text/plain' --data-binary @"$work/file.txt" "$upload_url")
expect "$code" 200 "attachment upload"
code=$(api "$base/api/v1/attachments/$attachment")
expect "$code" 200 "attachment download URL"
curl -s -o "$work/downloaded.txt" "$(jq -r .download.url "$work/body")"
cmp -s "$work/file.txt" "$work/downloaded.txt" || { echo "smoke: downloaded attachment differs"; exit 1; }
printf '%s\n%s\n' '{"payload":{"title":"Bulk 1","description":"d","occurredAt":"2026-11-20T08:30:00Z","site":"CI","category":"near-miss","severity":"low"}}' '{"payload":{"title":"Bulk 2"}}' > "$work/rows.ndjson"
code=$(curl -s -o "$work/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/x-ndjson' --data-binary @"$work/rows.ndjson" "$base/api/modules/incident/bulk")
expect "$code" 200 "bulk load"
expect "$(tail -1 "$work/body" | jq -c '[.summary.created, .summary.errors]')" "[1,1]" "bulk outcomes"

# Every command of the README and docs/, exactly as written, against this instance. The
# fuzzing doc's commands start the tests' own embedded PostgreSQL: on a free port of its own.
# The harness runs on the project's Node; the commands it runs see this shell's PATH, as a reader's would.
EMBEDDED_TEST_PG_PORT=$((40000 + RANDOM % 20000)) node_modules/.bin/node --import tsx scripts/doc-commands.ts

stop
[ ! -f "$(cluster_home)/pg/postmaster.pid" ] || { echo "smoke: embedded PostgreSQL still running after a clean stop"; exit 1; }

start
grep -qE 'svc_k_' "$work/out" && { echo "smoke: a second start printed a new key"; exit 1; }
code=$(api "$base/api/v1/records/$id")
expect "$code" 200 "record survives a restart"

# Crash: kill node and postgres without warning; the pid file stays behind.
kill -KILL -- "-$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=""
kill -KILL "$(head -1 "$(cluster_home)/pg/postmaster.pid")"
sleep 1
[ -f "$(cluster_home)/pg/postmaster.pid" ] || { echo "smoke: expected a stale postmaster.pid"; exit 1; }
start
code=$(api "$base/api/v1/records/$id")
expect "$code" 200 "record survives a crash"
stop
echo "smoke: embedded default OK (private clone, start, walk-through, OpenAPI, attachment, bulk, restart, crash recovery)"
