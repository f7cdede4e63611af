import Foundation
import ReportModel

/// Android native crash dumps: a tombstone (`/data/tombstones/tombstone_NN`), the same text in
/// logcat behind any logcat prefix (`LogcatPrefix`), or an excerpt of one as ndk-stack reads
/// it (the `*** *** ***` banner and frame lines, without `pid:` or `backtrace:` lines).
///
/// Tombstone `pc` values are already file addresses (the unwinder subtracts each library's load
/// bias, and for frames above #00 it has already moved the return address back into the call).
/// So every library becomes a `BinaryImage` with `loadAddress` 0 and `vmAddress` 0, every frame
/// is a `.pc` naming its image, and file address = pc (docs/formats.md, "Android").
///
/// Hand-written line parsing: the format is debuggerd's text output, with no grammar.
public struct AndroidTombstoneFormat: ReportFormat {
    public let id = "android-tombstone"

    /// The line debuggerd writes before each crash, in tombstones and in logcat.
    static let banner: StaticString = "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***"

    public init() {}

    /// A `#00 pc` frame plus a `backtrace:` line, the banner, or a `pid: …, tid: …` line. A
    /// logcat capture may hold megabytes of other messages before the crash, so the whole input
    /// is searched (a byte search, far faster than parsing).
    public func matches(_ data: Data) -> Bool {
        guard !JSONText.looksLikeJSON(data) else { return false }
        func has(_ needle: String) -> Bool { JSONText.head(data, contains: needle, window: data.count) }
        guard has("#00 pc ") else { return false }
        return has("backtrace:") || has(String(describing: Self.banner)) || (has("pid: ") && has(", tid: "))
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        let lines = TextLine.lines(data)
        var parser = TombstoneParser(format: id, excerpt: !Self.hasBacktraceLine(lines.bytes))
        for line in lines {
            try parser.consume(LogcatPrefix.strip(line))
        }
        return try parser.finish()
    }

    /// One part per crash: a capture holding several tombstones is cut at each banner that
    /// starts a crash (one followed by a `#NN pc` frame before the next banner). Anything before
    /// the first such banner stays with the first crash, and a banner with no frames after it
    /// stays with the crash before it.
    public func split(_ data: Data) -> [Data] {
        var starts: [Int] = []
        var pendingBanner: Int?
        for line in TextLine.lines(data) {
            let text = LogcatPrefix.strip(line).trimmed
            if text.hasPrefix(Self.banner) {
                pendingBanner = line.position
            } else if let banner = pendingBanner, TombstoneParser.pcFrame(text) != nil {
                starts.append(banner)
                pendingBanner = nil
            }
        }
        return ReportSplit.pieces(data, startingAt: starts)
    }

    /// True when a line ends with `backtrace:` (debuggerd's heading of a thread's frames, after
    /// whatever prefix the line has). Without one the report is an excerpt, and frames are read
    /// wherever they are, as ndk-stack does.
    static func hasBacktraceLine(_ bytes: [UInt8]) -> Bool {
        let needle = Array("backtrace:".utf8)
        var index = 0
        while index + needle.count <= bytes.count {  // overflow: an index into bytes in memory plus a 10-byte literal
            guard let hit = bytes[index...].firstIndex(of: needle[0]) else { return false }
            index = hit + 1
            guard hit + needle.count <= bytes.count, bytes[hit..<hit + needle.count].elementsEqual(needle) else { continue }  // overflow: as above
            var after = hit + needle.count
            while after < bytes.count, TextLine.isBlank(bytes[after]) || bytes[after] == 0x0d { after += 1 }
            let lineEnds = after == bytes.count || bytes[after] == 0x0a
            let startsWord = hit == 0 || TextLine.isWhitespace(bytes[hit - 1]) || bytes[hit - 1] == UInt8(ascii: ":")
            if lineEnds && startsWord { return true }
        }
        return false
    }
}

