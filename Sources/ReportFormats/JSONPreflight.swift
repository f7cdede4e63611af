import Foundation
import ReportModel

/// Checks run on JSON bytes before any decoder sees them.
///
/// Foundation's `JSONDecoder` in JSON5 mode traps (a crash, not an error) on invalid UTF-8 where
/// it expects a key, and both Foundation decoders hold every value as an object and recurse per
/// nesting level. So the bytes must be valid UTF-8, and the number of values and the nesting
/// depth are bounded here, in one linear pass that allocates nothing.
public enum JSONPreflight {
    /// `maxDepth` is lifted only by readers that do not recurse per level (MetricKit's stream
    /// reader, whose call trees nest two levels per frame).
    public static func check(_ data: Data, maxDepth: Int = ReportLimits.maxJSONDepth) throws(ReportParseError) {
        if let offset = firstInvalidUTF8(in: data) { throw .invalidUTF8(offset: offset) }
        // Over the raw buffer: `Data`'s iterator was most of this pass's cost on every ingested report.
        if let error = data.withUnsafeBytes({ scan($0, maxDepth: maxDepth) }) { throw error }
    }

    private static func scan(_ data: UnsafeRawBufferPointer, maxDepth: Int) -> ReportParseError? {
        var values = 1
        var depth = 0
        var inString: UInt8 = 0
        var escaped = false
        for byte in data {
            if inString != 0 {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == inString {
                    inString = 0
                }
                continue
            }
            switch byte {
            // JSON5 allows single-quoted strings; a quote inside a comment only makes the count larger.
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                inString = byte
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                values += 1
                if depth > maxDepth {
                    return .overLimit("JSON nested deeper than \(maxDepth) levels")
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
            case UInt8(ascii: ","):
                values += 1
                if values > ReportLimits.maxJSONValues {
                    return .overLimit("more than \(ReportLimits.maxJSONValues) JSON values")
                }
            default:
                continue
            }
        }
        return nil
    }

    /// Byte offset of the first byte that is not part of well-formed UTF-8, or nil.
    static func firstInvalidUTF8(in data: Data) -> Int? {
        // The standard library's validation is the fast path; only a failure is walked again
        // scalar by scalar to find where.
        if String(validating: data, as: UTF8.self) != nil { return nil }
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = data.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count  // overflow: bytes of data in memory, counted once each
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }
}
