import Foundation
import ReportModel

/// AddressSanitizer, HWAddressSanitizer and the other compiler-rt sanitizers' error reports, as
/// a process writes them to stderr (Linux) or logcat (Android, prefixes removed by
/// `LogcatPrefix`): `==PID==ERROR: AddressSanitizer: heap-use-after-free on address …`, then
/// stacks of `#N 0xPC [in function] (module+0xOFFSET) [(BuildId: …)]`.
///
/// `module+0xOFFSET` is the pc minus the module's load bias: a file address, so images follow
/// the tombstone convention (`FileAddressImages`). The runtime prints every frame already moved
/// back into its call instruction (`at pc 0x…5200` is printed `#0 0x…51ff` on x86-64), so every
/// frame is a `.pc`. A frame symbolized on the device (`#0 0x… in main /src/a.c:5:3`) has no
/// module: it keeps its runtime address and the function name only (docs/formats.md, "Sanitizer").
public struct SanitizerReportFormat: ReportFormat {
    public let id = "sanitizer"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        guard !JSONText.looksLikeJSON(data) else { return false }
        func has(_ needle: String) -> Bool { JSONText.head(data, contains: needle, window: data.count) }
        return has("ERROR: ") && has("Sanitizer: ") && has("#0 0x")
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        var parser = SanitizerParser(format: id)
        for line in TextLine.lines(data) {
            try parser.consume(LogcatPrefix.strip(line).trimmed)
        }
        return try parser.finish()
    }

    /// One part per `ERROR:` line (a run with `halt_on_error=0` reports several), each starting
    /// at the `=====` rule printed just before it.
    public func split(_ data: Data) -> [Data] {
        var starts: [Int] = []
        var rule: Int?
        for line in TextLine.lines(data) {
            let text = LogcatPrefix.strip(line).trimmed
            if text.hasPrefix("=========") {
                rule = line.position
                continue
            }
            if SanitizerText.errorLine(text) != nil { starts.append(rule ?? line.position) }
            rule = nil
        }
        return ReportSplit.pieces(data, startingAt: starts)
    }
}

/// The lines sanitizer reports are made of, shared with tombstones, whose abort message can
/// hold an HWASan report.
enum SanitizerText {
    /// `==123==ERROR: AddressSanitizer: heap-use-after-free on address 0x… at pc 0x… bp … sp …`.
    struct ErrorLine {
        /// The error kind: `heap-use-after-free`, `SEGV`, `tag-mismatch`, `detected`.
        var type: String
        /// The line from the tool's name on: `AddressSanitizer: heap-use-after-free on address 0x…`.
        var message: String
        var faultAddress: Address?
        /// `T0` in `… T0)` or `thread T0`.
        var thread: Int?
    }

    static func errorLine(_ line: TextLine) -> ErrorLine? {
        var c = line
        if c.skip("==") {
            guard !c.take(while: TextLine.isDigit).isEmpty, c.skip("==") else { return nil }
        }
        guard c.skip("ERROR: ") else { return nil }
        let messageStart = c.position
        let tool = c.take { TextLine.isLetter($0) }
        guard tool.count > "Sanitizer".utf8.count, line.matches("Sanitizer", at: tool.upperBound - "Sanitizer".utf8.count),
            c.skip(": ")
        else { return nil }
        let type = c.take { !TextLine.isBlank($0) && $0 != UInt8(ascii: ":") }
        guard !type.isEmpty else { return nil }
        var fault: Address?
        if let on = c.firstIndex(of: " address ") {
            var a = c
            a.position = on + " address ".utf8.count
            fault = a.hexNumber().flatMap { $0.value }.map { Address($0) }
        }
        var thread: Int?
        if let t = c.firstIndex(of: " T"), let n = Int(line.string(t + 2..<(line.bytes[(t + 2)..<line.end].firstIndex { !TextLine.isDigit($0) } ?? line.end))) {
            thread = n
        }
        return ErrorLine(type: line.string(type), message: line.string(messageStart..<line.end), faultAddress: fault, thread: thread)
    }

    /// `SUMMARY: AddressSanitizer: heap-use-after-free (/a.out+0x11ff) …` → `heap-use-after-free`,
    /// the runtime's own name for the error (`double-free` where the ERROR line says `attempting double-free`).
    static func summaryType(_ line: TextLine) -> String? {
        var c = line
        guard c.skip("SUMMARY: ") else { return nil }
        let tool = c.take { TextLine.isLetter($0) }
        guard tool.count > "Sanitizer".utf8.count, c.skip(": ") else { return nil }
        let type = c.take { !TextLine.isBlank($0) }
        return type.isEmpty ? nil : line.string(type)
    }

    /// `    #0 0x55a93d1963b4 in use_after_free (/tmp/a.out+0x1253b4) (BuildId: 2d24…)`.
    struct Frame {
        var number: Int
        var address: UInt64
        var function: Range<Int>?
        var module: Range<Int>?
        var offset: UInt64?
        var buildID: Range<Int>?

        /// The model's frame: at the module offset in its image, or at the runtime address
        /// without an image when the line names no module.
        func raw(
            _ line: TextLine, images: inout FileAddressImages, arch: Arch?, warnings: inout WarningLog,
            limits: inout LimitCounter
        ) throws(ReportParseError) -> RawFrame {
            var name = function.map(line.string)
            var symbolOffset: UInt64?
            if let text = name, let plus = text.range(of: "+0x", options: .backwards),
                let value = UInt64(text[plus.upperBound...], radix: 16)
            {
                name = String(text[..<plus.lowerBound])
                symbolOffset = value
            }
            guard let module, let offset else {
                return RawFrame(address: Address(address), kind: .pc, symbol: name, symbolOffset: symbolOffset)
            }
            let image = try images.image(path: module, buildID: buildID, in: line, arch: arch, warnings: &warnings, limits: &limits)
            return RawFrame(address: Address(offset), kind: .pc, imageIndex: image, symbol: name, symbolOffset: symbolOffset)
        }
    }

