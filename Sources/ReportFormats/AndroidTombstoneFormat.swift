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
        for (number, raw) in ReportText.lines(data).enumerated() {
            parser.consume(TombstoneParser.strippingLogcatPrefix(String(raw)), lineNumber: number + 1)
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
    /// Image index by "path|buildid", so each library is listed once.
    var imageKeys: [String: Int] = [:]
    var inBacktrace = false
    var warnings: [String] = []
    var timestamp: String?

    // Regex is not Sendable, so each parse builds its own.
    let threadLine = #/^pid: (\d+), tid: (\d+), name: (.*?)(?:\s+>>> (.*) <<<)?$/#
    let signalLine = #/^signal (\d+) \(([A-Z0-9]+)\), code (-?\d+)(?: \(([^)]*)\))?.*?, fault addr (\S+)/#
    let frameLine = #/^\s*#(\d+) pc ([0-9a-fA-F]+)\s+(.*?)\s*$/#

    init(format: String) { self.format = format }

    /// Removes the logcat prefixes of `threadtime` (`11-21 10:00:00.123  1234  1234 F DEBUG   : `),
    /// `brief` (`F/DEBUG  ( 1234): `) and Android Studio (`… A/DEBUG: `) output.
    static func strippingLogcatPrefix(_ line: String) -> String {
        let threadtime = #/^(?:\d{4}-)?\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+\s+(?:\S+\s+)?\d+\s+\d+\s+[VDIWEFA]\s+[^:]*?\s*: ?/#
        let brief = #/^[VDIWEFA]/[^(:]*\(\s*\d+\): ?/#
        let studio = #/^.{0,80}?\b[VDIWEFA]/(?:DEBUG|libc|crash_dump\d*)\s*: ?/#
        for pattern in [threadtime, brief, studio] {
            if let m = try? pattern.prefixMatch(in: line) { return String(line[m.range.upperBound...]) }
        }
        return line
    }

    mutating func consume(_ raw: String, lineNumber: Int) {
        let line = raw.trimmingTrailingWhitespace()
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("ABI: ") {
            abi = trimmed.dropFirst(5).trimmingCharacters(in: CharacterSet(charactersIn: "' "))
            return
        }
        if trimmed.hasPrefix("Timestamp: ") {
            timestamp = String(trimmed.dropFirst("Timestamp: ".count))
            return
        }
        if let m = try? threadLine.wholeMatch(in: trimmed), let tid = Int(m.2) {
            if let name = m.4 { process = String(name) }
            // The first thread block is the one that crashed; later ones follow "--- --- ---".
            threads.append(RawThread(index: tid, name: String(m.3), crashed: threads.isEmpty, frames: []))
            inBacktrace = false
            return
        }
        if let m = try? signalLine.prefixMatch(in: trimmed), exception == nil {
            exception = ExceptionInfo(
                type: String(m.2), signal: String(m.2), code: m.4.map { "\(m.3) (\($0))" } ?? String(m.3),
                faultAddress: Address(parsing: m.5))
            return
        }
        if trimmed.hasPrefix("Abort message: ") {
            exception = exception ?? ExceptionInfo()
            exception?.message = trimmed.dropFirst("Abort message: ".count).trimmingCharacters(in: CharacterSet(charactersIn: "'"))
            return
        }
        if trimmed == "backtrace:" {
            if threads.isEmpty { threads.append(RawThread(index: 0, crashed: true, frames: [])) }
            inBacktrace = true
            return
        }
        guard inBacktrace else { return }
        if trimmed.isEmpty {
            inBacktrace = false
            return
        }
        guard let m = try? frameLine.wholeMatch(in: line), let pc = UInt64(m.2, radix: 16) else {
            if trimmed.hasPrefix("#") {
                warnings.append("line \(lineNumber): frame not understood: \(trimmed)")
            } else {
                inBacktrace = false
            }
            return
        }
        let imageIndex = image(for: String(m.3), lineNumber: lineNumber)
        threads[threads.count - 1].frames.append(RawFrame(address: Address(pc), kind: .pc, imageIndex: imageIndex))
    }

    /// `/path/lib.so (offset 0x1000) (symbol+12) (BuildId: abcd…)`: trailing parenthesised groups
    /// are peeled off from the end; what remains is the mapping's path.
    mutating func image(for location: String, lineNumber: Int) -> Int? {
        var rest = Substring(location)
        var buildID: String?
        while rest.hasSuffix(")"), let open = matchingOpen(rest) {
            let group = rest[rest.index(after: open)..<rest.index(before: rest.endIndex)]
            if group.hasPrefix("BuildId: ") { buildID = String(group.dropFirst("BuildId: ".count)) }
            rest = rest[..<open]
            while rest.last == " " { rest = rest.dropLast() }
        }
        let path = String(rest)
        guard !path.isEmpty else {
            warnings.append("line \(lineNumber): frame without a mapping")
            return nil
        }
        let key = path + "|" + (buildID ?? "")
        if let index = imageKeys[key] { return index }
        // "base.apk!libfoo.so": a library stored uncompressed inside the APK.
        let file = path.split(separator: "!").last.map(String.init) ?? path
        let name = ReportText.basename(file)
        let id = ImageIdentifier.validated(buildID, image: name, byteCounts: ImageIdentifier.elfByteCounts, warnings: &warnings)
        images.append(BinaryImage(name: name, path: path, id: id, arch: arch, loadAddress: 0, vmAddress: 0))
        imageKeys[key] = images.count - 1
        return images.count - 1
    }

    /// Index of the "(" that closes with the final ")".
    func matchingOpen(_ text: Substring) -> Substring.Index? {
        var depth = 0
        var index = text.endIndex
        while index > text.startIndex {
            index = text.index(before: index)
            if text[index] == ")" { depth += 1 }
            if text[index] == "(" {
                depth -= 1
                if depth == 0 { return index }
            }
        }
        return nil
    }

    var arch: String? {
        switch abi {
        case "arm64": "arm64"
        case "arm": "arm"
        case "x86_64": "x86_64"
        case "x86": "i386"
        case "riscv64": "riscv64"
        default: abi
        }
    }

    mutating func finish() throws(ReportParseError) -> RawReport {
        guard threads.contains(where: { !$0.frames.isEmpty }) else {
            throw .invalidReport(format: format, reason: "no \"backtrace:\" with \"#00 pc …\" frames")
        }
        return RawReport(
            format: format, kind: .crash, platform: "Android", arch: arch, app: process.map { AppInfo(name: $0) },
            timestamp: timestamp, exception: exception, images: images, threads: threads, warnings: warnings)
    }
}
