#!/usr/bin/env bash
# `make test-api`: schemathesis (PyPI, installed into a virtualenv under .build/ by this script)
# against the OpenAPI document a real `stackline serve` serves, with a valid admin token.
# Fails on any 5xx and on any response that breaks the document (status, content type,
# headers, body schema), and when an endpoint answers without its token.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
MAX_EXAMPLES=${API_MAX_EXAMPLES:-40}
# Operations of docs/openapi.yaml served by branches of issue 13 not merged here yet
# (serve-sdk: ingestBatch sdkConfig). Remove each as it lands.
PENDING_OPERATIONS=${PENDING_OPERATIONS-"ingestBatch sdkConfig"}

venv=.build/schemathesis-venv
if [ ! -x "$venv/bin/schemathesis" ] || ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  echo "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

swift build --product stackline >/dev/null
swift build --product stackline-worker >/dev/null
bin=.build/debug
work=$(mktemp -d "${TMPDIR:-/tmp}/stackline-api.XXXXXX")
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export STACKLINE_DB="$work/db.sqlite" STACKLINE_SYMBOLS="$work/symbols"
mkdir -p "$STACKLINE_SYMBOLS"

token=$("$bin/stackline" tokens create --scope admin --name schemathesis 2>/dev/null)
# Some data, so the queries answer with real documents: a report, symbolicated and grouped.
"$bin/stackline" submit Tests/Fixtures/wild/ips/multithread-test.ips >/dev/null
"$bin/stackline" serve --listen 127.0.0.1:0 --workers 1 --ingest-rate 0 >"$work/serve.log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 1 200); do
  port=$(grep -o 'address=127\.0\.0\.1:[0-9]*' "$work/serve.log" | head -1 | cut -d: -f2 || true)
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "stackline serve did not start"; cat "$work/serve.log"; exit 1; }
base="http://127.0.0.1:$port"

# The document under test is the one the server serves.
curl -sSf -H "Authorization: Bearer $token" "$base/api/v1/openapi.yaml" -o "$work/openapi.yaml"
cmp -s "$work/openapi.yaml" docs/openapi.yaml || { echo "served document differs from docs/openapi.yaml"; exit 1; }

excludes=()
for op in $PENDING_OPERATIONS; do excludes+=(--exclude-operation-id "$op"); done
status=0
"$venv/bin/schemathesis" run "$work/openapi.yaml" --url "$base" \
  -H "Authorization: Bearer $token" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,ignored_auth \
  --max-examples "$MAX_EXAMPLES" --seed 1 --request-timeout 60 \
  "${excludes[@]}" || status=$?
if [ $status -ne 0 ]; then
  echo "--- last lines of the server log"
  tail -40 "$work/serve.log"
fi
exit $status