/// One pass over a tombstone's lines (logcat prefixes already removed).
struct TombstoneParser {
    let format: String
    /// No `backtrace:` line anywhere: every `#NN pc` line is a frame (ndk-stack's input).
    let excerpt: Bool
    var abi: String?
    var process: String?
    var commandLine: String?
    var fingerprint: String?
    var timestamp: String?
    var exception: ExceptionInfo?
    var sawThreadHeading = false
    var threads: [RawThread] = []
    /// The thread `#NN pc` frames go to: the last `pid:` heading's, or one made for an excerpt.
    var currentThread: Int?
    var images = FileAddressImages()
    var inBacktrace = false
    /// The lines of an `Abort message: '…` that has not closed its quote yet.
    var abortLines: [String]?
    /// The thread of the sanitizer stack being read (HWASan reports inside an abort message).
    var sanitizerThread: Int?
    /// The last line that was neither blank nor a frame: a sanitizer stack's heading.
    var lastText: String?
    var warnings = WarningLog()
    var limits = LimitCounter()

    /// Abort messages longer than this many lines are cut (a message is text, not a log).
    static let maxAbortLines = 200

    init(format: String, excerpt: Bool) {
        self.format = format
        self.excerpt = excerpt
    }

    mutating func consume(_ raw: TextLine) throws(ReportParseError) {
        let line = raw.trimmed
        if abortLines != nil, continueAbortMessage(line) { return }
        if try consumeFrame(line) { return }
        if line.isAtEnd {
            inBacktrace = false
            return
        }
        defer { lastText = Self.heading(line) }
        if let value = Self.value(line, "ABI: ") {
            abi = Self.unquoted(value)
        } else if let value = Self.value(line, "Timestamp: ") {
            timestamp = value
        } else if let value = Self.value(line, "Build fingerprint: ") {
            fingerprint = Self.unquoted(value)
        } else if let value = Self.value(line, "Cmdline: ") {
            commandLine = Self.program(value.split(separator: " ").first.map(String.init) ?? value)
        } else if line.hasPrefix("pid: "), try consumeThreadHeading(line) {
            return
        } else if let value = Self.value(line, "Abort message: ") {
            startAbortMessage(value)
        } else if let signal = Self.signal(line) {
            mergeSignal(signal)
        } else if Self.isBacktraceHeading(line) {
            if currentThread == nil { try addThread(index: 0, name: nil) }
            inBacktrace = true
        } else if line.hasPrefix("--- --- ---") {
            inBacktrace = false
            sanitizerThread = nil
        } else if inBacktrace {
            if line.hasPrefix("#") { warnings.append("line \(line.number): frame not understood: \(line.excerpt)") }
            inBacktrace = false
        } else {
            if let error = SanitizerText.errorLine(line) { noteSanitizerError(error, overriding: false) }
            sanitizerThread = nil
        }
    }

    /// A `#NN pc` frame (kept when in a `backtrace:` section, or anywhere in an excerpt) or a
    /// sanitizer frame (`#N 0x… (lib.so+0x…)`, from an HWASan report in the abort message).
    mutating func consumeFrame(_ line: TextLine) throws(ReportParseError) -> Bool {
        if let (number, cursor) = Self.pcFrame(line) {
            guard inBacktrace || excerpt else { return true }
            if excerpt, !inBacktrace, currentThread.map({ number == 0 && !threads[$0].frames.isEmpty }) ?? true {
                try addThread(index: threads.count, name: nil)
            }
            try appendPCFrame(cursor)
            return true
        }
        guard let frame = SanitizerText.frame(line) else { return false }
        if frame.number == 0 || sanitizerThread == nil {
            try limits.addThread()
            threads.append(RawThread(index: threads.count, name: lastText, frames: [], part: "sanitizer"))
            sanitizerThread = threads.count - 1
        }
        guard let thread = sanitizerThread else { return true }
        try limits.add(inThread: threads[thread].index)
        threads[thread].frames.append(
            try frame.raw(line, images: &images, arch: arch, warnings: &warnings, limits: &limits))
        return true
    }

