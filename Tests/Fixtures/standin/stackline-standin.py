#!/usr/bin/env python3
# TEMPORARY stand-in for `stackline symbols add` / `stackline lookup`, used by the
# AccuracyTests harness and scripts/bench.sh only until the real engine lands on main.
# It implements the CLI contract with readelf + eu-addr2line so the plumbing can be
# exercised end to end. Delete it (and the switches that select it: STACKLINE_STANDIN
# in Tests/TestSupport/Stackline.swift and scripts/bench.sh) once `stackline lookup` exists.
import json, os, re, shutil, subprocess, sys

def die(msg):
    print(f"stackline: error: {msg}", file=sys.stderr)
    sys.exit(1)

def build_id(path):
    with open(path, "rb") as f:
        head = f.read(4)
    if head != b"\x7fELF":
        die(f"{path}: not an ELF file")
    import struct
    with open(path, "rb") as f:
        ident = f.read(64)
    size = os.path.getsize(path)
    if len(ident) < 64 or ident[4] != 2:
        die(f"{path}: malformed or non-64-bit ELF file")
    shoff, = struct.unpack_from("<Q", ident, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", ident, 0x3A)
    if shoff + shentsize * shnum > size:
        die(f"{path}: truncated ELF file")
    r = subprocess.run(["readelf", "-nW", path], capture_output=True, text=True)
    m = re.search(r"Build ID:\s*([0-9a-f]+)", r.stdout)
    if not m:
        die(f"{path}: no GNU build-id")
    return m.group(1)

def has_dwarf(path):
    r = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True)
    return ".debug_info" in r.stdout

def store_root(args):
    if "--symbols" in args:
        i = args.index("--symbols")
        root = args[i + 1]
        del args[i:i + 2]
        return root
    return os.environ.get("STACKLINE_SYMBOLS", "symbols")

def symbols_add(args):
    root = store_root(args)
    files = []
    for a in args:
        if os.path.isdir(a):
            for d, _, names in os.walk(a):
                for n in sorted(names):
                    with open(os.path.join(d, n), "rb") as fh:
                        if fh.read(4) == b"\x7fELF":
                            files.append(os.path.join(d, n))
        elif os.path.isfile(a):
            files.append(a)
        else:
            die(f"{a}: no such file")
    plan = [(f, build_id(f), has_dwarf(f)) for f in files]   # validate everything first
    for f, bid, dwarf in plan:
        dest = os.path.join(root, ".build-id", bid[:2], bid[2:] + (".debug" if dwarf else ""))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(f, dest)
        print(f"added {bid} {f}")

def first_load_vaddr(path):
    r = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            return int(parts[2], 16) & ~0xfff
    return 0

def lookup(args):
    root = store_root(args)
    bid, base, as_json, addrs = None, None, False, []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--build-id":
            bid = args[i + 1].lower(); i += 2; continue
        if a == "--load-address":
            base = args[i + 1]; i += 2; continue
        if a == "--json":
            as_json = True; i += 1; continue
        addrs.append(a); i += 1
    if not bid:
        die("missing --build-id")
    path = os.path.join(root, ".build-id", bid[:2], bid[2:] + ".debug")
    if not os.path.isfile(path):
        die(f"no debug file for build-id {bid} in {root}")
    if not addrs:
        addrs = [l.strip() for l in sys.stdin if l.strip()]
    values = []
    for a in addrs:
        if not re.fullmatch(r"(0x)?[0-9a-fA-F]+", a):
            die(f"invalid address '{a}'")
        values.append(int(a, 16))
    bias = 0
    if base is not None:
        if not re.fullmatch(r"(0x)?[0-9a-fA-F]+", base):
            die(f"invalid load address '{base}'")
        bias = int(base, 16) - first_load_vaddr(path)
    file_addrs = [v - bias for v in values]
    def run(demangle):
        cmd = ["eu-addr2line", "-a", "-i", "-f", "-e", path] + (["-C"] if demangle else [])
        r = subprocess.run(cmd, input="".join(f"0x{v:x}\n" for v in file_addrs), capture_output=True, text=True)
        out, cur = [], None
        lines = r.stdout.splitlines()
        k = 0
        while k < len(lines):
            if re.fullmatch(r"0x[0-9a-f]+", lines[k]):
                cur = []; out.append(cur); k += 1; continue
            fn, loc = lines[k], lines[k + 1]; k += 2
            fn = fn.split(" inlined at ")[0]
            m = re.fullmatch(r"(.*?):(\d+)(?::(\d+))?", loc)
            file, line, col = (m.group(1), int(m.group(2)), int(m.group(3) or 0)) if m else (loc, 0, 0)
            cur.append({"function": None if fn == "??" else fn, "file": None if file == "??" else file,
                        "line": line, "column": col})
        return out
    dem, raw = run(True), run(False)
    results = []
    for v, d, r in zip(values, dem, raw):
        frames = []
        for j, (fd, fr) in enumerate(zip(d, r)):
            frames.append({"function": fd["function"], "symbol": fr["function"], "offset": None,
                           "file": fd["file"], "line": fd["line"], "column": fd["column"],
                           "inlined": j < len(d) - 1})
        results.append({"address": f"0x{v:x}", "frames": frames})
    if as_json:
        json.dump(results, sys.stdout)
        print()
    else:
        for r in results:
            for f in r["frames"]:
                print(f["function"] or "??")
                print(f"{f['file'] or '??'}:{f['line']}:{f['column']}")
            print()

def main():
    a = sys.argv[1:]
    if a[:2] == ["symbols", "add"]:
        symbols_add(a[2:])
    elif a[:1] == ["lookup"]:
        lookup(a[1:])
    else:
        die("stand-in supports only 'symbols add' and 'lookup'")

main()
