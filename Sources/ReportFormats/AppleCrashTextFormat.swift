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

    public func matches(_ data: Data) -> Bool {
        guard !JSONText.looksLikeJSON(data) else { return false }
        let head = String(decoding: data.prefix(65536), as: UTF8.self)
        return Self.headerKeys.contains { head.contains($0) }
            && (head.hasPrefix("Thread ") || head.contains("\nThread ") || head.contains("\nLast Exception Backtrace:"))
            && !head.contains("*** Program crashed:")
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        var parser = AppleCrashTextParser(format: id)
        for (number, line) in ReportText.lines(data).enumerated() {
            parser.consume(String(line), lineNumber: number + 1)
        }
        return try parser.finish()
    }
}

/// One pass over the lines of a `.crash` report.
struct AppleCrashTextParser {
    enum Section { case root, thread, lastException, exceptionList, threadState, binaryImages }

    /// A frame as written, before its image is known.
    struct PendingFrame {
        var imageName: String?
        var address: UInt64
    }

    struct PendingThread {
        var index: Int
        var name: String?
        var crashed: Bool
        var frames: [PendingFrame] = []
    }

    let format: String
    var section = Section.root
    var header: [String: String] = [:]
    var threads: [PendingThread] = []
    var threadNames: [Int: String] = [:]
    var images: [BinaryImage] = []
    var sawBinaryImages = false
    var warnings: [String] = []

    init(format: String) { self.format = format }

    // Regex is not Sendable, so each parse builds its own.
    let threadLine = #/^Thread (\d+)( Crashed)?:\s*(.*?)\s*$/#
    let threadNameLine = #/^Thread (\d+) name:\s*(.*?)\s*$/#
    let threadStateLine = #/^Thread \d+ crashed with .*Thread State/#
    let frameLine = #/^(\d+)\s+(.+?)\s+0x([0-9a-fA-F]+)(?:\s+(.*?))?\s*$/#
    let loadPlusOffset = #/^0x([0-9a-fA-F]+) \+ (\d+)$/#
    let imageLine = #/^\s*0x([0-9a-fA-F]+)\s*-\s*0x([0-9a-fA-F]+)\s+(.*?)\s*<([^>]*)>\s*(.*?)\s*$/#
    let headerLine = #/^([A-Za-z][A-Za-z /]*?):\s*(.*?)\s*$/#
    static let archNames: Set<String> = [
        "x86_64", "x86_64h", "i386", "arm64", "arm64e", "arm64_32", "armv7", "armv7s", "armv7k", "armv6", "arm",
        "ppc", "ppc64",
    ]

    mutating func consume(_ raw: String, lineNumber: Int) {
        let line = raw.trimmingTrailingWhitespace()
        if line.hasPrefix("Binary Images:") {
            section = .binaryImages
            sawBinaryImages = true
            return
        }
        if line.hasPrefix("Last Exception Backtrace:") {
            threads.append(PendingThread(
                index: AppleCrashTextFormat.lastExceptionThreadIndex, name: AppleCrashTextFormat.lastExceptionThreadName,
                crashed: false))
            section = .lastException
            return
        }
        if (try? threadStateLine.prefixMatch(in: line)) != nil {
            section = .threadState
            return
        }
        if let m = try? threadLine.wholeMatch(in: line), let index = Int(m.1) {
            let name = m.3.isEmpty ? nil : String(m.3)
            threads.append(PendingThread(index: index, name: name, crashed: m.2 != nil))
            section = .thread
            return
        }
        if let m = try? threadNameLine.wholeMatch(in: line), let index = Int(m.1) {
            var name = String(m.2)
            // "Thread 0 name:  Dispatch queue: com.apple.main-thread" names the thread by its queue.
            if name.hasPrefix("Dispatch queue:") { name = name.dropFirst("Dispatch queue:".count).trimmingCharacters(in: .whitespaces) }
            if !name.isEmpty { threadNames[index] = name }
            section = .root
            return
        }

        switch section {
        case .root:
            if let m = try? headerLine.wholeMatch(in: line), header[String(m.1)] == nil {
                header[String(m.1)] = String(m.2)
            }
        case .threadState:
            if line.isEmpty { section = .root }
        case .thread, .lastException:
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("(") && section == .lastException {
                section = .exceptionList
                consumeExceptionList(line, lineNumber: lineNumber)
            } else if let frame = parseFrame(line, lineNumber: lineNumber) {
                threads[threads.count - 1].frames.append(frame)
            } else if line.isEmpty {
                if section == .thread || !(threads.last?.frames.isEmpty ?? true) { section = .root }
            } else if line.first?.isNumber == true {
                warnings.append("line \(lineNumber): frame not understood: \(line)")
            } else {
                section = .root
                consume(raw, lineNumber: lineNumber)
            }
        case .exceptionList:
            consumeExceptionList(line, lineNumber: lineNumber)
        case .binaryImages:
            if line.trimmingCharacters(in: .whitespaces).isEmpty { return }
            if let image = parseImage(line, lineNumber: lineNumber) {
                images.append(image)
            } else if line.first?.isWhitespace == true || line.hasPrefix("0x") {
                warnings.append("line \(lineNumber): binary image not understood: \(line.trimmingCharacters(in: .whitespaces))")
            } else {
                section = .root
                consume(raw, lineNumber: lineNumber)
            }
        }
    }

