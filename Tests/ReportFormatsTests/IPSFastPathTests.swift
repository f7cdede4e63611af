import Foundation
import ReportFormats
import ReportModel
import Testing

/// `.ips` files are read by a hand-written strict JSON cursor when they can be, and by
/// JSONDecoder otherwise. JSONDecoder is the oracle: whatever the cursor reads, JSONDecoder must
/// read to the same values (`compareDecoders`), and on the real samples the cursor must be the
/// one reading (else the ingest endpoint is back to its slow path without anyone noticing).
@Suite struct IPSFastPathTests {
    static let samples = ["ips/asi.ips", "ips/multithread-test.ips"]

    @Test(arguments: samples)
    func realReportsTakeTheFastPathAndReadAsJSONDecoderReadsThem(_ name: String) throws {
        #expect(AppleIPSFormat.compareDecoders(try wildSample(name)) == .fastPath)
    }

    /// Edits of the real samples, each a shape the cursor must read alike or leave alone.
    /// `expected` is nil where either outcome is acceptable, as long as nothing disagrees.
    static let edits: [(name: String, expected: IPSDecoderAgreement?, edit: @Sendable (String) -> String)] = [
        ("minified body", .fastPath, { minify($0) }),
        ("escapes in a thread name", .fastPath, { setFirstThreadName($0, #""tab\tquote\"slash\/é\u00e9\n""#) }),
        ("astral character written as is", .fastPath, { setFirstThreadName($0, "\"😀 thread\"") }),
        ("surrogate escapes", .fallback, { setFirstThreadName($0, #""\ud83d\ude00""#) }),
        ("null optional member", .fastPath, { replaceFirst($0, "\"triggered\"", "\"name\":null,\"triggered\"") }),
        ("bug_type as a number", .fastPath, { replaceFirst($0, "\"bug_type\":\"309\"", "\"bug_type\":309") }),
        ("trailing comma (JSON5)", .fallback, { replaceFirst($0, "\"triggered\"", "\"x\":[1,2,],\"triggered\"") }),
        ("comment (JSON5)", .fallback, { replaceFirst($0, "\"triggered\"", "/* c */ \"triggered\"") }),
        ("repeated key", .fallback, { replaceFirst($0, "\"triggered\"", "\"name\":\"a\",\"name\":\"b\",\"triggered\"") }),
        ("imageIndex as a string", .fallback, { replaceFirst($0, "\"imageIndex\"", "\"imageIndexWas\":0,\"imageIndex\":\"0\",\"x\"") }),
        ("imageOffset with an exponent", .fallback, { replaceFirst($0, "\"imageOffset\"", "\"imageOffset\":1e2,\"x\"") }),
        ("imageOffset negative", .fallback, { replaceFirst($0, "\"imageOffset\"", "\"imageOffset\":-1,\"x\"") }),
        ("imageOffset past 2^64", .fallback, { replaceFirst($0, "\"imageOffset\"", "\"imageOffset\":18446744073709551616,\"x\"") }),
        ("imageOffset 2^64-1", .fastPath, { replaceFirst($0, "\"imageOffset\"", "\"imageOffset\":18446744073709551615,\"x\"") }),
        ("unread numbers of every shape", nil, { replaceFirst($0, "\"triggered\"", "\"x\":[-0,0.5,1E+3,-2e-7,123456789012345678901234567890,1e400],\"triggered\"") }),
        ("unread leading zero", nil, { replaceFirst($0, "\"triggered\"", "\"x\":007,\"triggered\"") }),
        ("unread nested containers", .fastPath, { replaceFirst($0, "\"triggered\"", "\"x\":{\"a\":[[],{},[{\"b\":null}],true,false]},\"triggered\"") }),
        ("text after the document", nil, { $0 + "\n}" }),
        ("cut short", nil, { String($0.dropLast(40)) }),
        ("base as a hex string", .fastPath, { replaceFirstImageBase($0, "\"0x1000\"") }),
        ("base as a bad string", .fallback, { replaceFirstImageBase($0, "\"zz\"") }),
        // JSONDecoder matches keys by canonical equivalence: U+212A KELVIN SIGN is a `K`.
        ("crashReporterKey with a Kelvin sign", .fastPath, { replaceFirst($0, "\"crashReporterKey\"", "\"crashReporter\u{212A}ey\"") }),
        ("crashReporterKey twice, once with a Kelvin sign", nil, { replaceFirst($0, "\"procName\"", "\"crashReporter\u{212A}ey\":\"x\",\"procName\"") }),
        ("asi as one string", .fastPath, { replaceFirst(replaceFirst($0, "\"asi\" :", "\"asiWas\" :"), "\"procName\"", "\"asi\":{\"libsystem_c.dylib\":\"abort() called\"},\"procName\"") }),
    ]

    @Test(arguments: samples)
    func editedReportsNeverReadDifferently(_ name: String) throws {
        let original = String(decoding: try wildSample(name), as: UTF8.self)
        for edit in Self.edits {
            let edited = edit.edit(original)
            // Bytes, not `String`s: a Kelvin sign and a `K` are equal as `String`s.
            #expect(!edited.utf8.elementsEqual(original.utf8), "\(edit.name): the edit found nothing to change in \(name)")
            let agreement = AppleIPSFormat.compareDecoders(Data(edited.utf8))
            if case .disagreement(let what) = agreement { Issue.record("\(edit.name) in \(name): \(what)") }
            if let expected = edit.expected { #expect(agreement == expected, "\(edit.name) in \(name)") }
        }
    }

    /// The fast path's values reach the report: the thread name with escapes decoded, checked
    /// against JSONSerialization's reading of the same text.
    @Test func escapesAreDecodedAsJSONSerializationDecodesThem() throws {
        let literal = #""tab\tquote\"slash\/é\u00e9\u0001\n""#
        let text = setFirstThreadName(String(decoding: try wildSample("ips/asi.ips"), as: UTF8.self), literal)
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(literal.utf8), options: .fragmentsAllowed) as? String)
        let report = try AppleIPSFormat().parse(Data(text.utf8))
        #expect(report.threads.contains { $0.name == expected })
    }

    /// The cursor holds documents to the preflight's depth limit: 100 levels read, 101 refused
    /// with the limit named, as before the fast path existed.
    @Test func theDepthLimitStillHolds() throws {
        let original = String(decoding: try wildSample("ips/asi.ips"), as: UTF8.self)
        func nested(_ levels: Int) -> String {
            // The body is level 1, `threads` 2, a thread 3: `x`'s brackets add the rest.
            let extra = levels - 3
            return replaceFirst(original, "\"triggered\"", "\"x\":" + String(repeating: "[", count: extra) + String(repeating: "]", count: extra) + ",\"triggered\"")
        }
        #expect(AppleIPSFormat.compareDecoders(Data(nested(100).utf8)) == .fastPath)
        _ = try AppleIPSFormat().parse(Data(nested(100).utf8))
        #expect {
            _ = try AppleIPSFormat().parse(Data(nested(101).utf8))
        } throws: { error in
            "\(error)".contains("nested deeper than 100")
        }
    }

    /// A report the cursor gives way on still gets JSONDecoder's words for what is wrong.
    @Test func aWrongTypeStillGetsJSONDecodersMessage() throws {
        let text = replaceFirst(String(decoding: try wildSample("ips/asi.ips"), as: UTF8.self), "\"imageOffset\"", "\"imageOffset\":\"x\",\"y\"")
        #expect {
            _ = try AppleIPSFormat().parse(Data(text.utf8))
        } throws: { error in
            "\(error)".contains("imageOffset") && "\(error)".contains("expected an integer")
        }
    }
}

/// The first image of `usedImages` gets `"base": literal` (the old base is kept under another key;
/// `sharedCache` has a `base` too, which no decoder reads).
private func replaceFirstImageBase(_ text: String, _ literal: String) -> String {
    guard let images = text.range(of: "\"usedImages\""), let base = text.range(of: "\"base\"", range: images.upperBound..<text.endIndex) else {
        return text
    }
    return text.replacingCharacters(in: base, with: "\"base\":\(literal),\"baseWas\"")
}

/// The first thread's member list gets `"name": literal` first (the samples' threads have no name).
private func setFirstThreadName(_ text: String, _ literal: String) -> String {
    replaceFirst(text, "\"triggered\"", "\"name\":\(literal),\"triggered\"")
}

/// The body without insignificant whitespace; the header line is kept as it is.
private func minify(_ text: String) -> String {
    guard let newline = text.firstIndex(of: "\n") else { return text }
    return minifyJSON(text, from: text.index(after: newline))
}
