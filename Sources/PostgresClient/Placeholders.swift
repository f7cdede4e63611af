/// The statement text with its `?` placeholders numbered `$1…$n` for PostgreSQL, and how many
/// there were. A `?` inside a string literal (`'…'`, `E'…'`, `$tag$…$tag$`), a quoted identifier
/// or a comment is text, not a placeholder. PostgreSQL's own `?` operators (jsonb's `?`, `?|`,
/// `?&`) cannot be written in statements that go through here; their functions
/// (`jsonb_exists`, …) can.
func numberPlaceholders(_ sql: String) -> (text: String, count: Int) {
    let bytes = Array(sql.utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count + 16)
    var count = 0
    var i = 0
    func isIdentifier(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
            || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "_") || b >= 0x80
    }
    /// Copies from `i` through the byte that closes a run quoted by `quote`; a doubled quote is
    /// one escaped quote, and with `backslashes` (E'…') a backslash escapes the next byte.
    func copyQuoted(_ quote: UInt8, backslashes: Bool) {
        out.append(bytes[i]); i += 1
        while i < bytes.count {
            let b = bytes[i]
            out.append(b); i += 1
            if backslashes && b == UInt8(ascii: "\\"), i < bytes.count {
                out.append(bytes[i]); i += 1
            } else if b == quote {
                if i < bytes.count && bytes[i] == quote { out.append(bytes[i]); i += 1 } else { return }
            }
        }
    }
    while i < bytes.count {
        let b = bytes[i]
        let previous: UInt8? = i > 0 ? bytes[i - 1] : nil
        switch b {
        case UInt8(ascii: "?"):
            count += 1
            out.append(UInt8(ascii: "$"))
            out.append(contentsOf: String(count).utf8)
            i += 1
        case UInt8(ascii: "'"):
            let escaped =
                previous.map { $0 == UInt8(ascii: "E") || $0 == UInt8(ascii: "e") } == true
                && (i < 2 || !isIdentifier(bytes[i - 2]))
            copyQuoted(b, backslashes: escaped)
        case UInt8(ascii: "\""):
            copyQuoted(b, backslashes: false)
        case UInt8(ascii: "-") where i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "-"):
            while i < bytes.count && bytes[i] != UInt8(ascii: "\n") { out.append(bytes[i]); i += 1 }
        case UInt8(ascii: "/") where i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "*"):
            // PostgreSQL's block comments nest.
            var depth = 0
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "/") && i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "*") {
                    depth += 1; out.append(contentsOf: bytes[i...i + 1]); i += 2
                } else if bytes[i] == UInt8(ascii: "*") && i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "/") {
                    depth -= 1; out.append(contentsOf: bytes[i...i + 1]); i += 2
                    if depth == 0 { break }
                } else {
                    out.append(bytes[i]); i += 1
                }
            }
        case UInt8(ascii: "$") where previous.map(isIdentifier) != true:
            // A dollar quote's tag is `$` + an identifier-like word (or nothing) + `$`; `$1` is not one.
            var end = i + 1
            while end < bytes.count && isIdentifier(bytes[end]) { end += 1 }
            let startsWithDigit = i + 1 < bytes.count && bytes[i + 1] >= UInt8(ascii: "0") && bytes[i + 1] <= UInt8(ascii: "9")
            guard end < bytes.count, bytes[end] == UInt8(ascii: "$"), !startsWithDigit else {
                out.append(b); i += 1
                continue
            }
            let tag = Array(bytes[i...end])
            out.append(contentsOf: tag); i = end + 1
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "$"), i + tag.count <= bytes.count, Array(bytes[i..<i + tag.count]) == tag {
                    out.append(contentsOf: tag); i += tag.count
                    break
                }
                out.append(bytes[i]); i += 1
            }
        default:
            out.append(b); i += 1
        }
    }
    return (String(decoding: out, as: UTF8.self), count)
}
