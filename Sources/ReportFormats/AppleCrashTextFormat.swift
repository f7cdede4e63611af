import Foundation
import ReportModel

/// Apple's crash report text (`.crash`, report versions 104 and later): header fields, one block
/// per thread, `Last Exception Backtrace:`, `Binary Images:`.
///
/// Hand-written line parsing: the format has no grammar, only a column layout that has drifted
/// across OS releases (image names with spaces, uuids with or without dashes, optional arch and
/// version columns), and no library for it exists in Swift.
public struct AppleCrashTextFormat: ReportFormat {
    public let id = "apple-crash"
    /// The pseudo-thread that carries `Last Exception Backtrace:`.
    public static let lastExceptionThreadIndex = -1
    public static let lastExceptionThreadName = "Last Exception Backtrace"

    static let headerKeys = ["Incident Identifier:", "Exception Type:", "Crashed Thread:", "Triggered by Thread:", "Binary Images:"]

    public init() {}

    /// Fields only an Apple crash report starts a line with; two of them make a header-only report.
    static let headerOnlyKeys = ["Incident Identifier:", "Hardware Model:", "Process:", "Code Type:", "OS Version:", "Report Version:", "Exception Type:"]

    public func matches(_ data: Data) -> Bool {
        guard !JSONText.looksLikeJSON(data) else { return false }
        let head = String(decoding: data.prefix(65536), as: UTF8.self)
        guard !head.contains("*** Program crashed:") else { return false }
        if Self.headerKeys.contains(where: { head.contains($0) })
            && (head.hasPrefix("Thread ") || head.contains("\nThread ") || head.contains("\nLast Exception Backtrace:")) {
            return true
        }
        // A header with no threads at all is still this format, refused by name in `parse`.
        return Self.headerOnlyKeys.filter { head.hasPrefix($0) || head.contains("\n" + $0) }.count >= 2
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        var parser = AppleCrashTextParser(format: id)
        for line in TextLine.lines(data) {
            try parser.consume(line)
        }
        return try parser.finish()
    }
}

/// One pass over the lines of a `.crash` report.
struct AppleCrashTextParser {
    enum Section { case root, thread, lastException, exceptionList, threadState, binaryImages, applicationInfo }

    /// A frame as written, before its image is known.
    struct PendingFrame {
        var imageName: String?
        var address: UInt64
        /// The name the device printed (`JSValueIsString + 155`), never the `0xLOAD + offset` form.
        var symbol: String?
        var symbolOffset: UInt64?
    }

    struct PendingThread {
        var index: Int
        var name: String?
        var crashed: Bool
        var frames: [PendingFrame] = []
        /// `recrash` after KSCrash's "Handler crashed while reporting:" line.
        var part: String?
    }

    let format: String
    var section = Section.root
    var header: [String: String] = [:]
    var threads: [PendingThread] = []
    var threadNames: [Int: String] = [:]
    var images: [BinaryImage] = []
    var sawBinaryImages = false
    /// Set by KSCrash's "Handler crashed while reporting:": the threads after it are the crash
    /// handler's own, kept as a labelled part that never decides the group.
    var part: String?
    /// `Application Specific Information:` lines, and `Fatal error:` lines outside any thread.
    var applicationInfo: [String] = []
    var fatalErrors: [String] = []
    var warnings = WarningLog()
    var limits = LimitCounter()

    init(format: String) { self.format = format }

