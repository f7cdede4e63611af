import Foundation
import JSONFormat
import ReportModel
import Symbolication
import Testing

/// `lookup --json` is written by hand (`LookupJSON`); JSONEncoder with the options the command
/// used before is the oracle for every byte, and JSONSerialization must read what it wrote.
@Suite struct LookupJSONTests {
    /// The shape `lookup --json` encoded with JSONEncoder before it was written by hand.
    struct Entry: Encodable {
        let address: String
        let frames: [ResolvedFrame]
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    func same(_ address: UInt64, _ frames: [ResolvedFrame], sourceLocation: SourceLocation = #_sourceLocation) throws {
        var out = JSONBytes()
        LookupJSON.appendEntry(address: address, frames: frames, to: &out)
        let mine = out.bytes
        let oracle = try Self.encoder.encode(Entry(address: Address(address).description, frames: frames))
        #expect(Data(mine) == oracle, "\(String(decoding: mine, as: UTF8.self))\n\(String(decoding: oracle, as: UTF8.self))", sourceLocation: sourceLocation)
        #expect(try JSONSerialization.jsonObject(with: Data(mine)) is [String: Any], sourceLocation: sourceLocation)
    }

    @Test func everyFieldAndEveryEscapeMatchJSONEncoder() throws {
        // Every byte a String can hold below 0x80, plus multi-byte scalars, slashes and quotes.
        let ascii = String(decoding: (0..<0x80).map { UInt8($0) }, as: UTF8.self)
        let names = ["main", "", ascii, "a/b\\c\"d", "Ünïcödé 名前 🧨", "\u{2028}\u{2029}\u{7f}", "-[Cart checkout]", "std::vector<int>::at(unsigned long) const"]
        for name in names {
            try same(0x1234, [
                ResolvedFrame(function: name, symbol: name, offset: 12, file: "/src/\(name).c", line: 7, column: 3, inlined: true, noLineInfo: false),
                ResolvedFrame(function: name, symbol: nil, offset: nil, file: nil, line: nil, column: nil, inlined: false, noLineInfo: true),
            ])
        }
        try same(0, [])
        try same(UInt64.max, [ResolvedFrame(function: nil, symbol: "s", offset: UInt64.max, file: "f", line: Int.max, column: 0, inlined: false, noLineInfo: false)])
    }

    @Test func randomFramesMatchJSONEncoder() throws {
        var generator = SystemRandomNumberGenerator()
        func text() -> String? {
            if Bool.random(using: &generator) { return nil }
            let scalars = (0..<Int.random(in: 0...12, using: &generator)).compactMap { _ in
                Unicode.Scalar(UInt32.random(in: 0...0x1F000, using: &generator))
            }
            return String(String.UnicodeScalarView(scalars))
        }
        for _ in 0..<500 {
            let frames = (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                ResolvedFrame(
                    function: text(), symbol: text(), offset: Bool.random() ? nil : UInt64.random(in: 0...UInt64.max),
                    file: text(), line: Bool.random() ? nil : Int.random(in: 0...1_000_000), column: Bool.random() ? nil : Int.random(in: 0...500),
                    inlined: Bool.random(), noLineInfo: Bool.random())
            }
            try same(UInt64.random(in: 0...UInt64.max), frames)
        }
    }
}
