#!/usr/bin/env bash
# Parse rate per report format, in MB/s, on large reports shaped like real ones: the wild
# samples under Tests/Fixtures/wild and the shapes of real tombstones, logcat dumps and Swift
# backtraces, grown to several MB by repeating their threads (within docs/formats.md's limits).
#
#   scripts/bench-parse.sh        # assumes .build/release/stackline (make bench builds it)
#
# Each rate is the report's size over `stackline parse --summary` time, best of 3, minus the
# time of the same command on the format's smallest report (process start, detection). The aim
# for every text format is >= 50 MB/s (issue 10). No thresholds: it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
STACKLINE="${STACKLINE:-$root/.build/release/stackline}"
[ -x "$STACKLINE" ] || { echo "bench-parse.sh: $STACKLINE is missing: run 'swift build -c release'" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/stackline-bench-parse.XXXXXX")"
trap 'rm -rf "$work"' EXIT

python3 - "$root" "$work" <<'EOF'
import json, sys
root, out = sys.argv[1], sys.argv[2]
wild = root + "/Tests/Fixtures/wild"

# Apple .crash: the XCDYouTubeKit sample's thread blocks repeated before its Binary Images.
text = open(wild + "/apple-crash/XCDYouTubeKit-54.txt", encoding="utf-8").read()
head, images = text.split("\nBinary Images:", 1)
first = head.index("\nThread 0")
preamble, threads = head[:first], head[first:]
open(out + "/small.crash", "w").write(text)
open(out + "/large.crash", "w").write(preamble + threads * 500 + "\nBinary Images:" + images)

# Android tombstone: 100 threads x 40 frames, the shape debuggerd writes; logcat adds its prefix.
def tombstone(threads):
    lines = ["*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***",
             "Build fingerprint: 'google/sdk_gphone64_x86_64/emu64x:14/UE1A/1:userdebug/dev-keys'",
             "ABI: 'arm64'", "Timestamp: 2024-11-21 10:00:00.123456789+0000",
             "pid: 4242, tid: 4242, name: main  >>> com.example.app <<<",
             "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000008"]
    for t in range(threads):
        if t:
            lines += ["--- --- --- --- --- --- --- --- --- --- --- --- --- --- --- ---",
                      "pid: 4242, tid: %d, name: worker-%d  >>> com.example.app <<<" % (4242 + t, t)]
        lines += ["", "backtrace:"]
        for f in range(40):
            lib = "/data/app/~~x==/com.example.app-1/lib/arm64/libnative%d.so" % (f % 9)
            lines.append("      #%02d pc %016x  %s (Java_com_example_native_%d+%d) (BuildId: %040x)" % (f, 0x1000 + f * 52, lib, f, f * 4, f % 9 + 1))
        lines.append("")
    return "\n".join(lines) + "\n"
open(out + "/small.tombstone", "w").write(tombstone(1))
open(out + "/large.tombstone", "w").write(tombstone(1500))
prefix = "11-21 10:00:00.123  4242  4242 F DEBUG   : "
for name, n in (("small", 1), ("large", 1200)):
    open(out + "/%s.logcat" % name, "w").write("".join(prefix + l + "\n" for l in tombstone(n).splitlines()))

# Swift backtracer text: the runtime's layout, symbolicated frames with inline levels.
def swift(threads):
    lines = ["", "💣 Program crashed: Bad pointer dereference at 0x0000000000000000", "",
             "*** Program crashed: Bad pointer dereference at 0x0000000000000000 ***", "",
             "Platform: x86_64 Linux (Debian GNU/Linux 12 (bookworm))", ""]
    for t in range(threads):
        lines += ['Thread %d%s%s:' % (t, ' "main"' if t == 0 else "", " crashed" if t == 0 else ""), ""]
        for f in range(40):
            lines.append("%d%s 0x%016x in Demo.level%d(_:) + %d at /src/Sources/Demo/main.swift:%d:%d" % (f, "" if f == 0 else " [ra]", 0x55d0c2a4f139 + f * 40, f, f * 3, f + 10, 5))
            if f % 5 == 0:
                lines.append("%d [inlined] 0x%016x in Demo.helper%d() at /src/Sources/Demo/main.swift:%d:%d" % (f, 0x55d0c2a4f139 + f * 40, f, f + 3, 9))
        lines.append("")
    lines += ["", "Images (12 omitted):", ""]
    lines += ["0x000055d0c2a4e000–0x000055d0c2a5f000 %040x Demo /src/.build/debug/Demo" % 1,
              "0x00007f1c2a400000–0x00007f1c2a5f0000 %040x libswiftCore.so /usr/lib/swift/linux/libswiftCore.so" % 2, "",
              "Backtrace took 0.01s", ""]
    return "\n".join(lines)
open(out + "/small.swifttext", "w").write(swift(1))
open(out + "/large.swifttext", "w").write(swift(2000))

# JSON formats, for comparison: the KSCrash and .ips samples with their threads repeated.
ks = json.load(open(wild + "/kscrash/raw.json"))
open(out + "/small.kscrash", "w").write(json.dumps(ks))
ks["crash"]["threads"] = ks["crash"]["threads"] * 60
open(out + "/large.kscrash", "w").write(json.dumps(ks))
header, body = open(wild + "/ips/multithread-test.ips").read().split("\n", 1)
open(out + "/small.ips", "w").write(header + "\n" + body)
b = json.loads(body)
b["threads"] = b["threads"] * 400
open(out + "/large.ips", "w").write(header + "\n" + json.dumps(b))

# Swift runtime JSON: the symbolicated demo crash, its thread grown to 30 frames (the shape of
# the crashes workers re-parse), the thread repeated.
sj = json.load(open(root + "/Tests/Fixtures/fuzz-seeds/swift-backtrace-json/index-symbolicated.json"))
open(out + "/small.swiftjson", "w").write(json.dumps(sj))
frames = sj["threads"][0]["frames"]
frames[-1:-1] = [frames[-2]] * (30 - len(frames))
sj["threads"] = sj["threads"] * 1500
open(out + "/large.swiftjson", "w").write(json.dumps(sj))
EOF

best() {  # best of 3 wall-clock seconds for: stackline parse --summary FILE
  local best=""
  for _ in 1 2 3; do
    local t0 t1
    t0=$(date +%s.%N)
    "$STACKLINE" parse --summary "$1" > "$work/out" 2> "$work/err" || { cat "$work/err" >&2; exit 1; }
    t1=$(date +%s.%N)
    best=$(awk -v a="$t0" -v b="$t1" -v c="$best" 'BEGIN { d = b - a; print (c == "" || d < c) ? d : c }')
  done
  echo "$best"
}

printf "%-22s %10s %10s %12s  %s\n" "format" "size" "parse" "MB/s" "parsed"
for kind in crash:apple-crash tombstone:android-tombstone logcat:android-logcat swifttext:swift-backtrace-text \
    kscrash:kscrash ips:apple-ips swiftjson:swift-backtrace-json; do
  ext=${kind%%:*}; name=${kind#*:}
  small=$(best "$work/small.$ext")
  large=$(best "$work/large.$ext")
  size=$(stat -c %s "$work/large.$ext")
  summary=$(cat "$work/out")
  awk -v n="$name" -v s="$size" -v l="$large" -v b="$small" -v sum="$summary" 'BEGIN {
    d = l - b; if (d <= 0) d = l
    printf "%-22s %8.1f MB %8.3f s %12.1f  %s\n", n, s / 1e6, d, s / 1e6 / d, sum }'
done
