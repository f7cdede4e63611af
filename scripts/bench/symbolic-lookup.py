"""Sentry's symbolic (PyPI) on the addresses scripts/bench.sh gives Stackline.

    python symbolic-lookup.py DEBUG_FILE ADDRESS_FILE

Builds symbolic's SymCache from the debug file, then times two loops over the same addresses:
`symbolic_symcache_lookup` called through cffi with only the result's frame count read (no
Python object per frame: symbolic's native rate as Python can reach it), and the library's own
`SymCache.lookup` (a Python object per frame), on every tenth address. Prints one line of
`key=value` pairs for bench.sh.
"""
import sys
import time

from symbolic import Archive
from symbolic._lowlevel import ffi, lib


def main() -> None:
    target, batch = sys.argv[1], sys.argv[2]
    with open(batch) as f:
        addresses = [int(line, 16) for line in f if line.strip()]

    started = time.perf_counter()
    objects = list(Archive.open(target).iter_objects())
    symcache = objects[0].make_symcache()
    built = time.perf_counter() - started

    pointer = symcache._get_objptr()
    lookup, free, address_of = lib.symbolic_symcache_lookup, lib.symbolic_lookup_result_free, ffi.addressof
    frames = answered = 0
    started = time.perf_counter()
    for address in addresses:
        result = lookup(pointer, address)
        frames += result.len
        answered += result.len > 0
        free(address_of(result))
    native = time.perf_counter() - started

    subset = addresses[::10]
    started = time.perf_counter()
    for address in subset:
        symcache.lookup(address)
    python = time.perf_counter() - started

    print(
        f"symcache_build_s={built:.3f} native_s={native:.4f} native_rate={len(addresses) / native:.0f} "
        f"python_rate={len(subset) / python:.0f} addresses={len(addresses)} answered={answered} frames={frames}"
    )


if __name__ == "__main__":
    main()
