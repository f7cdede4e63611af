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
(SWIFT_BACKTRACE="enable=yes,symbolicate=off,format=json,output-to=$out/crash.json" "$out/Demo" >/dev/null 2>"$out/demo-stderr.log" || true) 2>/dev/null
[ -s "$out/crash.json" ] || { echo "no crash report was written; see $out/demo-stderr.log" >&2; exit 1; }

echo "== stackline submit $out/crash.json"
id=$("$bin/stackline" submit "$out/crash.json")
echo "   report id $id"

echo "== stackline master --once --workers 2"
"$bin/stackline" master --once --workers 2

echo "== stackline report $id"
"$bin/stackline" report "$id"

echo "== stackline groups"
"$bin/stackline" groups