    /// A thread for `#NN pc` frames; the first one is the crashed one.
    mutating func addThread(index: Int, name: String?) throws(ReportParseError) {
        try limits.addThread()
        threads.append(RawThread(index: index, name: name, crashed: currentThread == nil, frames: []))
        currentThread = threads.count - 1
    }

    /// `#00 pc 0000000000042f8c  /system/lib64/libc.so (abort+164) (BuildId: …)`: `cursor` is at the pc.
    mutating func appendPCFrame(_ cursor: TextLine) throws(ReportParseError) {
        var c = cursor
        _ = c.skip("0x")
        let hex = c.take(while: TextLine.isHexDigit)
        // Like ndk-stack, a frame names its mapping after the pc (`<unknown>` when the unwinder has none).
        guard !hex.isEmpty, c.skipBlanks() > 0, !c.isAtEnd, let pc = UInt64(c.string(hex), radix: 16) else {
            warnings.append("line \(c.number): frame not understood: \(c.excerpt)")
            return
        }
        let location = c.trailingGroups(c.position..<c.end)
        var path = location.head
        var buildID: Range<Int>?
        var symbol: Range<Int>?
        for group in location.groups {
            if c.range(group, hasPrefix: "BuildId: ") {
                buildID = group.lowerBound + "BuildId: ".utf8.count..<group.upperBound
            } else if c.range(group, hasPrefix: "offset 0x") {
                continue
            } else if group == location.groups.last, !path.isEmpty, c.string(group) == "deleted" {
                // `/memfd:jit-cache (deleted)`: part of the mapping's name.
                path = path.lowerBound..<group.upperBound + 1
            } else {
                symbol = group  // the groups come last first, so this ends on the leftmost
            }
        }
        var imageIndex: Int?
        if path.isEmpty {
            warnings.append("line \(c.number): frame without a mapping: \(c.excerpt)")
        } else {
            imageIndex = try images.image(path: path, buildID: buildID, in: c, arch: arch, warnings: &warnings, limits: &limits)
        }
        let (name, offset) = symbol.map { Self.symbol(c, $0) } ?? (nil, nil)
        guard let thread = currentThread else { return }
        try limits.add(inThread: threads[thread].index)
        threads[thread].frames.append(
            RawFrame(address: Address(pc), kind: .pc, imageIndex: imageIndex, symbol: name, symbolOffset: offset))
    }

    /// `abort+164` → ("abort", 164); `pthread_atfork` → ("pthread_atfork", nil). The name is kept
    /// exactly as printed (a mangled C++ name stays mangled); the offset is decimal.
    static func symbol(_ line: TextLine, _ range: Range<Int>) -> (String?, UInt64?) {
        var plus = range.upperBound
        while plus > range.lowerBound, TextLine.isDigit(line.bytes[plus - 1]) { plus -= 1 }
        if plus > range.lowerBound + 1, plus < range.upperBound, line.bytes[plus - 1] == UInt8(ascii: "+"),
            let offset = UInt64(line.string(plus..<range.upperBound))
        {
            return (line.string(range.lowerBound..<plus - 1), offset)
        }
        return range.isEmpty ? (nil, nil) : (line.string(range), nil)
    }

    /// `#NN pc HEX …` at the start of the line or after a blank anywhere in it (ndk-stack reads
    /// frames behind any prefix); the cursor is at the pc.
    static func pcFrame(_ line: TextLine) -> (Int, TextLine)? {
        var from = line.position
        while let hash = line.firstIndex(of: UInt8(ascii: "#"), from: from) {
            from = hash + 1
            guard hash == line.position || TextLine.isBlank(line.bytes[hash - 1]) else { continue }
            var c = line
            c.position = hash + 1
            guard let number = c.integer(), c.skipBlanks() > 0, c.skip("pc"), c.skipBlanks() > 0 else { continue }
            return (number, c)
        }
        return nil
    }

