/// Makes text from reports, debug files and file names safe to print on a terminal or into a
/// log: every character a terminal or log viewer would act on instead of showing comes out as
/// a visible Swift-style escape. Human-readable output passes every value (or every line it
/// builds) through `escape`; JSON output has its own escaping and never goes through here.
///
/// Escaped: C0 controls except tab (ESC, BEL, CR, BS, and newline, which would forge table rows
/// or log lines), DEL, C1 controls (U+0080–U+009F, which some terminals read as CSI/OSC),
/// the line and paragraph separators U+2028/U+2029, and the bidirectional embeddings,
/// overrides and isolates U+202A–U+202E and U+2066–U+2069 (which reorder what follows them on
/// screen, "Trojan source" style). Tab stays: it is a column separator in `status` output and
/// moves the cursor only forwards. Backslashes are left alone, so a name that already reads
/// `\u{1b}` looks like an escaped ESC: the exact value is in the JSON output.
///
/// The result never contains a character `escape` would change, so escaping twice is the
/// same as escaping once: renderers may escape values and then whole lines.
public enum TerminalText {
    /// `text` with every unsafe character replaced by `\n`, `\r` or `\u{HEX}`.
    public static func escape(_ text: String) -> String {
        guard needsEscaping(text) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            guard isUnsafe(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            default: out += "\\u{" + String(scalar.value, radix: 16) + "}"
            }
        }
        return out
    }

    /// True for the characters `escape` replaces.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09: false
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x2028...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// A byte scan that rules out nearly every string at once: an unsafe character is a byte
    /// below 0x20, DEL, or a sequence starting 0xC2 (U+0080–U+00BF) or 0xE2 (U+2000–U+2FFF).
    /// Eight bytes at a time while they are all printable ASCII, which every symbol name and
    /// path nearly always is: a symcache build checks each of its strings (`make bench`,
    /// symcache build).
    private static func needsEscaping(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            var i = 0
            while i + 8 <= raw.count {
                let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let high: UInt64 = 0x8080_8080_8080_8080
                let ones: UInt64 = 0x0101_0101_0101_0101
                let del = w ^ (0x7F &* ones)
                // Any byte with its top bit set, below 0x20, or equal to 0x7F: look closer.
                if (w & high) | ((w &- 0x20 &* ones) & ~w & high) | ((del &- ones) & ~del & high) != 0 { break }
                i += 8
            }
            return bytes[i...].contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F || $0 == 0xC2 || $0 == 0xE2 }
        }
    }
}
