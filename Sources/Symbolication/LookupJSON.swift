import ReportModel

/// `stackline lookup --json`'s entries, written by hand: JSONEncoder was 48% of a JSON batch
/// (issue "Throughput"). The bytes are exactly what `JSONEncoder` with `.sortedKeys` and
/// `.withoutEscapingSlashes` wrote for `{"address": …, "frames": [ResolvedFrame]}`, which
/// `LookupJSONTests` holds it to, so scripts reading the old output see no change.
public enum LookupJSON {
    /// Appends one entry: `{"address":"0x…","frames":[…]}`.
    public static func appendEntry(address: UInt64, frames: [ResolvedFrame], to out: inout [UInt8]) {
        out.append(contentsOf: #"{"address":""#.utf8)
        out.append(contentsOf: Address(address).description.utf8)
        out.append(contentsOf: #"","frames":["#.utf8)
        for (i, frame) in frames.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            appendFrame(frame, to: &out)
        }
        out.append(contentsOf: "]}".utf8)
    }

    /// A frame's keys in sorted order; nil fields are left out, as synthesized `Encodable` does.
    private static func appendFrame(_ f: ResolvedFrame, to out: inout [UInt8]) {
        var first = true
        func key(_ name: StaticString) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out.append(contentsOf: #"":"#.utf8)
        }
        out.append(UInt8(ascii: "{"))
        if let column = f.column { key("column"); appendInteger(column, to: &out) }
        if let file = f.file { key("file"); appendString(file, to: &out) }
        if let function = f.function { key("function"); appendString(function, to: &out) }
        key("inlined"); out.append(contentsOf: (f.inlined ? "true" : "false").utf8)
        if let line = f.line { key("line"); appendInteger(line, to: &out) }
        if let offset = f.offset { key("offset"); appendInteger(offset, to: &out) }
        if let symbol = f.symbol { key("symbol"); appendString(symbol, to: &out) }
        out.append(UInt8(ascii: "}"))
    }

    private static func appendInteger(_ value: some BinaryInteger, to out: inout [UInt8]) {
        out.append(contentsOf: String(value).utf8)
    }

    /// A JSON string as JSONEncoder escapes it: quote, backslash and controls below 0x20 (the
    /// short forms where JSON has them), everything else as UTF-8, slashes unescaped.
    static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case 0x08: out.append(contentsOf: #"\b"#.utf8)
            case 0x0c: out.append(contentsOf: #"\f"#.utf8)
            case 0x0a: out.append(contentsOf: #"\n"#.utf8)
            case 0x0d: out.append(contentsOf: #"\r"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(contentsOf: HexText.lowercase(CollectionOfOne(byte)).utf8)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
