#!/usr/bin/env bash
# `make test`: the Swift suites, schemathesis against a real `serve` (scripts/test-api.sh) and
# every fuzz target's seeds through the debug build's replay harness (scripts/fuzz.sh --replay).
# The last two run beside the Swift suites rather than after them: those leave about a quarter
# of the 2 cores idle while they wait on the servers, clusters and browsers they start, and the
# other two need nothing the suites change. Each one's output is printed whole when all have
# ended (the Swift suites' as they run), and the exit status is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
swift="${SWIFT:-swift}"

"$swift" build --build-tests || exit $?
# `swift test` holds SwiftPM's lock on .build while it runs, so the two scripts beside it use
# the binaries just built instead of asking SwiftPM to check them.
export STACKLINE_PREBUILT=1
logs=.build/test-logs
rm -rf "$logs" && mkdir -p "$logs"
scripts/test-api.sh >"$logs/test-api.log" 2>&1 &
api=$!
scripts/fuzz.sh --replay >"$logs/fuzz-replay.log" 2>&1 &
fuzz=$!
"$swift" test --skip-build
tests=$?
wait "$api"
api_status=$?
wait "$fuzz"
fuzz_status=$?

echo
echo "== schemathesis (scripts/test-api.sh) =="
cat "$logs/test-api.log"
echo
echo "== fuzz seeds (scripts/fuzz.sh --replay) =="
cat "$logs/fuzz-replay.log"
echo
failed=0
for part in "swift test:$tests" "schemathesis:$api_status" "fuzz seeds:$fuzz_status"; do
  status=${part##*:}
  [ "$status" -eq 0 ] && echo "${part%:*}: passed" || { echo "${part%:*}: FAILED (exit $status)"; failed=1; }
done
exit $failed
