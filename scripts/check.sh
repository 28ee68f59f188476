#!/usr/bin/env bash
# `npm run check`: the gate to pass before a commit, and the one CI passes before the tests:
# Prettier's format check, ESLint, the typecheck, knip and the layer rules. They read the
# sources and nothing else, so they run at the same time (tsc and ESLint each keep one core
# busy for most of the run); each one's output is shown whole, in this order, with its time.
set -uo pipefail
cd "$(dirname "$0")/.."
steps=(format:check lint typecheck knip lint:layers)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
started=$(date +%s%N)
for step in "${steps[@]}"; do
  (
    t0=$(date +%s%N)
    npm run --silent "$step" >"$out/$step.log" 2>&1
    echo "$? $(((($(date +%s%N) - t0) / 1000000)))" >"$out/$step.rc"
  ) &
done
wait
failed=()
for step in "${steps[@]}"; do
  read -r rc ms <"$out/$step.rc"
  verdict=ok
  if [ "$rc" -ne 0 ]; then
    verdict="FAILED (exit $rc)"
    failed+=("$step")
  fi
  printf -- '-- %s: %s in %d.%d s\n' "$step" "$verdict" $((ms / 1000)) $((ms % 1000 / 100))
  sed 's/^/   /' "$out/$step.log"
done
total=$((($(date +%s%N) - started) / 1000000))
if [ ${#failed[@]} -gt 0 ]; then
  printf 'check: %s failed (%d.%d s)\n' "${failed[*]}" $((total / 1000)) $((total % 1000 / 100))
  exit 1
fi
printf 'check: all passed (%d.%d s)\n' $((total / 1000)) $((total % 1000 / 100))
