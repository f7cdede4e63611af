import Demangling
import JSONFormat
import ReportModel
import SymbolCache

/// `stackline lookup --json`'s entries, written by hand (`JSONBytes`): JSONEncoder was about
/// half of a JSON batch (`make bench`, the lookup part's `--json` rate). The bytes are exactly what `JSONEncoder` with `.sortedKeys`
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

    /// The same entry for `address`, looked up at `lookup` (the address itself, or one before a
    /// return address) in a symcache, written from its mapped bytes: no `String`, no
    /// `ResolvedFrame` per frame. The fields follow `AddressResolver.resolve` exactly.
    public static func appendEntry(
        address: UInt64, lookup: UInt64, cache: SymbolCache, style: Demangler.Style, to out: inout JSONBytes
    ) {
        out.raw(#"{"address":"#)
        out.string(Address(address).description)
        out.raw(#","frames":["#)
        cache.visitFrames(at: lookup) { f in
            if f.index > 0 { out.bytes.append(UInt8(ascii: ",")) }
            var first = true
            out.raw("{")
            // Line and column are left out only where the resolver makes them nil: no file and 0.
            if f.file != nil || f.column != 0 { out.key("column", first: &first); out.integer(f.column) }
            if let file = f.file { out.key("file", first: &first); out.string(utf8: file.bytes) }
            if let function = f.name(style) { out.key("function", first: &first); out.string(utf8: function.bytes) }
            out.key("inlined", first: &first); out.bool(!f.isOutermost)
            if f.file != nil || f.line != 0 { out.key("line", first: &first); out.integer(f.line) }
            if f.isOutermost, let start = f.functionStart {
                out.key("offset", first: &first); out.integer(lookup &- start)
            }
            if let symbol = f.symbol { out.key("symbol", first: &first); out.string(utf8: symbol.bytes) }
            out.raw("}")
        }
        out.raw("]}")
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
