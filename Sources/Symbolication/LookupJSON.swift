import ReportModel

/// `stackline lookup --json`'s entries, written by hand (`JSONBytes`): JSONEncoder was 48% of a
/// JSON batch (issue "Throughput"). The bytes are exactly what `JSONEncoder` with `.sortedKeys`
/// and `.withoutEscapingSlashes` wrote for `{"address": …, "frames": [ResolvedFrame]}`, which
/// `LookupJSONTests` holds it to, so scripts reading the old output see no change.
public enum LookupJSON {
    /// Appends one entry: `{"address":"0x…","frames":[…]}`.
    public static func appendEntry(address: UInt64, frames: [ResolvedFrame], to out: inout JSONBytes) {
        out.raw(#"{"address":"#)
        out.string(Address(address).description)
        out.raw(#","frames":"#)
        out.array(frames) { out, frame in appendFrame(frame, to: &out) }
        out.raw("}")
    }

    /// A frame's keys in sorted order; nil fields are left out, as synthesized `Encodable` does.
    private static func appendFrame(_ f: ResolvedFrame, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        if let column = f.column { out.key("column", first: &first); out.integer(column) }
        if let file = f.file { out.key("file", first: &first); out.string(file) }
        if let function = f.function { out.key("function", first: &first); out.string(function) }
        out.key("inlined", first: &first); out.bool(f.inlined)
        if let line = f.line { out.key("line", first: &first); out.integer(line) }
        if let offset = f.offset { out.key("offset", first: &first); out.integer(offset) }
        if let symbol = f.symbol { out.key("symbol", first: &first); out.string(symbol) }
        out.raw("}")
    }
}
