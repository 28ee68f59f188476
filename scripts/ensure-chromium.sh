#!/usr/bin/env bash
# Run before the tests (npm pretest): the browser tests drive Debian's Chromium through
# playwright-core. Installs it when missing and we may (root with apt-get); otherwise
# says so, and the browser tests skip (in CI they fail instead).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "pretest: installing Debian's chromium for the browser tests" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
else
  echo "pretest: /usr/bin/chromium is missing and cannot be installed here (needs root and apt-get); browser tests will skip" >&2
fi
