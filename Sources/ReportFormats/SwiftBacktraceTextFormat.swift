import Foundation
import ReportModel

/// The Swift runtime backtracer's text report (`SWIFT_BACKTRACE=…,format=text`), symbolicated
/// or not: `*** Program crashed: …`, `Thread N "name" crashed:`, frames `idx [ra] 0x…`, and
/// `Images (N omitted):` lines `base–end buildid name path` (an en dash between the addresses).
///
/// Hand-written line parsing: the runtime documents the layout only by example. The report may
/// sit inside captured stderr: what comes before `*** Program crashed:` is read only for the
/// runtime's trap message and signal line (`SwiftBacktraceOutput`).
public struct SwiftBacktraceTextFormat: ReportFormat {
    public let id = "swift-backtrace-text"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        ReportText.textHead(data, contains: "*** Program crashed: ")
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        enum Section { case root, thread, images }
        var section = Section.root
        var exception: ExceptionInfo?
        var arch: Arch?
        var os: String?
        var threads: [RawThread] = []
        var images: [BinaryImage] = []
        var warnings = WarningLog()
        var limits = LimitCounter()
        var reportStarted = false

        for line in TextLine.lines(data) {
            if let crash = Self.programCrashed(line) {
                // One report per input; stderr before it is the program's own output.
                if reportStarted { break }
                reportStarted = true
                let output = SwiftBacktraceOutput(data, before: line.position)
                exception = ExceptionInfo(
                    type: crash.description, signal: output.signal, faultAddress: crash.address,
                    message: output.trapMessage ?? crash.description)
                continue
            }
            guard reportStarted else { continue }
            if line.hasPrefix("Platform: ") {
                let platform = line.string(line.position + "Platform: ".utf8.count..<line.end)
                arch = platform.split(separator: " ").first.map { Arch(String($0)) }
                os = platform.split(separator: " ", maxSplits: 1).dropFirst().first.map(String.init)
                continue
            }
            if let thread = Self.threadHeading(line) {
                try limits.addThread()
                threads.append(thread)
                section = .thread
                continue
            }
            if let omitted = Self.imagesHeading(line) {
                if omitted > 0 {
                    // The runtime lists only images that frames point into; the rest are counted.
                    warnings.append("\(omitted) images not listed by the runtime")
                }
                section = .images
                continue
            }
            if line.hasPrefix("Registers:") || line.hasPrefix("Backtrace took") {
                section = .root
                continue
            }
            switch section {
            case .root:
                continue
            case .thread:
                if line.isAtEnd { continue }
                if let frame = Self.frame(line) {
                    // Symbolicated reports repeat an address once per inline level.
                    if let frame {
                        try limits.add(inThread: threads[threads.count - 1].index)
                        threads[threads.count - 1].frames.append(frame)
                    }
                } else if line.hasSuffix("...") {
                    warnings.append("thread \(threads[threads.count - 1].index): frames omitted by the runtime")
                } else {
                    warnings.append("line \(line.number): frame not understood: \(line.excerpt)")
                }
            case .images:
                if line.isAtEnd { continue }
                guard let image = Self.image(line, arch: arch, warnings: &warnings) else {
                    warnings.append("line \(line.number): image not understood: \(line.excerpt)")
                    continue
                }
                try limits.add(images: 1)
                images.append(image)
            }
        }
        guard !threads.isEmpty else {
            throw .invalidReport(format: id, reason: "no \"Thread N crashed:\" block")
        }
        return RawReport(
            format: id, kind: .crash, platform: os.map { $0.hasPrefix("Linux") ? "Linux" : $0 }, arch: arch,
            app: SwiftBacktraceOutput.executable(images: images, mainThreadName: threads.first { $0.index == 0 }?.name).map { AppInfo(name: $0) },
            os: os, exception: exception, images: images,
            threads: threads, warnings: warnings.all)
    }

    /// `*** Program crashed: Bad pointer dereference at 0x0000000000000000 ***`.
    static func programCrashed(_ line: TextLine) -> (description: String, address: Address?)? {
        var cursor = line
        guard cursor.skip("*** Program crashed: "), cursor.hasSuffix(" ***") else { return nil }
        let textEnd = line.end - " ***".utf8.count
        guard textEnd >= cursor.position else { return nil }
        // A trailing " at 0x…" is the fault address: hex digits back from the end, then " at 0x".
        var hexStart = textEnd
        while hexStart > cursor.position, TextLine.isHexDigit(line.bytes[hexStart - 1]) { hexStart -= 1 }
        let at = hexStart - " at 0x".utf8.count
        if hexStart < textEnd, at >= cursor.position, line.matches(" at 0x", at: at) {
            return (line.string(cursor.position..<at), Address(parsing: line.string(hexStart..<textEnd)))
        }
        return (line.string(cursor.position..<textEnd), nil)
    }

    /// `Thread 0 "main" crashed:`, `Thread 3:`.
    static func threadHeading(_ line: TextLine) -> RawThread? {
        var cursor = line
        guard cursor.skip("Thread "), let index = cursor.integer() else { return nil }
        var name: String?
        if cursor.skip(" \"") {
            // The name runs to the line's last quote (names may contain quotes).
            guard let close = line.bytes[cursor.position..<line.end].lastIndex(of: UInt8(ascii: "\"")) else { return nil }
            name = line.string(cursor.position..<close)
            cursor.position = close + 1
        }
        let crashed = cursor.skip(" crashed")
        guard cursor.skip(":"), cursor.isAtEnd else { return nil }
        return RawThread(index: index, name: name, crashed: crashed, frames: [])
    }

    /// `Images:` or `Images (12 omitted):`; the number omitted.
    static func imagesHeading(_ line: TextLine) -> Int? {
        var cursor = line
        guard cursor.skip("Images") else { return nil }
        var omitted = 0
        if cursor.skip(" (") {
            guard let count = cursor.integer(), cursor.skip(" omitted)") else { return nil }
            omitted = count
        }
        return cursor.skip(":") && cursor.isAtEnd ? omitted : nil
    }

    /// `0 [ra] [async] 0x… in …`: nil when the line is not a frame, `.some(nil)` for an inline
    /// level of a symbolicated report (the address repeats; the real frame is the other entry).
    static func frame(_ line: TextLine) -> RawFrame?? {
        var cursor = line
        cursor.skipBlanks()
        guard cursor.integer() != nil else { return nil }
        var flags: [String] = []
        while true {
            guard cursor.skipBlanks() > 0 else { return nil }
            guard cursor.skip("[") else { break }
            let flag = cursor.take { (0x61...0x7a).contains($0) }
            guard !flag.isEmpty, cursor.skip("]") else { return nil }
            flags.append(line.string(flag))
        }
        guard let pc = cursor.hexNumber(), cursor.isAtEnd || cursor.first.map(TextLine.isWhitespace) == true,
            let address = pc.value
        else { return nil }
        if flags.contains("inlined") { return .some(nil) }
        let kind: FrameKind = flags.contains("ra") || flags.contains("async") ? .returnAddress : .pc
        return RawFrame(address: Address(address), kind: kind)
    }

    /// `0x7f…000–0x7f…fff 1a2b… libfoo.so   /usr/lib/libfoo.so` (an en dash between the addresses).
    static func image(_ line: TextLine, arch: Arch?, warnings: inout WarningLog) -> BinaryImage? {
        var cursor = line
        guard let startHex = cursor.hexNumber(), cursor.skip("–"), let endHex = cursor.hexNumber(),
            let start = startHex.value, let end = endHex.value, end >= start, cursor.skipBlanks() > 0
        else { return nil }
        var buildID: String?
        if !cursor.skip("<no build ID>") {
            let hex = cursor.take(while: TextLine.isHexDigit)
            guard !hex.isEmpty else { return nil }
            buildID = line.string(hex)
        }
        guard cursor.skipBlanks() > 0 else { return nil }
        // "name   /path": the name is padded; the path is what follows the last run of blanks before "/".
        let rest = cursor.rest
        var name = rest
        var path: String?
        if let slash = rest.range(of: " /") {
            name = rest[..<slash.lowerBound].trimmingCharacters(in: .whitespaces)
            path = String(rest[rest.index(after: slash.lowerBound)...])
        }
        return BinaryImage(
            name: name, path: path,
            id: BuildID.reported(buildID, image: name, lengths: .gnu, warnings: &warnings),
            arch: arch, loadAddress: Address(start), size: end - start)
    }
}
