#!/usr/bin/env bash
# `make run`: symbolicate a real Swift crash end to end.
# Compiles the bundled demo program (Tests/Fixtures/demo/Demo.swift) with -g, puts its debug
# file and the Swift runtime libraries in a store, crashes it under the Swift runtime backtracer
# (JSON, unsymbolicated), submits the report, runs the master until the queue is empty and
# prints the symbolicated report. Everything it writes goes to demo-out/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."

out=demo-out
rm -rf "$out"
mkdir -p "$out/symbols" "$out/data"
export STACKLINE_DB="$out/data/stackline.sqlite"
export STACKLINE_SYMBOLS="$out/symbols"

swift build
bin=$(swift build --show-bin-path)

echo "== compiling the demo program with -g"
swiftc -g -Onone Tests/Fixtures/demo/Demo.swift -o "$out/Demo"

# The runtime libraries the demo links against: libswiftCore.so and friends.
runtime_dir=$(swiftc -print-target-info | sed -n '/"runtimeLibraryPaths"/,/]/p' | grep -o '"/[^"]*"' | head -1 | tr -d '"')
[ -d "$runtime_dir" ] || runtime_dir="$(dirname "$(command -v swift)")/../lib/swift/linux"
debug_files=("$out/Demo" "$runtime_dir/libswiftCore.so" "$runtime_dir/libswiftSwiftOnoneSupport.so")

echo "== adding debug files to $STACKLINE_SYMBOLS"
"$bin/stackline" symbols add "${debug_files[@]}"

echo "== crashing the demo under the Swift runtime backtracer"
# The subshell keeps bash's own "Illegal instruction" job message out of the demo output.
# The program's whole stderr is the report: the runtime's JSON crash report, and before it the
# `Fatal error:` line it printed, which becomes the report's message and leads the group title.
(SWIFT_BACKTRACE="enable=yes,symbolicate=off,format=json" "$out/Demo" >/dev/null 2>"$out/crash.json" || true) 2>/dev/null
grep -q '"crashReport"' "$out/crash.json" || { echo "no crash report was written; see $out/crash.json" >&2; exit 1; }

echo "== stackline submit $out/crash.json"
id=$("$bin/stackline" submit "$out/crash.json")
echo "   report id $id"

echo "== stackline master --once --workers 2"
"$bin/stackline" master --once --workers 2

echo "== stackline report $id"
"$bin/stackline" report "$id"

echo "== stackline groups"
"$bin/stackline" groups

echo "== stackline serve: the same over HTTP (curl)"
token=$("$bin/stackline" tokens create --scope admin --name demo 2>/dev/null)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin/stackline" serve --listen "127.0.0.1:$port" --workers 1 --log-level warning 2>"$out/serve.log" &
serve_pid=$!
trap 'kill $serve_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
# A second crash of the same program: a new report, same group.
(SWIFT_BACKTRACE="enable=yes,symbolicate=off,format=json" "$out/Demo" >/dev/null 2>"$out/crash2.json" || true) 2>/dev/null
echo "   curl -H 'Content-Encoding: gzip' --data-binary @crash2.json.gz http://127.0.0.1:$port/api/v1/reports"
gzip -c "$out/crash2.json" | curl -s -H "Authorization: Bearer $token" -H "Content-Encoding: gzip" \
  --data-binary @- "http://127.0.0.1:$port/api/v1/reports"
echo
for _ in $(seq 1 100); do
  [ "$(curl -s -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/v1/status" | grep -c '"queued" : 0\|"running" : 0')" = 2 ] && break
  sleep 0.1
done
echo "   curl http://127.0.0.1:$port/api/v1/groups"
curl -s -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/v1/groups"
echo
# The web view: the same groups as a page (a browser signs in at /login with a read token).
echo "   curl http://127.0.0.1:$port/   (the web view's groups page, saved as $out/groups.html)"
curl -s -H "Authorization: Bearer $token" "http://127.0.0.1:$port/" >"$out/groups.html"
grep -o 'data-k="group-title:[^"]*">[^<]*' "$out/groups.html" | sed 's/.*">/   group: /'
kill -TERM $serve_pid && wait $serve_pid || true
