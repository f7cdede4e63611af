import Foundation
import ReportModel

/// A reply frame's JSON, written by hand with `JSONBytes`: JSONEncoder's generic containers were
/// 7% of a worker's CPU on 30-frame crashes (perf), for a frame of a few fields around the
/// compressed report. The bytes are JSONEncoder's with `.sortedKeys` and `.withoutEscapingSlashes`
/// (`JobReplyJSONTests`), `Data` as base64 as JSONEncoder writes it, so the master's
/// `JSONDecoder` and a remote worker's connection read it as before.
extension JobReply {
    public func encodedJSON() -> Data {
        var out = JSONBytes(reservingCapacity: 256 + (result?.compressed.count ?? 0) * 4 / 3)
        var first = true
        out.raw("{")
        if let group {
            out.key("group", first: &first)
            var inner = true
            out.raw("{")
            out.key("fingerprint", first: &inner); out.string(group.fingerprint)
            out.key("frames", first: &inner); out.array(group.frames) { out, frame in out.string(frame) }
            out.key("kind", first: &inner); out.string(group.kind.rawValue)
            out.key("rulesVersion", first: &inner); out.integer(group.rulesVersion)
            out.key("title", first: &inner); out.string(group.title)
            out.raw("}")
        }
        out.key("jobId", first: &first); out.integer(jobId)
        out.key("kind", first: &first); out.string(kind.rawValue)
        if let message { out.key("message", first: &first); out.string(message) }
        if let result { out.key("result", first: &first); Self.write(result, to: &out) }
        out.raw("}")
        return Data(out.bytes)
    }

    private static func write(_ result: CompressedResult, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        out.key("compressed", first: &first); out.string(result.compressed.base64EncodedString())
        out.key("counts", first: &first)
        var inner = true
        out.raw("{")
        out.key("frames", first: &inner); out.integer(result.counts.frames)
        out.key("missing", first: &inner); out.integer(result.counts.missing)
        out.key("symbolicated", first: &inner); out.integer(result.counts.symbolicated)
        out.raw("}")
        out.key("missing", first: &first)
        out.array(result.missing) { out, missing in
            var first = true
            out.raw("{")
            out.key("buildId", first: &first); out.string(missing.buildId)
            if let name = missing.name { out.key("name", first: &first); out.string(name) }
            out.raw("}")
        }
        out.key("size", first: &first); out.integer(result.size)
        out.key("status", first: &first); out.string(result.status.rawValue)
        out.raw("}")
    }
}