    mutating func consume(_ line: TextLine) throws(ReportParseError) {
        if line.hasPrefix("Binary Images:") {
            section = .binaryImages
            sawBinaryImages = true
            return
        }
        if line.hasPrefix("Last Exception Backtrace:") {
            try limits.addThread()
            threads.append(PendingThread(
                index: AppleCrashTextFormat.lastExceptionThreadIndex, name: AppleCrashTextFormat.lastExceptionThreadName,
                crashed: false))
            section = .lastException
            return
        }
        if line.hasPrefix("Handler crashed while reporting") {
            part = "recrash"
            section = .root
            return
        }
        if line.hasPrefix("Thread "), try consumeThreadHeading(line) { return }

        switch section {
        case .root:
            if line.firstIndex(of: "Fatal error: ") != nil {
                fatalErrors.append(line.restTrimmed)
            } else if let (key, value) = Self.headerField(line) {
                if key == "Application Specific Information" {
                    section = .applicationInfo
                    if !value.isEmpty { applicationInfo.append(value) }
                } else if header[key] == nil {
                    header[key] = value
                }
            }
        case .applicationInfo:
            if line.isBlankToEnd || line.hasPrefix("Application Specific ") {
                section = .root
                if !line.isBlankToEnd { try consume(line) }
            } else {
                applicationInfo.append(line.restTrimmed)
            }
        case .threadState:
            if line.isAtEnd { section = .root }
        case .thread, .lastException:
            if section == .lastException && line.trimmed.first == UInt8(ascii: "(") {
                section = .exceptionList
                try consumeExceptionList(line)
            } else if let frame = parseFrame(line) {
                try limits.add(inThread: threads[threads.count - 1].index)
                threads[threads.count - 1].frames.append(frame)
            } else if line.isAtEnd {
                if section == .thread || !(threads.last?.frames.isEmpty ?? true) { section = .root }
            } else if line.first.map(TextLine.isDigit) == true {
                warnings.append("line \(line.number): frame not understood: \(line.excerpt)")
            } else {
                section = .root
                try consume(line)
            }
        case .exceptionList:
            try consumeExceptionList(line)
        case .binaryImages:
            if line.isBlankToEnd { return }
            if let image = parseImage(line) {
                try limits.add(images: 1)
                images.append(image)
            } else if line.first.map(TextLine.isBlank) == true || line.hasPrefix("0x") {
                warnings.append("line \(line.number): binary image not understood: \(line.trimmed.excerpt)")
            } else {
                section = .root
                try consume(line)
            }
        }
    }

    /// `Thread 3 Crashed:  name`, `Thread 3 name:  Dispatch queue: …` and `Thread 3 crashed with
    /// ARM Thread State (64-bit):`; false when the line is none of them.
    mutating func consumeThreadHeading(_ line: TextLine) throws(ReportParseError) -> Bool {
        var cursor = line
        guard cursor.skip("Thread "), let index = cursor.integer() else { return false }
        if cursor.skip(" crashed with "), cursor.firstIndex(of: "Thread State") != nil {
            section = .threadState
            return true
        }
        if cursor.skip(" name:") {
            var name = cursor.restTrimmed
            // "Thread 0 name:  Dispatch queue: com.apple.main-thread" names the thread by its queue.
            if name.hasPrefix("Dispatch queue:") { name = name.dropFirst("Dispatch queue:".count).trimmingCharacters(in: .whitespaces) }
            if !name.isEmpty { threadNames[index] = name }
            section = .root
            return true
        }
        let crashed = cursor.skip(" Crashed")
        guard cursor.skip(":") else { return false }
        // macOS writes "Thread 0::  Dispatch queue: com.apple.main-thread" (and "Thread 2 Crashed::").
        var name = cursor.restTrimmed
        if name.hasPrefix(":") { name = name.dropFirst().trimmingCharacters(in: .whitespaces) }
        if name.hasPrefix("Dispatch queue:") { name = name.dropFirst("Dispatch queue:".count).trimmingCharacters(in: .whitespaces) }
        try limits.addThread()
        threads.append(PendingThread(index: index, name: name.isEmpty ? nil : name, crashed: crashed && part == nil, part: part))
        section = .thread
        return true
    }

    /// `Key Words:  value`: the key is a letter followed by letters, blanks and slashes up to the first colon.
    static func headerField(_ line: TextLine) -> (String, String)? {
        var cursor = line
        guard let first = cursor.first, TextLine.isLetter(first) else { return nil }
        let key = cursor.take { TextLine.isLetter($0) || TextLine.isBlank($0) || $0 == UInt8(ascii: "/") }
        guard cursor.skip(":") else { return nil }
        return (line.string(key), cursor.restTrimmed)
    }