    /// A line as the name of the stack that follows it: at most 120 bytes, without a final colon.
    static func heading(_ line: TextLine) -> String {
        var text = line.excerpt
        if text.hasSuffix(":") { text.removeLast() }
        return text
    }

    static func isBacktraceHeading(_ line: TextLine) -> Bool {
        guard line.hasSuffix("backtrace:") else { return false }
        let start = line.end - "backtrace:".utf8.count
        return start == line.position || TextLine.isBlank(line.bytes[start - 1]) || line.bytes[start - 1] == UInt8(ascii: ":")
    }

    /// The rest of the line after `key`, when the line starts with it.
    static func value(_ line: TextLine, _ key: StaticString) -> String? {
        line.hasPrefix(key) ? line.string(line.position + key.utf8CodeUnitCount..<line.end) : nil
    }

    /// `'arm64'` → `arm64`: one quote off each end, when both are there.
    static func unquoted(_ text: String) -> String {
        text.count >= 2 && text.hasPrefix("'") && text.hasSuffix("'") ? String(text.dropFirst().dropLast()) : text
    }

    /// The program a command line or process name names: its last path component.
    static func program(_ text: String) -> String {
        text.hasPrefix("/") ? ReportText.basename(text) : text
    }

    // MARK: The abort message

    /// `'…'` on one line, or an opening quote whose closing one ends a later line (a multi-line
    /// message: JNI errors, `CHECK` failures, HWASan reports).
    mutating func startAbortMessage(_ value: String) {
        if value.count >= 2, value.hasPrefix("'"), value.hasSuffix("'") {
            setMessage([String(value.dropFirst().dropLast())])
        } else if value.hasPrefix("'") {
            abortLines = [String(value.dropFirst())]
        } else {
            setMessage([value])
        }
    }

    /// Adds `line` to an open abort message; true when the line was only message text. The
    /// message closes at a line ending in `'`; a blank line, a `backtrace:` line or the banner
    /// closes one whose quote never comes (the line is then read as usual).
    mutating func continueAbortMessage(_ line: TextLine) -> Bool {
        guard var lines = abortLines else { return false }
        if line.isAtEnd || Self.isBacktraceHeading(line) || line.hasPrefix(AndroidTombstoneFormat.banner) || lines.count >= Self.maxAbortLines {
            abortLines = nil
            if lines.count >= Self.maxAbortLines { warnings.append("line \(line.number): abort message cut after \(Self.maxAbortLines) lines") }
            setMessage(lines)
            return false
        }
        let text = line.string(line.position..<line.end)
        if text.hasSuffix("'") {
            lines.append(String(text.dropLast()))
            abortLines = nil
            setMessage(lines)
            return true
        }
        lines.append(text)
        abortLines = lines
        // Sanitizer frames inside the message are also read as a stack.
        guard SanitizerText.frame(line) == nil else { return false }
        lastText = Self.heading(line)
        return true
    }

    /// The message; a sanitizer's `==N==ERROR: …Sanitizer: type on address …` line names the
    /// exception type and the faulting address (which a SIGABRT's signal line leaves out). HWASan
    /// puts that line first; ASan's report (what `abort_on_error` hands to the abort message)
    /// opens with its `=====` rule, so the line is looked for past the rule and blank lines.
    mutating func setMessage(_ lines: [String]) {
        let error = lines.lazy.prefix { Self.isRuleOrBlank($0) || SanitizerText.errorLine(TextLine(text: $0)) != nil }
            .compactMap { SanitizerText.errorLine(TextLine(text: $0)) }.first
        if let error {
            noteSanitizerError(error, overriding: true)
            return
        }
        var info = exception ?? ExceptionInfo()
        var text = lines.joined(separator: "\n")
        while text.last?.isWhitespace == true { text.removeLast() }
        info.message = text
        exception = info
    }

