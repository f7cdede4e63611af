import ReportModel
import TestSupport
import Testing

/// `TerminalText.escape` leaves a string alone exactly when none of its scalars is one
/// `isUnsafe` names; its byte scan skips eight printable ASCII bytes at a time, so unsafe
/// characters are placed at every offset around those eight-byte steps.
@Suite struct TerminalTextTests {
    @Test func aStringIsEscapedExactlyWhenOneOfItsScalarsIsUnsafe() {
        let unsafe: [Unicode.Scalar] = ["\u{0}", "\u{1b}", "\n", "\r", "\u{7f}", "\u{80}", "\u{9f}", "\u{2028}", "\u{202e}", "\u{2066}"]
        let safe: [Unicode.Scalar] = ["a", "Z", "~", " ", "\t", "_", "$", "\u{a0}", "\u{e9}", "\u{2000}", "\u{2030}", "\u{1F600}"]
        var random = SeededGenerator(seed: 7)
        for length in 0..<40 {
            for _ in 0..<40 {
                var scalars = (0..<length).map { _ in safe[Int.random(in: 0..<safe.count, using: &random)] }
                if length > 0 && Bool.random(using: &random) {
                    scalars[Int.random(in: 0..<length, using: &random)] = unsafe[Int.random(in: 0..<unsafe.count, using: &random)]
                }
                var text = ""
                text.unicodeScalars.append(contentsOf: scalars)
                let expected = text.unicodeScalars.contains(where: TerminalText.isUnsafe)
                #expect((TerminalText.escape(text) != text) == expected, "\(Array(text.utf8))")
            }
        }
    }
}