    /// `(0x1a2b 0x3c4d …)`, possibly over several lines.
    mutating func consumeExceptionList(_ line: TextLine) throws(ReportParseError) {
        var text = Substring(line.restTrimmed)
        if text.hasPrefix("(") { text = text.dropFirst() }
        let closed = text.hasSuffix(")")
        if closed { text = text.dropLast() }
        for token in text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," }) {
            if let address = Address(parsing: token), token.hasPrefix("0x") {
                try limits.add(inThread: AppleCrashTextFormat.lastExceptionThreadIndex)
                threads[threads.count - 1].frames.append(PendingFrame(imageName: nil, address: address.value))
            } else {
                warnings.append("line \(line.number): not an address in Last Exception Backtrace: \(token.prefix(120))")
            }
        }
        if closed { section = .root }
    }

    /// `0   libsystem_kernel.dylib   0x00007fff61bc6c2a 0x7fff61bc6000 + 3114`, or with
    /// `symbol + offset` / `symbol (file:line)` in place of the load address. Image names may
    /// contain blanks: the name ends before the first blank-separated `0x…` that is a whole word.
    mutating func parseFrame(_ line: TextLine) -> PendingFrame? {
        var cursor = line
        guard cursor.integer() != nil, cursor.skipBlanks() > 0, !cursor.isAtEnd else { return nil }
        let nameStart = cursor.position
        // Each blank run is examined once and the scan resumes after it, so this stays linear.
        var search = nameStart + 1
        while let blank = cursor.firstBlank(from: search) {
            var candidate = cursor
            candidate.position = blank
            candidate.skipBlanks()
            search = candidate.position
            guard let pc = candidate.hexNumber() else { continue }
            guard candidate.isAtEnd || candidate.first.map(TextLine.isBlank) == true else {
                search = candidate.position
                continue
            }
            guard let value = pc.value else { return nil }
            let name = line.string(line.trimming(nameStart..<blank))
            candidate.skipBlanks()
            var frame = PendingFrame(imageName: name == "???" ? nil : name, address: value)
            if candidate.hasPrefix("0x") {
                checkLoadPlusOffset(candidate, pc: value, pcText: pc.text)
                // KSCrash's text (and symbolicated Apple reports) add the name after the
                // offset: `0x28000 + 30048 (-[Crasher dereferenceBadPointer] + 24)`.
                let rest = candidate.rest
                if rest.hasSuffix(")"), let open = rest.range(of: " (") {
                    (frame.symbol, frame.symbolOffset) = Self.deviceSymbol(
                        String(rest[open.upperBound..<rest.index(before: rest.endIndex)]), image: frame.imageName)
                }
            } else {
                (frame.symbol, frame.symbolOffset) = Self.deviceSymbol(candidate.rest, image: frame.imageName)
            }
            return frame
        }
        return nil
    }

    /// `JSValueIsString + 155`, `main (main.swift:5)`, `-[A b] (in App) + 12 (A.m:3)`: the name
    /// exactly as printed and the decimal offset after it. Nil for nothing or `<redacted>`, which
    /// names no function and would merge unrelated frames.
    static func deviceSymbol(_ text: String, image: String?) -> (String?, UInt64?) {
        // Runs once per frame: Foundation's trimming and backward `range(of:)` (through
        // NSString) were most of parsing a large `.crash` (scripts/bench-parse.sh).
        var name = Substring(text.trimmingWhitespace(newlines: false))
        // A trailing "(file:line)" is where, not who.
        if name.hasSuffix(")"), let open = lastRange(of: " (", in: name), name[open.upperBound...].contains(":") {
            name = name[..<open.lowerBound]
        }
        var offset: UInt64?
        if let plus = lastRange(of: " + ", in: name), let value = UInt64(name[plus.upperBound...]) {
            offset = value
            name = name[..<plus.lowerBound]
        }
        if let image {
            let suffix = " (in \(image))"
            if name.hasSuffix(suffix) { name = name.dropLast(suffix.count) }
        }
        name = name.drop { $0 == " " }
        guard !name.isEmpty, name != "<redacted>", name != "???" else { return (nil, nil) }
        return (String(name), offset)
    }

    /// The last occurrence of the ASCII `needle` in `text`, byte for byte.
    private static func lastRange(of needle: StaticString, in text: Substring) -> Range<Substring.Index>? {
        let bytes = text.utf8
        let count = needle.utf8CodeUnitCount
        guard bytes.count >= count else { return nil }
        return needle.withUTF8Buffer { pattern -> Range<Substring.Index>? in
            var start = bytes.index(bytes.endIndex, offsetBy: -count)
            while true {
                if bytes[start...].starts(with: pattern) { return start..<bytes.index(start, offsetBy: count) }
                if start == bytes.startIndex { return nil }
                start = bytes.index(before: start)
            }
        }
    }

    /// `0x7fff61bc6000 + 3114` after the pc must add up to it.
    mutating func checkLoadPlusOffset(_ rest: TextLine, pc: UInt64, pcText: String) {
        var cursor = rest
        guard let base = cursor.hexNumber(), cursor.skip(" + ") else { return }
        let digits = cursor.take(while: TextLine.isDigit)
        guard !digits.isEmpty, cursor.isAtEnd || cursor.first.map(TextLine.isBlank) == true,
            let load = base.value, let offset = UInt64(cursor.string(digits))
        else { return }
        let (sum, overflow) = load.addingReportingOverflow(offset)
        if overflow || sum != pc {
            warnings.append("line \(rest.number): 0x\(base.text) + \(cursor.string(digits)) is not the frame's address 0x\(pcText)")
        }
    }

    /// `0x10864e000 - 0x10ee0ffff +YetAnotherMac x86_64 (400.9.4 - 1.0.0) <2d90…> /path`.
    mutating func parseImage(_ line: TextLine) -> BinaryImage? {
        var cursor = line
        cursor.skipBlanks()
        guard let startHex = cursor.hexNumber() else { return nil }
        cursor.skipBlanks()
        guard cursor.skip("-") else { return nil }
        cursor.skipBlanks()
        guard let endHex = cursor.hexNumber(), cursor.skipBlanks() > 0,
            let open = cursor.firstIndex(of: UInt8(ascii: "<")),
            let close = cursor.firstIndex(of: UInt8(ascii: ">"), from: open + 1),
            let start = startHex.value, let end = endHex.value
        else { return nil }
        guard end >= start else {
            warnings.append("line \(line.number): binary image ends before it starts: \(line.trimmed.excerpt)")
            return nil
        }
        var middle = line.string(line.trimming(cursor.position..<open))
        if middle.hasPrefix("+") { middle.removeFirst() }
        var arch: Arch?
        // A trailing "(…)" is the version, or the arch in reports that print "(x86_64)".
        if middle.hasSuffix(")"), let paren = middle.lastIndex(of: "(") {
            arch = Arch(canonicalName: middle[middle.index(after: paren)..<middle.index(before: middle.endIndex)])
            middle = String(middle[..<paren]).trimmingCharacters(in: .whitespaces)
        }
        if arch == nil, let space = middle.lastIndex(of: " "), let named = Arch(canonicalName: middle[middle.index(after: space)...]) {
            arch = named
            middle = String(middle[..<space]).trimmingCharacters(in: .whitespaces)
        }
        let name = middle.isEmpty ? "???" : middle
        let pathRange = line.trimming(close + 1..<line.end)
        let path = pathRange.isEmpty ? nil : line.string(pathRange)
        let id = BuildID.reported(line.string(open + 1..<close), image: name, lengths: .appleReport, warnings: &warnings)
        // The end address is the image's last byte; `0x0 - 0xffffffffffffffff` (a placeholder real
        // reports print) spans 2^64 bytes, one more than a size can hold.
        let (size, overflow) = (end - start).addingReportingOverflow(1)
        return BinaryImage(name: name, path: path, id: id, arch: arch, loadAddress: Address(start), size: overflow ? UInt64.max : size)
    }

    mutating func finish() throws(ReportParseError) -> RawReport {
        if threads.isEmpty && !sawBinaryImages {
            throw .invalidReport(
                format: format,
                reason: "Apple crash report with no threads: the header is there, but no \"Thread N:\" backtrace and no \"Binary Images:\" (was the report cut short?)")
        }
        guard threads.contains(where: { !$0.frames.isEmpty }) else {
            throw .invalidReport(format: format, reason: "no thread backtraces (expected \"Thread 0:\" followed by frames)")
        }
        guard sawBinaryImages else {
            throw .invalidReport(format: format, reason: "no \"Binary Images:\" section, so no frame can be matched to an image (was the report cut short?)")
        }
        guard !images.isEmpty else {
            throw .invalidReport(format: format, reason: "the \"Binary Images:\" section lists no image")
        }
        let crashedIndex = (header["Crashed Thread"] ?? header["Triggered by Thread"]).flatMap { Int($0.prefix { $0.isNumber }) }
        let anyMarked = threads.contains { $0.crashed }
        var unknownImages: [String] = []
        var unknownSeen: Set<String> = []
        let imagesByName = ImagesByName(images)
        let rawThreads = threads.map { thread in
            let frames = thread.frames.enumerated().map { position, frame in
                RawFrame(
                    address: Address(frame.address), kind: position == 0 ? .pc : .returnAddress,
                    imageIndex: imagesByName.index(for: frame, unknown: &unknownImages, seen: &unknownSeen),
                    symbol: frame.symbol, symbolOffset: frame.symbolOffset)
            }
            return RawThread(
                index: thread.index, name: thread.name ?? threadNames[thread.index],
                crashed: thread.crashed || (!anyMarked && thread.index == crashedIndex && thread.index >= 0 && thread.part == nil),
                frames: frames, part: thread.part)
        }
        for name in unknownImages {
            warnings.append("frames name image '\(name)', which \"Binary Images:\" does not list at their address")
        }
        // macOS writes the per-device key as "Anonymous UUID" (the `.ips` twin's crashReporterKey).
        let device = DeviceInfo(
            model: header["Hardware Model"], osVersion: OSVersionNumber.of(header["OS Version"]),
            id: header["CrashReporter Key"] ?? header["Anonymous UUID"])
        return RawReport(
            format: format, kind: .crash, platform: platform, arch: arch, app: app, os: header["OS Version"], device: device,
            timestamp: header["Date/Time"], exception: exception, images: images, threads: rawThreads, warnings: warnings.all)
    }

    /// "Code Type: X86-64 (Native)" in its canonical spelling, else the first image's arch.
    var arch: Arch? {
        if let code = header["Code Type"].map({ Arch($0) }), code.isKnown { return code.canonical }
        return images.first?.arch
    }

    var platform: String? { header["OS Version"].flatMap(Self.platform(os:)) }

    /// The platform an Apple OS version string names (`iPhone OS 16.0 (20A362)` is iOS); shared
    /// by every Apple format.
    static func platform(os: String) -> String? {
        if os.hasPrefix("iPhone OS") || os.hasPrefix("iOS") || os.hasPrefix("iPadOS") { return "iOS" }
        if os.hasPrefix("Mac OS") || os.hasPrefix("macOS") { return "macOS" }
        if os.hasPrefix("tvOS") || os.hasPrefix("Apple TVOS") { return "tvOS" }
        if os.hasPrefix("watchOS") || os.hasPrefix("Watch OS") { return "watchOS" }
        if os.hasPrefix("visionOS") || os.hasPrefix("xrOS") { return "visionOS" }
        return nil
    }

    var app: AppInfo? {
        let process = header["Process"].map { name in
            name.range(of: " [").map { String(name[..<$0.lowerBound]) } ?? name
        }
        // The main executable: Process, else Path's last component, else the bundle id.
        let name = process ?? header["Path"].map(ReportText.basename) ?? header["Identifier"]
        guard name != nil || header["Version"] != nil else { return nil }
        // "1.0 (45)": short version, then build.
        // "???" is how the report says it does not know.
        var version = header["Version"].flatMap { $0 == "???" ? nil : $0 }
        var build: String?
        if let v = version, v.hasSuffix(")"), let open = v.lastIndex(of: "(") {
            build = String(v[v.index(after: open)..<v.index(before: v.endIndex)])
            version = v[..<open].trimmingCharacters(in: .whitespaces)
        }
        return AppInfo(name: name, version: version, build: build)
    }

    var exception: ExceptionInfo? {
        guard let type = header["Exception Type"] else { return message.map { ExceptionInfo(message: $0) } }
        var name = type
        var signal: String?
        if let open = type.lastIndex(of: "("), type.hasSuffix(")") {
            signal = String(type[type.index(after: open)..<type.index(before: type.endIndex)])
            name = type[..<open].trimmingCharacters(in: .whitespaces)
        } else if type.hasPrefix("SIG") {
            signal = type
        }
        let codes = header["Exception Codes"]
        var fault: Address?
        for text in [header["Exception Subtype"], codes].compactMap({ $0 }) {
            if let at = text.range(of: " at 0x") {
                fault = Address(parsing: text[text.index(at.upperBound, offsetBy: -2)...].prefix { !$0.isWhitespace })
                if fault != nil { break }
            }
        }
        return ExceptionInfo(
            type: name, signal: signal, code: Self.code(codes, subtype: header["Exception Subtype"]), faultAddress: fault,
            message: message)
    }

    /// `Exception Codes` and `Exception Subtype` in one field (the `.ips` `codes` and `subtype`
    /// likewise), so both forms of one crash carry the same text.
    static func code(_ codes: String?, subtype: String?) -> String? {
        let parts = [codes, subtype].compactMap { $0?.trimmingWhitespace(newlines: false) }.filter { !$0.isEmpty }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    /// What the report says went wrong, one fact per line: the exception's reason, Swift's
    /// `Fatal error:` lines, `Application Specific Information:`; else the termination reason.
    var message: String? {
        var lines: [String] = []
        for line in [header["Exception Reason"], header["Exception Message"]].compactMap({ $0 }) + fatalErrors + applicationInfo {
            let text = line.trimmingWhitespace(newlines: false)
            if !text.isEmpty, !lines.contains(where: { UTF8Search.contains($0, text) }) { lines.append(text) }
        }
        if lines.isEmpty, let termination = header["Termination Reason"], !termination.isEmpty { lines.append(termination) }
        return lines.isEmpty ? nil : lines.joined(separator: "\n")
    }
}


