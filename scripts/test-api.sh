#!/usr/bin/env bash
# `make test-api`: schemathesis (PyPI, installed into a virtualenv under .build/ by this script)
# against the OpenAPI document a real `stackline serve` serves, with a valid admin token.
# Fails on any 5xx and on any response that breaks the document (status, content type,
# headers, body schema), and when an endpoint answers without its token.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
MAX_EXAMPLES=${API_MAX_EXAMPLES:-40}
# Operation ids to leave out (none: every operation of docs/openapi.yaml is served and tested).
PENDING_OPERATIONS=${PENDING_OPERATIONS-""}

venv=.build/schemathesis-venv
if [ ! -x "$venv/bin/schemathesis" ] || ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  echo "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

swift build --product stackline >/dev/null
swift build --product stackline-worker >/dev/null
bin=.build/debug
source scripts/serve-scratch.sh
serve_scratch api

token=$("$bin/stackline" tokens create --scope admin --name schemathesis 2>/dev/null)
# Some data, so the queries answer with real documents: a report, symbolicated and grouped.
"$bin/stackline" submit Tests/Fixtures/wild/ips/multithread-test.ips >/dev/null
serve_start "$bin/stackline" --workers 1 --ingest-rate 0

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
