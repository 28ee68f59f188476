#!/usr/bin/env bash
# The test suite on a busy machine (issue 13's figure: within 10 minutes): `npm run bench`
# runs in a loop in one clone (its own process group and embedded cluster, data/bench),
# and from a fresh private clone the README's `npm ci && npm test` runs on the embedded
# default, timed. Afterwards it lists anything the test clone left running.
#
# Usage: bash bench/busy-suite.sh [--hog] [--database-url URL]
#   --hog: the other work is one process keeping both cores busy (two threads spinning)
#          instead of the benchmark loop; a URL runs the tests on that server.
# Not a test: it only reports. It takes 10-20 minutes.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
test_db=""
hog=""
while [ $# -gt 0 ]; do
  case "$1" in
    --hog) hog=1 ;;
    --database-url) test_db="${2:-}"; shift ;;
  esac
  shift
done
unset DATABASE_URL REDIS_URL
work=$(mktemp -d)
git clone -q "$repo" "$work/load"
git clone -q "$repo" "$work/app"
(cd "$work/load" && npm ci --no-audit --no-fund --prefer-offline >/dev/null 2>&1)
if [ -n "$hog" ]; then
  setsid node -e "const { Worker } = require('node:worker_threads'); new Worker('for (;;) {}', { eval: true }); for (;;) {}" >"$work/bench.log" 2>&1 &
else
  setsid bash -c "cd '$work/load' && while true; do npm run bench; done" >"$work/bench.log" 2>&1 &
fi
bench=$!
(while true; do echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 30; done) >"$work/load.log" &
loadlog=$!
cleanup() {
  kill -TERM -- "-$bench" 2>/dev/null
  kill "$loadlog" 2>/dev/null
  sleep 3
  (cd "$work/load" && node --import tsx -e "await (await import('./core/db/embedded.ts')).stopEmbedded('data/bench')" >/dev/null 2>&1)
}
trap cleanup EXIT
sleep 45 # the benchmark gets going first
cd "$work/app"
echo "test clone: $work/app at $(git log --oneline -1 | cut -c1-72)"
start=$(date +%s)
npm ci >"$work/ci.log" 2>&1
status=$?
installed=$(date +%s)
if [ $status = 0 ]; then
  # CPU seconds of npm test and everything it waited for (tap, test files, the embedded PostgreSQL)
  timed=(/usr/bin/time -f '%U %S' -o "$work/test.cpu")
  [ -x /usr/bin/time ] || timed=()
  if [ -n "$test_db" ]; then DATABASE_URL="$test_db" "${timed[@]}" npm test >"$work/test.log" 2>&1; else "${timed[@]}" npm test >"$work/test.log" 2>&1; fi
  status=$?
fi
end=$(date +%s)
echo "npm ci && npm test: exit $status in $((end - start)) s (npm ci $((installed - start)) s, npm test $((end - installed)) s); $(grep -E '^# \{ total' "$work/test.log" | tail -1)"
[ -s "$work/test.cpu" ] && echo "npm test used $(awk '{printf "%.0f s of CPU (%.0f user, %.0f system)", $1 + $2, $1, $2}' "$work/test.cpu")"
echo "slowest test files (wall time under load):"; grep -E '^(ok|not ok) [0-9]+ - .* # time=' "$work/test.log" | sed -E 's/.* - (.*) # time=([0-9.]+)ms.*/\2 \1/' | sort -rn | head -12 | awk '{printf "  %6.1f s  %s\n", $1/1000, $2}'
echo "load average while it ran:"; sed -n '1~4p' "$work/load.log"
cleanup
trap - EXIT
echo "left running from the test clone:"; ps -eo pid,cmd | grep "$work/app" | grep -v grep || echo "(none)"
echo "logs: $work/test.log, $work/bench.log"
