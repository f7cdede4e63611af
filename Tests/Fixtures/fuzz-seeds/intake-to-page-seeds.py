#!/usr/bin/env python3
"""Seeds for the `intake-to-page` fuzz target (docs/fuzzing.md): hostile numbers in every
numeric field of every report format, the inputs of issue 28's F1 and F2, and the same reports
as the server also receives them (gzip bodies, SDK batches with plain and encrypted payloads).

    Tests/Fixtures/fuzz-seeds/intake-to-page-seeds.py OUTDIR

scripts/fuzz.sh runs it into .build-fuzz/seeds/intake-to-page. The numbers: Int.max, Int.min,
-1, 2^63 (one past Int.max), 2^64-1, 1e308; huge depths and sample counts. One seed per
(format, field name, value): every occurrence of that field gets the value, so each field's
overflow is reached without the others' refusals in front of it. Deterministic (no randomness).
"""
import base64
import gzip
import json
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
INT_MAX = 9223372036854775807
HOSTILE = [INT_MAX, -INT_MAX - 1, -1, INT_MAX + 1, 2**64 - 1, 1e308]
HOSTILE_TEXT = ["9223372036854775807", "-9223372036854775808", "-1", "9223372036854775808", "18446744073709551615",
                "1e308", "99999999999999999999999999"]
HOSTILE_HEX = ["0xffffffffffffffff", "0x10000000000000000", "0x8000000000000000", "-0x1"]
# The key an encrypted SDK payload is sealed with: IntakeToPageTarget.namespaceKey (bytes 0…15).
KEY = bytes(range(16))


