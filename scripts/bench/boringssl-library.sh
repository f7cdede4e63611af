#!/usr/bin/env bash
# A large -O2 C++ library with DWARF for scripts/bench.sh: BoringSSL (CNIOBoringSSL, which
# swift-nio-ssl vendors and `swift build -c release` already compiled at -O2 with debug
# information), its objects linked into one shared library with a GNU build-id. Prints its path.
#
#   scripts/bench/boringssl-library.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: boringssl-library.sh OUTDIR}"
objects=.build/release/CNIOBoringSSL.build
[ -d "$objects" ] || { echo "boringssl-library.sh: $objects is missing: run 'swift build -c release'" >&2; exit 1; }
mkdir -p "$out"
clang="$(command -v clang++ || echo /opt/swift/usr/bin/clang++)"
find "$objects" -name '*.o' -print0 | xargs -0 "$clang" -shared -fuse-ld=lld -Wl,--build-id=sha1 -o "$out/libboringssl.so"
echo "$out/libboringssl.so"