    /// A sanitizer's error line, in the abort message (`overriding` what a logcat line said) or
    /// in logcat before the tombstone (`wrap.sh` prints the report there first).
    mutating func noteSanitizerError(_ error: SanitizerText.ErrorLine, overriding: Bool) {
        var info = exception ?? ExceptionInfo()
        guard overriding || info.type == nil else { return }
        info.message = error.message
        info.type = error.type
        if info.faultAddress == nil { info.faultAddress = error.faultAddress }
        exception = info
    }

    /// `=====…` (the rule a sanitizer prints before its report) or nothing but blanks.
    static func isRuleOrBlank(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 == UInt8(ascii: "=") || TextLine.isBlank($0) }
    }

    // MARK: Header lines

    /// `pid: 1234, tid: 1240, name: RenderThread  >>> com.example.app <<<`.
    mutating func consumeThreadHeading(_ line: TextLine) throws(ReportParseError) -> Bool {
        var c = line
        guard c.skip("pid: "), c.integer() != nil, c.skip(", tid: "), let tid = c.integer(), c.skip(", name: ") else {
            return false
        }
        var nameEnd = line.end
        if line.hasSuffix(" <<<"), let marker = c.firstIndex(of: ">>> "), marker + 4 <= line.end - 4 {
            // The process name sits between ">>> " and " <<<"; blanks before ">>>" pad the thread name.
            process = process ?? Self.program(line.string(marker + 4..<line.end - 4))
            nameEnd = marker
            while nameEnd > c.position, TextLine.isBlank(line.bytes[nameEnd - 1]) { nameEnd -= 1 }
        }
        sawThreadHeading = true
        // The first thread block is the one that crashed; later ones follow "--- --- ---".
        try addThread(index: tid, name: line.string(c.position..<nameEnd))
        inBacktrace = false
        sanitizerThread = nil
        return true
    }

    /// `signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0`: the signal, the code's name
    /// (its number when it has none) and the fault address (`--------`: none), each once.
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
        if probe.skip(" ("), let close = probe.firstIndex(of: UInt8(ascii: ")")), close > probe.position {
            code = line.string(probe.position..<close)
            c.position = close + 1
        }
        var fault: Address?
        if let marker = c.firstIndex(of: ", fault addr ") {
            c.position = marker + ", fault addr ".utf8.count
            fault = Address(parsing: line.string(c.take { !TextLine.isWhitespace($0) }))
        }
        return ExceptionInfo(signal: line.string(name), code: code, faultAddress: fault)
    }

    /// The first signal line wins; a later one (a second tombstone pasted in) is ignored.
    mutating func mergeSignal(_ signal: ExceptionInfo) {
        var info = exception ?? ExceptionInfo()
        guard info.signal == nil else { return }
        info.signal = signal.signal
        info.code = signal.code
        info.faultAddress = signal.faultAddress ?? info.faultAddress
        exception = info
    }

    /// The ABI's architecture in its canonical spelling (Android's `x86` is i386); an ABI the
    /// table does not know is kept as written.
    var arch: Arch? { abi.map { Arch($0).canonical } }

    mutating func finish() throws(ReportParseError) -> RawReport {
        if let open = abortLines {
            abortLines = nil
            setMessage(open)
        }
        guard threads.contains(where: { !$0.frames.isEmpty }) else {
            throw .invalidReport(format: format, reason: "no \"backtrace:\" with \"#00 pc …\" frames")
        }
        if !sawThreadHeading {
            warnings.append("no \"pid: …, tid: …\" line: the crashed thread's id and the process name are unknown")
        }
        if excerpt {
            warnings.append("no \"backtrace:\" line: every \"#NN pc\" line was read as a frame, as ndk-stack does")
        }
        let app = commandLine ?? process
        return RawReport(
            format: format, kind: .crash, platform: "Android", arch: arch, app: app.map { AppInfo(name: $0) },
            os: fingerprint, timestamp: timestamp, exception: exception, images: images.images, threads: threads,
            warnings: warnings.all)
    }
}
