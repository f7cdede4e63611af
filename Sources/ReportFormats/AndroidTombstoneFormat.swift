import Foundation
import ReportModel

/// Android native crash dumps: a tombstone (`/data/tombstones/tombstone_NN`) or the same text in
/// logcat, each line behind a logcat prefix (`11-21 10:00:00.123  1234  1234 F DEBUG   : `).
///
/// Tombstone `pc` values are already file addresses (the unwinder subtracts each library's load
/// bias, and for frames above #00 it has already moved the return address back into the call).
/// So every library becomes a `BinaryImage` with `loadAddress` 0 and `vmAddress` 0, every frame
/// is a `.pc` naming its image, and file address = pc (docs/formats.md, "Android").
///
/// Hand-written line parsing: the format is debuggerd's text output, with no grammar.
public struct AndroidTombstoneFormat: ReportFormat {
    public let id = "android-tombstone"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        guard !JSONText.looksLikeJSON(data) else { return false }
        let head = String(decoding: data.prefix(65536), as: UTF8.self)
        return head.contains("pid: ") && head.contains(", tid: ") && head.contains("backtrace:") && head.contains("#00 pc ")
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        var parser = TombstoneParser(format: id)
        for line in TextLine.lines(data) {
            try parser.consume(TombstoneParser.strippingLogcatPrefix(line))
        }
        return try parser.finish()
    }
}

/// One pass over a tombstone's lines (logcat prefixes already removed).
struct TombstoneParser {
    let format: String
    var abi: String?
    var process: String?
    var exception: ExceptionInfo?
    var threads: [RawThread] = []
    var images: [BinaryImage] = []
    /// Image index by mapping path and build-id, so each library is listed once.
    var imageKeys: [ImageKey: Int] = [:]
    var inBacktrace = false
    var warnings = WarningLog()
    var limits = LimitCounter()
    var timestamp: String?

    init(format: String) { self.format = format }

    /// Removes the logcat prefixes of `threadtime` (`11-21 10:00:00.123  1234  1234 F DEBUG   : `,
    /// optionally with a year and a uid column), `brief` (`F/DEBUG  ( 1234): `) and Android
    /// Studio (`… A/DEBUG: ` within the first 80 characters) output.
    static func strippingLogcatPrefix(_ line: TextLine) -> TextLine {
        for strip in [threadtimePrefix, briefPrefix, studioPrefix] {
            if let rest = strip(line) { return rest }
        }
        return line
    }

    static func isLevel(_ byte: UInt8) -> Bool { "VDIWEFA".utf8.contains(byte) }

    /// Consumes exactly `count` digits.
    static func skipDigits(_ cursor: inout TextLine, _ count: Int) -> Bool {
        let digits = cursor.take(while: TextLine.isDigit)
        return digits.count == count
    }

    static func threadtimePrefix(_ line: TextLine) -> TextLine? {
        var c = line
        // [YYYY-]MM-DD HH:MM:SS.fff
        var probe = c
        if skipDigits(&probe, 4), probe.skip("-") { c = probe }
        guard skipDigits(&c, 2), c.skip("-"), skipDigits(&c, 2), c.skipBlanks() > 0,
            skipDigits(&c, 2), c.skip(":"), skipDigits(&c, 2), c.skip(":"), skipDigits(&c, 2), c.skip("."),
            !c.take(while: TextLine.isDigit).isEmpty, c.skipBlanks() > 0
        else { return nil }
        // [uid] pid tid level: the uid column (a name or number) is optional.
        var words: [Range<Int>] = []
        for _ in 0..<4 {
            let word = c.take { !TextLine.isBlank($0) }
            guard !word.isEmpty else { break }
            words.append(word)
            c.skipBlanks()
            if words.count == 3, isLevelWord(words[2], in: line), isNumber(words[0], in: line), isNumber(words[1], in: line) {
                return tag(after: c)
            }
        }
        guard words.count == 4, isNumber(words[1], in: line), isNumber(words[2], in: line), isLevelWord(words[3], in: line)
        else { return nil }
        return tag(after: c)
    }

    private static func isNumber(_ range: Range<Int>, in line: TextLine) -> Bool {
        line.bytes[range].allSatisfy(TextLine.isDigit)
    }

    private static func isLevelWord(_ range: Range<Int>, in line: TextLine) -> Bool {
        range.count == 1 && isLevel(line.bytes[range.lowerBound])
    }

    /// After the level: the tag runs to the first colon, then one optional space.
    private static func tag(after cursor: TextLine) -> TextLine? {
        var c = cursor
        guard let colon = c.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        c.position = colon + 1
        _ = c.skip(" ")
        return c
    }