/// Images by name, each name's images sorted by load address, so matching a frame to the image
/// its line names is a binary search rather than a scan of every image.
struct ImagesByName {
    private let byName: [String: [(start: UInt64, index: Int)]]
    private let images: [BinaryImage]

    init(_ images: [BinaryImage]) {
        self.images = images
        var byName: [String: [(start: UInt64, index: Int)]] = [:]
        for (index, image) in images.enumerated() { byName[image.name, default: []].append((image.loadAddress.value, index)) }
        self.byName = byName.mapValues { $0.sorted { $0.start < $1.start } }
    }

    /// The image named in the frame's line, when one of that name contains its address.
    func index(for frame: AppleCrashTextParser.PendingFrame, unknown: inout [String], seen: inout Set<String>) -> Int? {
        guard let name = frame.imageName else { return nil }
        if let candidates = byName[name] {
            var low = 0
            var high = candidates.count
            while low < high {
                let middle = (low + high) / 2
                if candidates[middle].start <= frame.address { low = middle + 1 } else { high = middle }
            }
            if low > 0, images[candidates[low - 1].index].contains(frame.address) { return candidates[low - 1].index }
        }
        if seen.insert(name).inserted { unknown.append(name) }
        return nil
    }
}

/// An old-style `.ips`: line 1 is a JSON header (`bug_type` 109 on iOS ≤ 14, 309 in Xcode's
/// Devices window export), the rest is plain `.crash` text. Detected by that structure, so a
/// `{` somewhere in the text body never sends it to the JSON `.ips` reader.
public struct AppleLegacyIPSFormat: ReportFormat {
    public let id = "apple-ips-legacy"
    /// Crash reports; other bug types (hangs, jetsam, …) have a different body.
    static let crashBugTypes: Set<String> = ["109", "309"]