    /// `(0x1a2b 0x3c4d …)`, possibly over several lines.
    mutating func consumeExceptionList(_ line: String, lineNumber: Int) {
        var text = Substring(line.trimmingCharacters(in: .whitespaces))
        if text.hasPrefix("(") { text = text.dropFirst() }
        let closed = text.hasSuffix(")")
        if closed { text = text.dropLast() }
        for token in text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," }) {
            if let address = Address(parsing: token), token.hasPrefix("0x") {
                threads[threads.count - 1].frames.append(PendingFrame(imageName: nil, address: address.value))
            } else {
                warnings.append("line \(lineNumber): not an address in Last Exception Backtrace: \(token)")
            }
        }
        if closed { section = .root }
    }

    /// `0   libsystem_kernel.dylib   0x00007fff61bc6c2a 0x7fff61bc6000 + 3114`, or with
    /// `symbol + offset` / `symbol (file:line)` in place of the load address.
    mutating func parseFrame(_ line: String, lineNumber: Int) -> PendingFrame? {
        guard let m = try? frameLine.wholeMatch(in: line), let pc = UInt64(m.3, radix: 16) else { return nil }
        let image = m.2 == "???" ? nil : String(m.2)
        if let rest = m.4, let load = try? loadPlusOffset.wholeMatch(in: rest),
            let base = UInt64(load.1, radix: 16), let offset = UInt64(load.2)
        {
            let (sum, overflow) = base.addingReportingOverflow(offset)
            if overflow || sum != pc {
                warnings.append("line \(lineNumber): 0x\(load.1) + \(load.2) is not the frame's address 0x\(m.3)")
            }
        }
        return PendingFrame(imageName: image, address: pc)
    }

    /// `0x10864e000 - 0x10ee0ffff +YetAnotherMac x86_64 (400.9.4 - 1.0.0) <2d90…> /path`.
    mutating func parseImage(_ line: String, lineNumber: Int) -> BinaryImage? {
        guard let m = try? imageLine.wholeMatch(in: line), let start = UInt64(m.1, radix: 16),
            let end = UInt64(m.2, radix: 16)
        else { return nil }
        guard end >= start else {
            warnings.append("line \(lineNumber): binary image ends before it starts: \(line.trimmingCharacters(in: .whitespaces))")
            return nil
        }
        var middle = String(m.3).trimmingCharacters(in: .whitespaces)
        if middle.hasPrefix("+") { middle.removeFirst() }
        var arch: String?
        // A trailing "(…)" is the version, or the arch in reports that print "(x86_64)".
        if middle.hasSuffix(")"), let open = middle.lastIndex(of: "(") {
            let inner = String(middle[middle.index(after: open)..<middle.index(before: middle.endIndex)])
            if Self.archNames.contains(inner) { arch = inner }
            middle = String(middle[..<open]).trimmingCharacters(in: .whitespaces)
        }
        if arch == nil, let space = middle.lastIndex(of: " "), Self.archNames.contains(String(middle[middle.index(after: space)...])) {
            arch = String(middle[middle.index(after: space)...])
            middle = String(middle[..<space]).trimmingCharacters(in: .whitespaces)
        }
        let name = middle.isEmpty ? "???" : middle
        let path = m.5.isEmpty ? nil : String(m.5)
        let id = ImageIdentifier.validated(String(m.4), image: name, byteCounts: ImageIdentifier.appleByteCounts, warnings: &warnings)
        // The end address is the image's last byte.
        return BinaryImage(name: name, path: path, id: id, arch: arch, loadAddress: Address(start), size: end - start + 1)
    }

    mutating func finish() throws(ReportParseError) -> RawReport {
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
        let rawThreads = threads.map { thread in
            let frames = thread.frames.enumerated().map { position, frame in
                RawFrame(
                    address: Address(frame.address), kind: position == 0 ? .pc : .returnAddress,
                    imageIndex: imageIndex(for: frame, unknown: &unknownImages))
            }
            return RawThread(
                index: thread.index, name: thread.name ?? threadNames[thread.index],
                crashed: thread.crashed || (!anyMarked && thread.index == crashedIndex && thread.index >= 0), frames: frames)
        }
        for name in unknownImages {
            warnings.append("frames name image '\(name)', which \"Binary Images:\" does not list at their address")
        }
        return RawReport(
            format: format, kind: .crash, platform: platform, arch: arch, app: app, os: header["OS Version"],
            timestamp: header["Date/Time"], exception: exception, images: images, threads: rawThreads, warnings: warnings)
    }

    /// The image named in the frame's line, when one of that name contains its address.
    func imageIndex(for frame: PendingFrame, unknown: inout [String]) -> Int? {
        guard let name = frame.imageName else { return nil }
        if let index = images.indices.first(where: { images[$0].name == name && images[$0].contains(frame.address) }) {
            return index
        }
        if !unknown.contains(name) { unknown.append(name) }
        return nil
    }

    var arch: String? {
        if let code = header["Code Type"]?.uppercased() {
            if code.hasPrefix("X86-64") { return "x86_64" }
            if code.hasPrefix("ARM-64E") || code.hasPrefix("ARM64E") { return "arm64e" }
            if code.hasPrefix("ARM-64") || code.hasPrefix("ARM64") { return "arm64" }
            if code.hasPrefix("X86") { return "i386" }
            if code.hasPrefix("ARM") { return "arm" }
        }
        return images.first?.arch
    }

    var platform: String? {
        guard let os = header["OS Version"] else { return nil }
        if os.hasPrefix("iPhone OS") || os.hasPrefix("iOS") { return "iOS" }
        if os.hasPrefix("Mac OS") || os.hasPrefix("macOS") { return "macOS" }
        if os.hasPrefix("tvOS") { return "tvOS" }
        if os.hasPrefix("watchOS") { return "watchOS" }
        return nil
    }

    var app: AppInfo? {
        let process = header["Process"].map { name in
            name.range(of: " [").map { String(name[..<$0.lowerBound]) } ?? name
        }
        guard process != nil || header["Version"] != nil else { return nil }
        // "1.0 (45)": short version, then build.
        var version = header["Version"]
        var build: String?
        if let v = version, v.hasSuffix(")"), let open = v.lastIndex(of: "(") {
            build = String(v[v.index(after: open)..<v.index(before: v.endIndex)])
            version = v[..<open].trimmingCharacters(in: .whitespaces)
        }
        return AppInfo(name: process ?? header["Identifier"], version: version, build: build)
    }

    var exception: ExceptionInfo? {
        guard let type = header["Exception Type"] else { return nil }
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
            type: name, signal: signal, code: codes, faultAddress: fault,
            message: header["Exception Reason"] ?? header["Termination Reason"] ?? header["Exception Message"])
    }
}

extension String {
    func trimmingTrailingWhitespace() -> String {
        var s = Substring(self)
        while let last = s.last, last.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