    static func briefPrefix(_ line: TextLine) -> TextLine? {
        var c = line
        guard let level = c.first, isLevel(level) else { return nil }
        c.position += 1
        guard c.skip("/") else { return nil }
        _ = c.take { $0 != UInt8(ascii: "(") && $0 != UInt8(ascii: ":") }
        guard c.skip("(") else { return nil }
        c.skipBlanks()
        guard !c.take(while: TextLine.isDigit).isEmpty, c.skip("):") else { return nil }
        _ = c.skip(" ")
        return c
    }

    static func studioPrefix(_ line: TextLine) -> TextLine? {
        // At most 80 characters (UTF-8 continuation bytes do not count) before "X/TAG:".
        var characters = 0
        var index = line.position
        while index < line.end, characters <= 80 {
            let byte = line.bytes[index]
            let previous = index > line.position ? line.bytes[index - 1] : 0x20
            let atWordStart = !(TextLine.isLetter(previous) || TextLine.isDigit(previous) || previous == UInt8(ascii: "_"))
            if atWordStart, isLevel(byte), line.matches("/", at: index + 1) {
                var c = line
                c.position = index + 2
                if c.skip("DEBUG") || c.skip("libc") || (c.skip("crash_dump") && { _ = c.take(while: TextLine.isDigit); return true }()) {
                    c.skipBlanks()
                    if c.skip(":") {
                        _ = c.skip(" ")
                        return c
                    }
                }
            }
            if byte & 0xc0 != 0x80 { characters += 1 }
            index += 1
        }
        return nil
    }

    mutating func consume(_ raw: TextLine) throws(ReportParseError) {
        let line = raw.trimmed
        if line.hasPrefix("ABI: ") {
            abi = line.string(line.position + 5..<line.end).trimmingCharacters(in: CharacterSet(charactersIn: "' "))
            return
        }
        if line.hasPrefix("Timestamp: ") {
            timestamp = line.string(line.position + "Timestamp: ".utf8.count..<line.end)
            return
        }
        if line.hasPrefix("pid: "), try consumeThreadHeading(line) { return }
        if exception == nil, let signal = Self.signal(line) {
            exception = signal
            return
        }
        if line.hasPrefix("Abort message: ") {
            exception = exception ?? ExceptionInfo()
            exception?.message = line.string(line.position + "Abort message: ".utf8.count..<line.end)
                .trimmingCharacters(in: CharacterSet(charactersIn: "'"))
            return
        }
        if line.hasPrefix("backtrace:") && line.position + "backtrace:".utf8.count == line.end {
            if threads.isEmpty {
                try limits.addThread()
                threads.append(RawThread(index: 0, crashed: true, frames: []))
            }
            inBacktrace = true
            return
        }
        guard inBacktrace else { return }
        if line.isAtEnd {
            inBacktrace = false
            return
        }
        // `#00 pc 0000000000042f8c  /system/lib64/libc.so (abort+164) (BuildId: …)`
        var cursor = line
        guard cursor.skip("#"), cursor.integer() != nil, cursor.skip(" pc ") else {
            if line.hasPrefix("#") {
                warnings.append("line \(line.number): frame not understood: \(line.excerpt)")
            } else {
                inBacktrace = false
            }
            return
        }
        let hex = cursor.take(while: TextLine.isHexDigit)
        guard !hex.isEmpty, cursor.skipBlanks() > 0, let pc = UInt64(line.string(hex), radix: 16) else {
            warnings.append("line \(line.number): frame not understood: \(line.excerpt)")
            return
        }
        let imageIndex = try image(for: cursor)
        try limits.add(inThread: threads[threads.count - 1].index)
        threads[threads.count - 1].frames.append(RawFrame(address: Address(pc), kind: .pc, imageIndex: imageIndex))
    }

    /// `pid: 1234, tid: 1240, name: RenderThread  >>> com.example.app <<<`.
    mutating func consumeThreadHeading(_ line: TextLine) throws(ReportParseError) -> Bool {
        var c = line
        guard c.skip("pid: "), c.integer() != nil, c.skip(", tid: "), let tid = c.integer(), c.skip(", name: ") else {
            return false
        }
        var nameEnd = line.end
        if line.hasSuffix(" <<<"), let marker = c.firstIndex(of: ">>> "), marker + 4 <= line.end - 4 {
            // The process name sits between ">>> " and " <<<"; blanks before ">>>" pad the thread name.
            process = line.string(marker + 4..<line.end - 4)
            nameEnd = marker
            while nameEnd > c.position, TextLine.isBlank(line.bytes[nameEnd - 1]) { nameEnd -= 1 }
        }
        // The first thread block is the one that crashed; later ones follow "--- --- ---".
        try limits.addThread()
        threads.append(RawThread(index: tid, name: line.string(c.position..<nameEnd), crashed: threads.isEmpty, frames: []))
        inBacktrace = false
        return true
    }

