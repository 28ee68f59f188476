#!/usr/bin/env bash
# Builds the image (Dockerfile) and starts the topology of compose.yaml, then checks it from
# outside: /readyz through the balancer, and one record created and read back through it.
# Removes everything it started (containers, network, volumes) at the end, passed or failed.
#
# Needs a container engine (podman, or docker with a daemon that answers) and a compose tool
# (`docker compose`, `docker-compose`, `podman compose`, `podman-compose`). It never pulls:
# every image compose.yaml names (the base image BASE_IMAGE, default node:24-bookworm-slim,
# and postgres:18, redis:7, minio/minio, minio/mc, haproxy:3.0) must already be in the
# engine's local store: `docker load -i images.tar` (or podman load) of archives made with
# `docker save` where a registry is reachable, or BASE_IMAGE=<a local image with npm>.
# docs/operations.md, "Containers", says how.
#
# Without an engine, a compose tool or the images it says what is missing and exits 0
# ("SKIP"); CHECK_CONTAINERS_REQUIRED=1 makes that exit 2 (for machines that must run it).
# Usage: scripts/check-containers.sh   (from anywhere; CONTAINER_ENGINE=podman|docker to choose)
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  echo "SKIP (containers not checked): $*" >&2
  [ "${CHECK_CONTAINERS_REQUIRED:-}" = 1 ] && exit 2
  exit 0
}

# The engine: the one named, else podman, else docker, whichever answers.
engine=""
for candidate in ${CONTAINER_ENGINE:-podman docker}; do
  command -v "$candidate" > /dev/null || continue
  if "$candidate" info > /dev/null 2>&1; then engine=$candidate; break; fi
  echo "$candidate is installed but does not answer ($candidate info failed: no daemon or socket)." >&2
done
[ -n "$engine" ] || skip "no container engine answers here. Install podman (apt-get install podman) or docker (apt-get install docker.io) and start it."

# The compose tool that goes with it.
compose=()
if [ "$engine" = docker ] && docker compose version > /dev/null 2>&1; then compose=(docker compose)
elif [ "$engine" = podman ] && podman compose version > /dev/null 2>&1; then compose=(podman compose)
elif [ "$engine" = podman ] && command -v podman-compose > /dev/null; then compose=(podman-compose)
elif command -v docker-compose > /dev/null; then compose=(docker-compose)
fi
[ ${#compose[@]} -gt 0 ] || skip "$engine answers, but no compose tool was found (docker compose, docker-compose, podman-compose)."

export BASE_IMAGE=${BASE_IMAGE:-node:24-bookworm-slim}
"${compose[@]}" -f compose.yaml config -q || { echo "compose.yaml is not valid" >&2; exit 1; }

# Every image must be local: nothing is pulled (no registry is reachable where this runs).
missing=()
for image in "$BASE_IMAGE" $(sed -n 's/^ *image: *\([^ ]*\) *$/\1/p' compose.yaml | grep -v '^records-platform:'); do
  "$engine" image inspect "$image" > /dev/null 2>&1 || missing+=("$image")
done
[ ${#missing[@]} -eq 0 ] || skip "images not in $engine's local store: ${missing[*]}. Load them (\`$engine load -i images.tar\`, an archive made with \`docker save\` where a registry is reachable), or set BASE_IMAGE to a local image with npm; see docs/operations.md, \"Containers\"."

project="records-check-$$"
dc() { "${compose[@]}" -p "$project" -f compose.yaml "$@"; }
cleanup() {
  local status=$?
  if [ $status -ne 0 ]; then dc logs --tail 60 app1 app2 lb >&2 || true; fi
  dc down -v --remove-orphans > /dev/null 2>&1 || true
  exit $status
}
trap cleanup EXIT

echo "building the image on $BASE_IMAGE with $engine…"
dc build --build-arg BASE_IMAGE="$BASE_IMAGE"
echo "starting the topology…"
dc up -d

B=http://127.0.0.1:8080
deadline=$((SECONDS + 300))
until [ "$(curl -s -o /dev/null -w '%{http_code}' $B/readyz)" = 200 ]; do
  [ $SECONDS -lt $deadline ] || { echo "FAIL: $B/readyz did not answer 200 within 300 s" >&2; exit 1; }
  sleep 3
done
echo "ok: /readyz answers 200 through the balancer"

KEY=$(dc exec -T app1 npm run -s records -- token create --tenant example --type api-key --name check-containers | tail -1)
[[ "$KEY" == svc_k_* ]] || { echo "FAIL: no API key from the CLI: $KEY" >&2; exit 1; }
created=$(curl -s -f $B/api/v1/records -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d '{"moduleKey":"incident","payload":{"title":"Container check","description":"Round trip through the balancer",
       "occurredAt":"2026-11-20T08:30:00Z","site":"Leeds DC","category":"near-miss","severity":"low"}}')
id=$(node -pe 'JSON.parse(process.argv[1]).id' "$created")
for instance in 1 2; do
  # Twice: round robin sends the reads to both instances.
  read=$(curl -s -f "$B/api/v1/records/$id" -H "Authorization: Bearer $KEY")
  title=$(node -pe 'JSON.parse(process.argv[1]).payload.title' "$read")
  [ "$title" = "Container check" ] || { echo "FAIL: read back \"$title\" (read $instance)" >&2; exit 1; }
done
echo "ok: record $id created and read back through the balancer"
echo "PASS: containers checked"
