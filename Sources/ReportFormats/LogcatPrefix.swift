import Foundation

/// The prefixes `adb logcat` and Android Studio put before each message, removed in one place
/// so every Android format (tombstones, sanitizer reports) reads the message text alone.
///
/// Styles (docs/formats.md, "Android"): `brief` `F/DEBUG   ( 1234): `, `tag` `F/DEBUG: `,
/// `time` `03-12 12:20:39.345 F/DEBUG( 1234): `, `threadtime`
/// `03-12 12:20:39.345  1234  1234 F DEBUG   : ` (optionally with a year and a uid column),
/// Android Studio's older `2023-03-12 12:20:39.345 1234-1234/com.example A/DEBUG: ` (`/?` when
/// the package is unknown), its
/// `03-12 12:20:39.345  F  [30472/30472] DEBUG    ` and its newer columns
/// `2023-03-12 12:20:39.345 30472-30472 DEBUG   pid-30472   A  `. Each is read by a small
/// forward-only parser over the line's bytes; a line that matches none is returned unchanged.
enum LogcatPrefix {
    static func strip(_ line: TextLine) -> TextLine {
        guard let first = line.first else { return line }
        if TextLine.isDigit(first) {
            guard var c = afterTimestamp(line) else { return line }
            c.skipBlanks()
            for style in [threadtime, brief, studioBracketed, studioOld, studioColumns] {
                if let rest = style(c) { return rest }
            }
            return line
        }
        if isLevel(first), let rest = brief(line) { return rest }
        return line
    }

    static func isLevel(_ byte: UInt8) -> Bool { "VDIWEFA".utf8.contains(byte) }

    /// Consumes exactly `count` digits.
    private static func digits(_ cursor: inout TextLine, _ count: Int) -> Bool {
        cursor.take(while: TextLine.isDigit).count == count
    }

    /// `[YYYY-]MM-DD HH:MM:SS.fff` (any number of fraction digits) and the blanks after it.
    private static func afterTimestamp(_ line: TextLine) -> TextLine? {
        var c = line
        var probe = c
        if digits(&probe, 4), probe.skip("-") { c = probe }
        guard digits(&c, 2), c.skip("-"), digits(&c, 2), c.skipBlanks() > 0,
            digits(&c, 2), c.skip(":"), digits(&c, 2), c.skip(":"), digits(&c, 2), c.skip("."),
            !c.take(while: TextLine.isDigit).isEmpty, c.skipBlanks() > 0
        else { return nil }
        return c
    }

    private static func word(_ cursor: inout TextLine) -> Range<Int> { cursor.take { !TextLine.isBlank($0) } }

    private static func isNumber(_ range: Range<Int>, in line: TextLine) -> Bool {
        !range.isEmpty && line.bytes[range].allSatisfy(TextLine.isDigit)
    }

    private static func isLevelWord(_ range: Range<Int>, in line: TextLine) -> Bool {
        range.count == 1 && isLevel(line.bytes[range.lowerBound])
    }

    /// After the level: the tag runs to the first colon, then one optional space.
    private static func afterTagColon(_ cursor: TextLine) -> TextLine? {
        var c = cursor
        guard let colon = c.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        c.position = colon + 1
        _ = c.skip(" ")
        return c
    }

    /// `[uid] pid tid L TAG   : ` after the timestamp.
    private static func threadtime(_ line: TextLine) -> TextLine? {
        var c = line
        var words: [Range<Int>] = []
        for _ in 0..<4 {
            let w = word(&c)
            guard !w.isEmpty else { return nil }
            words.append(w)
            c.skipBlanks()
            if words.count == 3, isLevelWord(words[2], in: line), isNumber(words[0], in: line), isNumber(words[1], in: line) {
                return afterTagColon(c)
            }
        }
        guard isNumber(words[1], in: line), isNumber(words[2], in: line), isLevelWord(words[3], in: line) else { return nil }
        return afterTagColon(c)
    }

    /// `L/TAG( pid): ` (brief, and time after its timestamp) or `L/TAG: ` (tag).
    private static func brief(_ line: TextLine) -> TextLine? {
        var c = line
        guard let level = c.first, isLevel(level) else { return nil }
        c.position += 1
        guard c.skip("/") else { return nil }
        let tag = c.take { $0 != UInt8(ascii: "(") && $0 != UInt8(ascii: ":") }
        guard !tag.isEmpty else { return nil }
        if c.skip(":") {
            // `tag` style: the tag is one word (padded), or this is ordinary text with a slash.
            guard !line.bytes[line.trimming(tag)].contains(where: TextLine.isBlank) else { return nil }
            _ = c.skip(" ")
            return c
        }
        guard c.skip("(") else { return nil }
        c.skipBlanks()
        guard !c.take(while: TextLine.isDigit).isEmpty else { return nil }
        // `thread` style puts `pid:tid` in the parentheses.
        if c.skip(":") {
            c.skipBlanks()
            _ = c.take(while: TextLine.isDigit)
        }
        guard c.skip("):") else { return nil }
        _ = c.skip(" ")
        return c
    }

    /// Android Studio: `L  [pid/tid] TAG    ` after the timestamp.
    private static func studioBracketed(_ line: TextLine) -> TextLine? {
        var c = line
        let level = word(&c)
        guard isLevelWord(level, in: line), c.skipBlanks() > 0, c.skip("[") else { return nil }
        guard !c.take(while: TextLine.isDigit).isEmpty, c.skip("/"), !c.take(while: TextLine.isDigit).isEmpty, c.skip("]"),
            c.skipBlanks() > 0, !word(&c).isEmpty
        else { return nil }
        c.skipBlanks()
        return c
    }

    /// Android Studio before Flamingo: `pid-tid/package L/TAG: ` after the timestamp.
    private static func studioOld(_ line: TextLine) -> TextLine? {
        var c = line
        guard !c.take(while: TextLine.isDigit).isEmpty, c.skip("-"), !c.take(while: TextLine.isDigit).isEmpty else { return nil }
        c.skipBlanks()
        if c.skip("/") {
            _ = word(&c)  // the package, or `?`
            c.skipBlanks()
        }
        return brief(c)
    }

    /// Android Studio Flamingo and later: `pid-tid TAG package L ` after the timestamp; the tag
    /// and package columns are padded, and the level is the first one-letter word after them.
    private static func studioColumns(_ line: TextLine) -> TextLine? {
        var c = line
        guard !c.take(while: TextLine.isDigit).isEmpty, c.skip("-"), !c.take(while: TextLine.isDigit).isEmpty, c.skipBlanks() > 0 else {
            return nil
        }
        for _ in 0..<3 {
            let w = word(&c)
            let blanks = c.skipBlanks()
            guard !w.isEmpty, blanks > 0 || c.isAtEnd else { return nil }
            if isLevelWord(w, in: line) { return c }
            guard blanks > 0 else { return nil }
        }
        return nil
    }
}
