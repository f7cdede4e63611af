#!/usr/bin/env bash
# Makes OUT: BINARY stripped, with MiniDebugInfo added as Fedora's find-debuginfo.sh adds it
# (add_minidebug, step for step: the T/t/D symbols .dynsym lacks, xz-compressed, as .gnu_debugdata).
#
#   Tests/Fixtures/add-minidebuginfo.sh BINARY OUT
#
# Tools: nm, objcopy, strip, xz.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 BINARY OUT" >&2
  exit 64
fi
in="$1"; out="$2"
t="$(mktemp -d)"
trap 'rm -rf "$t"' EXIT
nm -D "$in" --format=posix --defined-only | awk '{ print $1 }' | sort > "$t/dynsyms"
nm "$in" --format=posix --defined-only | awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort > "$t/funcsyms"
comm -13 "$t/dynsyms" "$t/funcsyms" > "$t/keep_symbols"
objcopy --only-keep-debug "$in" "$t/debug"
objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols="$t/keep_symbols" "$t/debug" "$t/mini_debuginfo"
strip --strip-all -R .comment -o "$out" "$in"
xz "$t/mini_debuginfo"
objcopy --add-section .gnu_debugdata="$t/mini_debuginfo.xz" "$out"