def fixture(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


def dumps(value):
    # Python writes 1e308 as 1e+308 and big ints exactly: both as a hostile SDK would.
    return json.dumps(value, indent=1).encode()


def numeric_keys(value, keys, hexes):
    """Names of the fields holding numbers (and of those holding hex strings) anywhere in `value`."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                keys.add(k)
            elif isinstance(v, str) and re.fullmatch(r"0x[0-9a-fA-F]+|[0-9]+", v):
                hexes.add(k)
            elif isinstance(v, list) and v and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
                keys.add(k)
            numeric_keys(v, keys, hexes)
    elif isinstance(value, list):
        for v in value:
            numeric_keys(v, keys, hexes)


def replaced(value, key, new):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == key and not isinstance(v, (dict, bool)):
                out[k] = [new] * len(v) if isinstance(v, list) else new
            else:
                out[k] = replaced(v, key, new)
        return out
    if isinstance(value, list):
        return [replaced(v, key, new) for v in value]
    return value


def json_variants(name, documents, join):
    """`documents`: the JSON values of one report (an .ips file has two: header and body)."""
    keys, hexes = set(), set()
    for doc in documents:
        numeric_keys(doc, keys, hexes)
    for key in sorted(keys):
        for n, new in enumerate(HOSTILE):
            yield f"{name}-{key}-{n}", join([replaced(d, key, new) for d in documents])
    for key in sorted(hexes):
        for n, new in enumerate(HOSTILE_HEX + HOSTILE_TEXT[:3]):
            yield f"{name}-{key}-str{n}", join([replaced(d, key, new) for d in documents])


def text_variants(name, text):
    """Decimal numbers per kind of line (its first word), then every hex number."""
    lines = text.split("\n")
    decimal = re.compile(r"(?<![0-9A-Za-z_.])[0-9]+(?![0-9A-Za-z_])")
    groups = {}
    for i, line in enumerate(lines):
        if decimal.search(line):
            word = (line.split() or [""])[0]
            word = re.sub(r"[0-9]+", "N", word)[:12]
            groups.setdefault(word, []).append(i)
    for g, (word, indices) in enumerate(sorted(groups.items())):
        for n, new in enumerate(HOSTILE_TEXT):
            out = list(lines)
            for i in indices:
                out[i] = decimal.sub(new, out[i])
            yield f"{name}-line{g}-{n}", "\n".join(out).encode()
    for n, new in enumerate(HOSTILE_HEX):
        yield f"{name}-hex-{n}", re.sub(r"0x[0-9a-fA-F]+", new, text).encode()


def kscrash_profile(samples, threads=None):
    frames = [
        {"instruction_addr": 4377604587, "symbol_addr": 4377604536, "symbol_name": "main", "object_name": "MyApp",
         "object_addr": 4377493504, "object_uuid": "FDECDBB8-12EB-328F-80E7-2BCEA7D31540"},
        {"instruction_addr": 4377604700, "symbol_addr": 4377604650, "symbol_name": "$s5MyApp4loopyyF", "object_name": "MyApp",
         "object_addr": 4377493504, "object_uuid": "FDECDBB8-12EB-328F-80E7-2BCEA7D31540"},
        {"instruction_addr": 6442950000, "symbol_addr": 6442949900, "symbol_name": "mach_msg2_trap",
         "object_name": "libsystem_kernel.dylib", "object_addr": 6442909696, "object_uuid": "BB867BE3-83C2-3D97-84EF-4661B648229C"},
    ]
    profile = {"name": "s", "id": "CA579409-1D76-4C21-99FA-531FBA84CBF2", "duration": 480961958,
               "expected_sample_interval": 10000000, "time_units": "nanoseconds", "frames": frames, "samples": samples}
    if threads is not None:
        profile["threads"] = threads
    return {
        "report": {"monitor_id": "profile", "finalized": True, "type": "standard", "process_name": "MyApp"},
        "system": {"CFBundleExecutable": "MyApp", "CFBundleShortVersionString": "3.2", "CFBundleVersion": "77",
                   "system_name": "iOS", "system_version": "18.1", "os_version": "22B83", "cpu_arch": "arm64e"},
        "crash": {"error": {"type": "profile", "is_fatal": False, "profile": profile}},
    }


def metrickit_hang(counts):
    """A MetricKit hang whose root frames carry `counts` as their sampleCount."""
    roots = [{"binaryUUID": "CDB53DDB-2337-4933-B62F-4356E6174AF0", "offsetIntoBinaryTextSegment": 123 + i,
              "sampleCount": c, "binaryName": "testBinaryName", "address": 74565 + i} for i, c in enumerate(counts)]
    return {"hangDiagnostics": [{"version": "1.0.0",
                                 "callStackTree": {"callStacks": [{"threadAttributed": True, "callStackRootFrames": roots}],
                                                   "callStackPerThread": True},
                                 "diagnosticMetaData": {"appBuildVersion": "1", "appVersion": "1.0", "hangDuration": "20 secs.",
                                                        "osVersion": "iPhone OS 14.0.1 (18A393)", "deviceType": "iPhone10,2",
                                                        "platformArchitecture": "arm64"}}],
            "timeStampBegin": "2020-10-10 19:35:24 +0000", "timeStampEnd": "2020-10-10 19:35:24 +0000"}


def sdk_lag(profile=None, samples=None):
    doc = json.loads(fixture("fuzz-seeds/sdk-lag/documented-example.json"))
    if profile is not None:
        doc["thread_profile"] = profile
    if samples is not None:
        doc["samples"] = samples
    return doc


def special():
    """Issue 28's F1 and F2 inputs, and the limits of depth and samples."""
    yield "f1-metrickit-hang-root-sample-counts-past-int-max", dumps(metrickit_hang([INT_MAX, INT_MAX]))
    yield "f1-metrickit-hang-root-sample-counts-past-int-max-strings", dumps(metrickit_hang([str(INT_MAX), "2"]))
    yield "f1-kscrash-profile-sample-count-int-max", dumps(kscrash_profile([{"frames": [2, 1, 0], "count": INT_MAX}]))
    yield "f1-kscrash-profile-thread-sample-count-int-max", dumps(kscrash_profile(
        [], threads=[{"primary": True, "samples": [{"frames": [1, 0], "count": 3}, {"frames": [0], "count": INT_MAX}]}]))
    yield "kscrash-profile", dumps(kscrash_profile([{"time_start_uptime": 654207616100583, "frames": [2, 1, 0], "count": 3},
                                                    {"time_start_uptime": 654207626100583, "frames": [1, 0]}]))
    yield "kscrash-profile-limit-samples", dumps(kscrash_profile([{"frames": [2, 1, 0], "count": 10000}]))
    yield "f2-sdk-lag-root-counts-past-int-max", dumps(sdk_lag(profile=[
        {"depth": 0, "count": INT_MAX, "costTime": 1, "methodAddress": "0x104d08100"},
        {"depth": 1, "count": INT_MAX, "costTime": 1, "methodAddress": "0x104d0824f"},
        {"depth": 0, "count": INT_MAX, "costTime": 1, "methodId": 181}]))
    yield "f2-sdk-lag-children-past-int-max", dumps(sdk_lag(profile=[
        {"depth": 0, "count": 1, "costTime": 1, "methodAddress": "0x104d08100"},
        {"depth": 1, "count": INT_MAX, "costTime": 1, "methodAddress": "0x104d0824f"},
        {"depth": 1, "count": INT_MAX, "costTime": 1, "methodId": 181}]))
    # At the limits intake allows (ReportLimits.maxProfileSamples, 2^40; costs up to 1e12 ms), so
    # the largest accepted numbers reach the flame graph: roots adding up to the limit, children
    # claiming far more than a parent of count 0, the largest cost.
    limit = 2**40
    yield "sdk-lag-root-counts-at-the-limit", dumps(sdk_lag(profile=[
        {"depth": 0, "count": limit - 2, "costTime": 1e12, "methodAddress": "0x104d08100"},
        {"depth": 1, "count": 1, "costTime": 1e12, "methodAddress": "0x104d0824f"},
        {"depth": 0, "count": 1, "costTime": 0, "methodId": 181}]))
    yield "sdk-lag-children-over-a-zero-parent-at-the-limit", dumps(sdk_lag(profile=[
        {"depth": 0, "count": 0, "costTime": 0, "methodAddress": "0x104d08100"},
        {"depth": 1, "count": limit // 2, "costTime": 1e12, "methodAddress": "0x104d0824f"},
        {"depth": 1, "count": limit // 2, "costTime": 1e12, "methodId": 181}]))
    yield "metrickit-hang-root-counts-at-the-limit", dumps(metrickit_hang([limit - 1, 1]))
    chain = [{"depth": d, "count": 1 + d, "costTime": d, "methodId": d} for d in range(4097)]
    yield "sdk-lag-profile-depth-4096", dumps(sdk_lag(profile=chain))
    yield "sdk-lag-profile-depth-4097", dumps(sdk_lag(profile=chain + [{"depth": 4097, "count": 1, "costTime": 1, "methodId": 1}]))
    yield "sdk-lag-profile-300-levels-int-max", dumps(sdk_lag(profile=[{"depth": d, "count": INT_MAX, "costTime": INT_MAX, "methodId": d} for d in range(300)]))
    deep = ["0x%x" % (0x104d08000 + i) for i in range(5000)]
    yield "sdk-lag-sample-5000-frames-deep", dumps(sdk_lag(samples=[deep, deep[1:]], profile=[]))
    yield "sdk-lag-10000-samples", dumps(sdk_lag(samples=[["0x104d0824f", "0x104d08100"]] * 10000, profile=[]))


def bases():
    """One small real report of each format (name, kind, bytes)."""
    yield "ips", "ips", fixture("wild/ips/asi.ips")
    yield "apple-crash", "text", fixture("wild/apple-crash/handcrafted.txt")
    yield "kscrash", "json", fixture("wild/kscrash/oom.json")
    yield "kscrash-profile", "json", dumps(kscrash_profile([{"time_start_uptime": 654207616100583, "frames": [2, 1, 0], "count": 3}]))
    yield "metrickit", "json", fixture("wild/metrickit/xcode-simulated-ios14.json")
    yield "metrickit-hang", "json", dumps(metrickit_hang([20, 5]))
    yield "sdk-lag", "json", fixture("fuzz-seeds/sdk-lag/documented-example.json")
    yield "swift-backtrace-json", "json", fixture("fuzz-seeds/swift-backtrace-json/segv-unsymbolicated.json")
    yield "swift-backtrace-text", "text", fixture("fuzz-seeds/swift-backtrace-text/segv-unsymbolicated.txt")
    yield "android-tombstone", "text", fixture("fuzz-seeds/android-tombstone/tombstone.txt")
    yield "sanitizer", "text", fixture("wild/asan/gcc-heap-use-after-free.txt")


def encrypt(data):
    """AES-128-CBC with PKCS#7 padding and a fixed IV, as the SDK seals a payload (needs `cryptography`)."""
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:
        return None
    iv = bytes(16)
    pad = 16 - len(data) % 16
    encryptor = Cipher(algorithms.AES(KEY), modes.CBC(iv)).encryptor()
    return iv + encryptor.update(data + bytes([pad]) * pad) + encryptor.finalize()


def batch(payloads):
    """An SDK batch: one record per (monitor type, payload bytes, encrypted)."""
    records = []
    for n, (monitor, data, encrypted) in enumerate(payloads):
        sealed = gzip.compress(data, mtime=0)
        if encrypted:
            sealed = encrypt(sealed)
            if sealed is None:
                continue
        records.append({"report_id": f"r{n}", "monitor_type": monitor, "namespace": "demo", "created_time": 1714557600000,
                        "meta": {"app_name": "Demo", "app_version": "2.1"}, "payload": base64.b64encode(sealed).decode(),
                        "encrypted": encrypted})
    return json.dumps({"records": records}).encode()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    seeds = dict(special())
    for name, kind, data in bases():
        seeds[name] = data
        if kind == "text":
            seeds.update(text_variants(name, data.decode("utf-8", "replace")))
        elif kind == "ips":
            header, body = data.split(b"\n", 1)
            seeds.update(json_variants(name, [json.loads(header), json.loads(body)],
                                       lambda docs: json.dumps(docs[0]).encode() + b"\n" + dumps(docs[1])))
        else:
            seeds.update(json_variants(name, [json.loads(data)], lambda docs: dumps(docs[0])))
    # The server's other doors: a gzip body, and SDK batches (crash and hang records, plain and encrypted).
    seeds["gzip-body-ips"] = gzip.compress(fixture("wild/ips/asi.ips"), mtime=0)
    seeds["gzip-body-f2-sdk-lag"] = gzip.compress(seeds["f2-sdk-lag-root-counts-past-int-max"], mtime=0)
    seeds["sdk-batch"] = batch([("appCrash", fixture("wild/kscrash/oom.json"), False),
                                ("appLag", fixture("fuzz-seeds/sdk-lag/documented-example.json"), False),
                                ("appLag", fixture("fuzz-seeds/sdk-lag/documented-example.json"), True),
                                ("memory", b"{}", False)])
    seeds["sdk-batch-f1-f2"] = batch([("appLag", seeds["f1-metrickit-hang-root-sample-counts-past-int-max"], False),
                                      ("appLag", seeds["f1-kscrash-profile-sample-count-int-max"], False),
                                      ("appLag", seeds["f2-sdk-lag-root-counts-past-int-max"], True)])
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"{len(seeds)} seeds in {out}")


if __name__ == "__main__":
    main()