    public init() {}

    public func matches(_ data: Data) -> Bool {
        guard JSONText.looksLikeJSON(data), let (header, rest) = JSONText.headerLine(data) else { return false }
        let line = data[header]
        return JSONText.contains(line, "\"bug_type\"")
            && line.last(where: { !TextLine.isWhitespace($0) }) == UInt8(ascii: "}")
            && AppleCrashTextFormat().matches(Data(data[rest...].prefix(65536)))
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        guard let (headerRange, _) = JSONText.headerLine(data) else {
            throw .invalidReport(format: id, reason: "no JSON header line")
        }
        let header = try ExactJSON.decode(IPSHeader.self, from: Data(data[headerRange]), format: id)
        if let type = header.bugType?.text, !Self.crashBugTypes.contains(type) {
            throw .invalidReport(format: id, reason: "bug_type \(type) is not a crash report (109 or 309)")
        }
        var parser = AppleCrashTextParser(format: id)
        var sawHeader = false
        for line in TextLine.lines(data) {
            // Line numbers in warnings stay those of the file: the header line is read, not removed.
            if !sawHeader {
                sawHeader = !line.isBlankToEnd
                continue
            }
            try parser.consume(line)
        }
        var report = try parser.finish()
        func known(_ s: String?) -> String? { s?.isEmpty == false ? s : nil }
        var app = report.app ?? AppInfo()
        app.name = app.name ?? known(header.appName) ?? known(header.name)
        app.version = app.version ?? known(header.appVersion)
        app.build = app.build ?? known(header.buildVersion)
        report.app = app
        report.os = report.os ?? known(header.osVersion)
        if report.device?.osVersion == nil, let number = OSVersionNumber.of(report.os) {
            report.device = DeviceInfo(model: report.device?.model, osVersion: number, id: report.device?.id)
        }
        report.platform = report.platform ?? report.os.flatMap(AppleCrashTextParser.platform(os:))
        report.timestamp = report.timestamp ?? known(header.timestamp)
        return report
    }
}