    static func frame(_ line: TextLine) -> Frame? {
        var c = line
        guard c.skip("#"), let number = c.integer(), c.skipBlanks() > 0, let pc = c.hexNumber(), let address = pc.value else {
            return nil
        }
        c.skipBlanks()
        let location = c.trailingGroups(c.position..<c.end)
        var frame = Frame(number: number, address: address)
        var head = location.head
        for group in location.groups {
            if c.range(group, hasPrefix: "BuildId: ") {
                frame.buildID = group.lowerBound + "BuildId: ".utf8.count..<group.upperBound
            } else if frame.module == nil, let plus = c.lastIndex(of: "+0x", in: group),
                let offset = UInt64(c.string(plus + 3..<group.upperBound), radix: 16)
            {
                frame.module = group.lowerBound..<plus
                frame.offset = offset
            } else if c.string(group) == "<unknown module>" {
                continue
            } else {
                // A parenthesised part of the function's own name (`f(int)`): keep it.
                head = head.lowerBound..<group.upperBound + 1
                break
            }
        }
        var f = c
        f.position = head.lowerBound
        // "in " may run past a short head (`#0 0x1 in(`): then there is no function to read.
        if f.skip("in "), f.position <= head.upperBound {
            var end = head.upperBound
            // `in main /src/a.c:5:3`: a device-symbolized frame ends with its source location.
            if frame.module == nil, let blank = line.bytes[f.position..<end].lastIndex(where: TextLine.isBlank),
                line.bytes[blank + 1..<end].contains(UInt8(ascii: ":"))
            {
                end = blank
            }
            let function = line.trimming(f.position..<end)
            if !function.isEmpty { frame.function = function }
        }
        return frame
    }
}

/// One pass over a sanitizer report's lines (logcat prefixes removed, trimmed).
struct SanitizerParser {
    let format: String
    var error: SanitizerText.ErrorLine?
    var summaryType: String?
    var threads: [RawThread] = []
    var images = FileAddressImages()
    /// Reading a stack: frames go to the last thread until a line that is not one.
    var inStack = false
    var lastText: String?
    var accessThread: Int?
    var warnings = WarningLog()
    var limits = LimitCounter()

    init(format: String) { self.format = format }

    mutating func consume(_ line: TextLine) throws(ReportParseError) {
        if let frame = SanitizerText.frame(line) {
            if !inStack || frame.number == 0 {
                // The first stack after the ERROR line is the error's own; later ones (freed by,
                // previously allocated by, thread created by) are labelled with their heading.
                let first = error != nil && !threads.contains { $0.crashed }
                try limits.addThread()
                threads.append(RawThread(
                    index: first ? (accessThread ?? error?.thread ?? 0) : threads.count,
                    name: first ? nil : lastText, crashed: first, frames: [], part: first ? nil : "sanitizer"))
                inStack = true
            }
            try limits.add(inThread: threads[threads.count - 1].index)
            threads[threads.count - 1].frames.append(
                try frame.raw(line, images: &images, arch: nil, warnings: &warnings, limits: &limits))
            return
        }
        inStack = false
        guard !line.isAtEnd else { return }
        if error == nil, let found = SanitizerText.errorLine(line) {
            error = found
        } else if summaryType == nil, let type = SanitizerText.summaryType(line) {
            summaryType = type
        } else if error != nil, accessThread == nil, line.hasPrefix("READ of size ") || line.hasPrefix("WRITE of size "),
            let t = line.firstIndex(of: " thread T")
        {
            accessThread = Int(line.string(t + " thread T".utf8.count..<line.end))
        }
        lastText = TombstoneParser.heading(line)
    }

    mutating func finish() throws(ReportParseError) -> RawReport {
        guard let error else {
            throw .invalidReport(format: format, reason: "no \"ERROR: …Sanitizer: …\" line")
        }
        guard threads.contains(where: { !$0.frames.isEmpty }) else {
            throw .invalidReport(format: format, reason: "no \"#0 0x…\" frames")
        }
        if !threads.contains(where: \.crashed) { threads[0].crashed = true }
        if !images.images.isEmpty, images.images.allSatisfy({ $0.id == nil }) {
            warnings.append(
                "no frame carries \"(BuildId: …)\" (GCC's libasan does not print it; clang's runtime does): no debug file can be matched")
        }
        let exception = ExceptionInfo(type: summaryType ?? error.type, faultAddress: error.faultAddress, message: error.message)
        return RawReport(
            format: format, kind: .crash, exception: exception, images: images.images, threads: threads,
            warnings: warnings.all)
    }
}

extension TextLine {
    /// A line of its own over `text`'s bytes (numbered 0: it is not a line of the report).
    init(text: String) {
        let bytes = Array(text.utf8)
        self.init(bytes: bytes, start: 0, end: bytes.count, number: 0)
    }

    /// Index of the last `literal` starting inside `range` and ending within it.
    func lastIndex(of literal: StaticString, in range: Range<Int>) -> Int? {
        var index = range.upperBound - literal.utf8CodeUnitCount
        while index >= range.lowerBound {
            if matches(literal, at: index) { return index }
            index -= 1
        }
        return nil
    }
}