    /// `signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0`.
    static func signal(_ line: TextLine) -> ExceptionInfo? {
        var c = line
        guard c.skip("signal "), c.integer() != nil, c.skip(" (") else { return nil }
        let name = c.take { TextLine.isDigit($0) || (0x41...0x5a).contains($0) }
        guard !name.isEmpty, c.skip("), code ") else { return nil }
        let codeStart = c.position
        _ = c.skip("-")
        guard !c.take(while: TextLine.isDigit).isEmpty else { return nil }
        var code = line.string(codeStart..<c.position)
        var probe = c
        if probe.skip(" ("), let close = probe.firstIndex(of: UInt8(ascii: ")")) {
            code += " (\(line.string(probe.position..<close)))"
            c.position = close + 1
        }
        guard let marker = c.firstIndex(of: ", fault addr ") else { return nil }
        c.position = marker + ", fault addr ".utf8.count
        let fault = c.take { !TextLine.isWhitespace($0) }
        guard !fault.isEmpty else { return nil }
        let signal = line.string(name)
        return ExceptionInfo(type: signal, signal: signal, code: code, faultAddress: Address(parsing: line.string(fault)))
    }

    /// `/path/lib.so (offset 0x1000) (symbol+12) (BuildId: abcd…)`: trailing parenthesised groups
    /// are peeled off from the end; what remains is the mapping's path. Read as bytes, and an
    /// image already seen is found by its path and build-id bytes without making strings: this
    /// runs once per frame.
    mutating func image(for location: TextLine) throws(ReportParseError) -> Int? {
        let bytes = location.bytes
        var end = location.end
        var buildID: Range<Int>?
        while end > location.position, bytes[end - 1] == UInt8(ascii: ")"), let open = matchingOpen(bytes, location.position..<end) {
            let group = TextLine(bytes: bytes, start: open + 1, end: end - 1, number: location.number)
            if group.hasPrefix("BuildId: ") { buildID = open + 1 + "BuildId: ".utf8.count..<end - 1 }
            end = open
            while end > location.position, bytes[end - 1] == UInt8(ascii: " ") { end -= 1 }
        }
        guard end > location.position else {
            warnings.append("line \(location.number): frame without a mapping")
            return nil
        }
        let key = ImageKey(path: bytes[location.position..<end], buildID: buildID.map { bytes[$0] } ?? [])
        if let index = imageKeys[key] { return index }
        let path = location.string(location.position..<end)
        // "base.apk!libfoo.so": a library stored uncompressed inside the APK.
        let file = path.split(separator: "!").last.map(String.init) ?? path
        let name = ReportText.basename(file)
        let id = BuildID.reported(buildID.map(location.string), image: name, lengths: .gnu, warnings: &warnings)
        try limits.add(images: 1)
        images.append(BinaryImage(name: name, path: path, id: id, arch: arch, loadAddress: 0, vmAddress: 0))
        imageKeys[key] = images.count - 1
        return images.count - 1
    }

    /// An image's identity in a tombstone: its mapping's path and build-id, as bytes of the report.
    struct ImageKey: Hashable {
        var path: ArraySlice<UInt8>
        var buildID: ArraySlice<UInt8>
    }

    /// Index of the "(" that closes with the final ")" of `range`.
    func matchingOpen(_ bytes: [UInt8], _ range: Range<Int>) -> Int? {
        var depth = 0
        var index = range.upperBound
        while index > range.lowerBound {
            index -= 1
            if bytes[index] == UInt8(ascii: ")") { depth += 1 }
            if bytes[index] == UInt8(ascii: "(") {
                depth -= 1
                if depth == 0 { return index }
            }
        }
        return nil
    }

    /// The ABI's architecture in its canonical spelling (Android's `x86` is i386); an ABI the
    /// table does not know is kept as written.
    var arch: Arch? { abi.map { Arch($0).canonical } }

    mutating func finish() throws(ReportParseError) -> RawReport {
        guard threads.contains(where: { !$0.frames.isEmpty }) else {
            throw .invalidReport(format: format, reason: "no \"backtrace:\" with \"#00 pc …\" frames")
        }
        return RawReport(
            format: format, kind: .crash, platform: "Android", arch: arch, app: process.map { AppInfo(name: $0) },
            timestamp: timestamp, exception: exception, images: images, threads: threads, warnings: warnings.all)
    }
}
