import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// The Swift runtime's JSON crash reports are read by the hand-written strict JSON cursor when
/// they can be, and by JSONDecoder otherwise, as `.ips` files are (`IPSFastPathTests`).
/// JSONDecoder is the oracle: whatever the cursor reads, JSONDecoder must read to the same values
/// (`compareDecoders`), and `parse` must give what `parseWithJSONDecoder` gives, warnings and
/// errors included. On the real reports the cursor must be the one reading (else workers and
/// ingest are back to the slow path without anyone noticing).
@Suite struct SwiftBacktraceFastPathTests {
    /// Every Swift runtime JSON report in the repository: the fuzz seeds (runtime output of the
    /// demo program, written to a file) and the Ledger crash as captured stderr.
    static let samples = [
        "fuzz-seeds/swift-backtrace-json/index-symbolicated.json",
        "fuzz-seeds/swift-backtrace-json/index-unsymbolicated.json",
        "fuzz-seeds/swift-backtrace-json/segv-unsymbolicated.json",
        "wild/swift-backtrace/Ledger-unwrap.stderr.json.txt",
    ]

    static func sample(_ name: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: TestPaths.packageRoot + "/Tests/Fixtures/" + name))
    }

    @Test(arguments: samples)
    func realReportsTakeTheFastPathAndReadAsJSONDecoderReadsThem(_ name: String) throws {
        let data = try Self.sample(name)
        #expect(SwiftBacktraceJSONFormat.compareDecoders(data) == .fastPath)
        try expectSameParse(data, name)
    }

    /// Reports this machine's runtime writes now, symbolicated and not, to a file and to stderr.
    @Test func freshRuntimeReportsTakeTheFastPath() throws {
        let reports = [
            ("index, symbolicate=off", try CrashFixture.shared.report(symbolicate: "off")),
            ("index, symbolicate=full", try CrashFixture.shared.report(symbolicate: "full")),
            ("segv, symbolicate=off", try CrashFixture.shared.report(symbolicate: "off", mode: "segv")),
            ("Ledger unwrap on stderr", try SwiftCrashProgram.shared.stderr("unwrap", format: "json")),
        ]
        for (name, data) in reports {
            #expect(SwiftBacktraceJSONFormat.compareDecoders(data) == .fastPath, "\(name)")
            try expectSameParse(data, name)
        }
    }

    /// Edits of the real samples, each a shape the cursor must read alike or leave alone.
    /// `expected` is nil where either outcome is acceptable, as long as nothing disagrees.
    typealias Edit = (name: String, expected: JSONDecoderAgreement?, edit: @Sendable (String) -> String)

    static var edits: [Edit] { shapeEdits + addressEdits }

    static let shapeEdits: [Edit] = [
        ("minified", .fastPath, { minify($0) }),
        ("escapes in a thread name", .fastPath, { setFirst("name", in: "threads", $0, #""tab\tquote\"slash\/é\u00e9\u0001\n""#) }),
        ("escapes in an image name", .fastPath, { setFirst("name", in: "images", $0, #""lib\"x\"\\\/é\u00e9.so""#) }),
        ("astral character written as is", .fastPath, { setFirst("name", in: "threads", $0, "\"😀 thread\"") }),
        ("surrogate escapes", .fallback, { setFirst("name", in: "threads", $0, #""\ud83d\ude00""#) }),
        ("null architecture", .fastPath, { setFirst("architecture", $0, "null") }),
        ("null faultAddress", .fastPath, { setFirst("faultAddress", $0, "null") }),
        ("null thread name and crashed", .fastPath, { setFirst("crashed", in: "threads", setFirst("name", in: "threads", $0, "null"), "null") }),
        ("null endOfText and buildId", .fastPath, { setFirst("buildId", in: "images", setFirst("endOfText", in: "images", $0, "null"), "null") }),
        ("null frame address", .fastPath, { setFirst("address", in: "frames", $0, "null") }),
        ("null frames", .fastPath, { setFirst("frames", in: "threads", $0, "null") }),
        ("null images", .fastPath, { setFirst("images", $0, "null") }),
        ("frame inlined and count", .fastPath, { replaceFirst($0, "\"address\"", "\"inlined\":false,\"count\":3,\"address\"") }),
        ("omittedImages negative", .fastPath, { setFirst("omittedImages", $0, "-3") }),
        ("faultAddress as a decimal number", .fastPath, { setFirst("faultAddress", $0, "8") }),
        ("baseAddress as a decimal number", .fastPath, { setFirst("baseAddress", in: "images", $0, "4096") }),
        ("baseAddress as a bad string", .fallback, { setFirst("baseAddress", in: "images", $0, "\"zz\"") }),
        ("baseAddress null", .fallback, { setFirst("baseAddress", in: "images", $0, "null") }),
        ("unknown nested keys", .fastPath, {
            replaceFirst($0, "\"crashed\"", "\"x\":{\"kind\":[[],{},[{\"address\":null}],true,false,-0,1.5,2E+3,-4e-7,\"\\u00e9\"]},\"crashed\"")
        }),
        ("unknown key in a frame holding known names", .fastPath, {
            replaceFirst($0, "\"address\"", "\"x\":{\"kind\":1,\"address\":{\"inlined\":\"zz\"}},\"address\"")
        }),
        ("unread numbers of every shape", nil, {
            replaceFirst($0, "\"crashed\"", "\"x\":[-0,0.5,1E+3,-2e-7,123456789012345678901234567890,1e400],\"crashed\"")
        }),
        ("unread leading zero", nil, { replaceFirst($0, "\"crashed\"", "\"x\":007,\"crashed\"") }),
        ("repeated key", .fallback, { replaceFirst($0, "\"architecture\"", "\"architecture\":\"arm64\",\"architecture\"") }),
        ("repeated key in a frame", .fallback, { replaceFirst($0, "\"address\"", "\"address\":\"0x1\",\"address\"") }),
        ("repeated unknown key", .fastPath, { replaceFirst($0, "\"crashed\"", "\"x\":1,\"x\":2,\"crashed\"") }),
        ("trailing comma (JSON5)", .fallback, { replaceFirst($0, "\"crashed\"", "\"x\":[1,2,],\"crashed\"") }),
        ("comment (JSON5)", .fallback, { replaceFirst($0, "\"crashed\"", "/* c */ \"crashed\"") }),
        ("kind missing from a frame", .fallback, { replaceFirst($0, "\"kind\": \"programCounter\"", "\"kindWas\": \"programCounter\"") }),
        ("kind as a number", .fallback, { setFirst("kind", $0, "1") }),
        ("threads null", .fallback, { setFirst("threads", $0, "null") }),
        ("crashed as a string", .fallback, { setFirst("crashed", in: "threads", $0, "\"true\"") }),
        ("text after the document", nil, { $0 + "\n}" }),
        ("cut short", nil, { String($0.dropLast(40)) }),
    ]

    static let addressEdits: [Edit] = frameAddressEdits.map { edit -> Edit in
        let literal = edit.literal
        let change: @Sendable (String) -> String = { setFirst("address", in: "frames", $0, literal) }
        return (name: "frame address \(literal)", expected: edit.expected, edit: change)
    }

    /// A frame's address in every shape: read alike where the cursor takes it; otherwise
    /// JSONDecoder's reading, malformed frame and warning included. `warning` is the value as
    /// the warning quotes it (JSONDecoder's words: its `Decimal` for numbers no `UInt64` holds),
    /// nil for a good address.
    static let frameAddressEdits: [(literal: String, expected: JSONDecoderAgreement, warning: String?)] = [
        ("4096", .fastPath, nil),
        ("0", .fastPath, nil),
        ("18446744073709551615", .fastPath, nil),
        ("\"0x1000\"", .fastPath, nil),
        ("\"zz\"", .fastPath, "\"zz\""),
        ("\"\"", .fastPath, "\"\""),
        // JSONDecoder reads these as the integers they equal; the cursor leaves that rule to it.
        ("1e2", .fallback, nil),
        ("1.0", .fallback, nil),
        ("-0", .fallback, nil),
        ("-1", .fallback, "-1"),
        ("1e40", .fallback, "10000000000000000000000000000000000000000"),
        ("1.5", .fallback, "1.5"),
        ("18446744073709551616", .fallback, "18446744073709551616"),
        ("true", .fallback, "a value that is neither a number nor a string"),
        ("{}", .fallback, "a value that is neither a number nor a string"),
        ("[]", .fallback, "a value that is neither a number nor a string"),
    ]

    @Test(arguments: samples)
    func editedReportsNeverReadDifferently(_ name: String) throws {
        let original = String(decoding: try Self.sample(name), as: UTF8.self)
        for edit in Self.edits {
            let edited = edit.edit(original)
            #expect(edited != original, "\(edit.name): the edit found nothing to change in \(name)")
            let data = Data(edited.utf8)
            let agreement = SwiftBacktraceJSONFormat.compareDecoders(data)
            if case .disagreement(let what) = agreement { Issue.record("\(edit.name) in \(name): \(what)") }
            if let expected = edit.expected { #expect(agreement == expected, "\(edit.name) in \(name)") }
            try expectSameParse(data, "\(edit.name) in \(name)")
        }
    }

    /// A frame address that is no address keeps the frame, marked malformed, with a warning
    /// quoting the value: the same on the fast path as on JSONDecoder's.
    @Test(arguments: samples)
    func badFrameAddressesWarnAsJSONDecoderWords(_ name: String) throws {
        let original = String(decoding: try Self.sample(name), as: UTF8.self)
        let format = SwiftBacktraceJSONFormat()
        for edit in Self.frameAddressEdits {
            let data = Data(setFirst("address", in: "frames", original, edit.literal).utf8)
            let report = try format.parse(data)
            let frame = try #require(report.threads.first?.frames.first)
            let warning = edit.warning.map { "thread 0 frame 0: \($0) is not an address (0 to 2^64-1); frame marked malformed" }
            #expect((frame.malformed ?? false) == (edit.warning != nil), "\(edit.literal) in \(name)")
            if let warning { #expect(report.warnings.contains(warning), "\(edit.literal) in \(name): \(report.warnings)") }
            #expect(report == (try format.parseWithJSONDecoder(data)), "\(edit.literal) in \(name)")
        }
    }

    /// The fast path's values reach the report: the thread name with escapes decoded, checked
    /// against JSONSerialization's reading of the same text.
    @Test func escapesAreDecodedAsJSONSerializationDecodesThem() throws {
        let literal = #""tab\tquote\"slash\/é\u00e9\u0001\n""#
        let text = setFirst("name", in: "threads", String(decoding: try Self.sample(Self.samples[0]), as: UTF8.self), literal)
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(literal.utf8), options: .fragmentsAllowed) as? String)
        #expect(SwiftBacktraceJSONFormat.compareDecoders(Data(text.utf8)) == .fastPath)
        let report = try SwiftBacktraceJSONFormat().parse(Data(text.utf8))
        #expect(report.threads.first?.name == expected)
    }

    /// The cursor holds documents to the preflight's depth limit: 100 levels read, 101 refused
    /// with the limit named, as before the fast path existed.
    @Test func theDepthLimitStillHolds() throws {
        let original = String(decoding: try Self.sample(Self.samples[0]), as: UTF8.self)
        func nested(_ levels: Int) -> String {
            // The report is level 1, `threads` 2, a thread 3: `x`'s brackets add the rest.
            let extra = levels - 3
            return replaceFirst(original, "\"crashed\"", "\"x\":" + String(repeating: "[", count: extra) + String(repeating: "]", count: extra) + ",\"crashed\"")
        }
        #expect(SwiftBacktraceJSONFormat.compareDecoders(Data(nested(100).utf8)) == .fastPath)
        _ = try SwiftBacktraceJSONFormat().parse(Data(nested(100).utf8))
        #expect {
            _ = try SwiftBacktraceJSONFormat().parse(Data(nested(101).utf8))
        } throws: { error in
            "\(error)".contains("nested deeper than 100")
        }
    }

    /// A report the cursor gives way on still gets JSONDecoder's words for what is wrong.
    @Test func aWrongTypeStillGetsJSONDecodersMessage() throws {
        let text = setFirst("crashed", in: "threads", String(decoding: try Self.sample(Self.samples[0]), as: UTF8.self), "\"yes\"")
        #expect {
            _ = try SwiftBacktraceJSONFormat().parse(Data(text.utf8))
        } throws: { error in
            "\(error)".contains("threads[0].crashed") && "\(error)".contains("expected a boolean")
        }
    }
}

/// `parse` (the cursor where it reads) gives exactly what JSONDecoder's reading gives: the same
/// report, warnings included, or the same error.
private func expectSameParse(_ data: Data, _ what: String) throws {
    let format = SwiftBacktraceJSONFormat()
    let fast = Result { () throws(ReportParseError) in try format.parse(data) }
    let reference = Result { () throws(ReportParseError) in try format.parseWithJSONDecoder(data) }
    #expect(fast == reference, "\(what)")
}

/// `"key": literal` in place of the first member `key` (after the first `"within"` key, if
/// given); the old value stays under another key, which no decoder reads.
private func setFirst(_ key: String, in within: String? = nil, _ text: String, _ literal: String) -> String {
    var from = text.startIndex
    if let within {
        guard let container = text.range(of: "\"\(within)\"") else { return text }
        from = container.upperBound
    }
    guard let member = text.range(of: "\"\(key)\"", range: from..<text.endIndex) else { return text }
    return text.replacingCharacters(in: member, with: "\"\(key)\":\(literal),\"\(key)Was\"")
}

/// The report without insignificant whitespace; stderr before it (up to the first line
/// starting with `{`) is kept as it is.
private func minify(_ text: String) -> String {
    let start = text.hasPrefix("{") ? text.startIndex : (text.range(of: "\n{").map { text.index(after: $0.lowerBound) } ?? text.endIndex)
    return minifyJSON(text, from: start)
}
