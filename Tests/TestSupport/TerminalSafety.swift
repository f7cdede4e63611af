import Foundation

/// A value a hostile report could carry: an SGR colour, an OSC 52 clipboard write, CR, BS,
/// DEL, a C1 CSI, a right-to-left override, an isolate, a tab, and a newline followed by text
/// that would pass for a line of its own. (No NUL: Foundation's JSON5 decoder, behind several
/// parsers, refuses `\u0000`, and ELF string tables end at NUL.)
public enum HostileText {
    public static let forgedMarker = "FORGED"
    public static let value = "e\u{1b}[31mRED\u{1b}]52;c;QQ==\u{07}\r\u{08}\u{7f}\u{9b}2J\u{202e}gnp.exe\u{2066}\tTAB\nFORGED line"
    /// `value` as every human-readable output must show it, written out by hand.
    public static let escaped = #"e\u{1b}[31mRED\u{1b}]52;c;QQ==\u{7}\r\u{8}\u{7f}\u{9b}2J\u{202e}gnp.exe\u{2066}"# + "\tTAB" + #"\nFORGED line"#
    /// `value` as a JSON string body (without the quotes).
    public static let json = #"e\u001b[31mRED\u001b]52;c;QQ==\u0007\r\b\u007f\u009b2J\u202egnp.exe\u2066\tTAB\nFORGED line"#

    /// Why `output` is not safe for a terminal, or nil: a control character other than newline
    /// and tab, DEL, a C1 control, a line or paragraph separator, a bidi override or isolate,
    /// or a line that starts (after indentation) with the forged text of `value`.
    public static func problem(in output: String) -> String? {
        for scalar in output.unicodeScalars {
            switch scalar.value {
            case 0x0A, 0x09: continue
            case 0x00...0x1F, 0x7F...0x9F, 0x2028...0x202E, 0x2066...0x2069:
                return "contains U+\(String(scalar.value, radix: 16, uppercase: true))"
            default: continue
            }
        }
        for line in output.split(separator: "\n", omittingEmptySubsequences: false)
        where line.drop(while: { $0 == " " || $0 == "\t" }).hasPrefix(forgedMarker) {
            return "a value forged the line '\(line)'"
        }
        return nil
    }
}
