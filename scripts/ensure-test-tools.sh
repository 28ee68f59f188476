#!/usr/bin/env bash
# Run before the tests (npm pretest): Debian's Chromium drives the browser tests through
# playwright-core, and poppler-utils' pdftotext reads PDF exports back. Installs what
# is missing when we may (root with apt-get); otherwise says so: browser tests then skip
# (in CI they fail), and the PDF export test fails naming the missing tool.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v pdftotext >/dev/null 2>&1 || missing+=(poppler-utils)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "pretest: installing Debian packages for the tests: ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }
else
  echo "pretest: missing ${missing[*]} and cannot install them here (needs root and apt-get)" >&2
fi
