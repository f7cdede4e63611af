import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

let wildDirectory = TestPaths.packageRoot + "/Tests/Fixtures/wild"

func wildSample(_ relative: String) throws -> Data {
    try Data(contentsOf: URL(fileURLWithPath: wildDirectory + "/" + relative))
}

/// The expected output of getsentry/apple-crash-report-parser (an `insta` YAML snapshot), read
/// with just enough YAML to get threads, frames and images back.
struct SentrySnapshot {
    struct Frame { var module: String?; var address: UInt64 }
    struct Thread { var id: Int; var name: String?; var crashed: Bool; var frames: [Frame] }
    struct Image { var addr: UInt64; var size: UInt64; var uuid: String; var arch: String; var name: String; var path: String }
    var threads: [Thread] = []
    var images: [Image] = []

    init(_ text: String) throws {
        var section = ""
        var image: [String: String] = [:]
        func flushImage() throws {
            guard !image.isEmpty else { return }
            guard let addr = image["addr"].flatMap({ UInt64($0.dropFirst(2), radix: 16) }), let size = image["size"].flatMap({ UInt64($0) }),
                let uuid = image["uuid"], let name = image["name"]
            else { throw TestSupportError("snapshot image incomplete: \(image)") }
            images.append(Image(addr: addr, size: size, uuid: uuid, arch: image["arch"] ?? "", name: name, path: image["path"] ?? ""))
            image = [:]
        }
        var frame: [String: String]?
        func flushFrame() throws {
            guard let f = frame else { return }
            guard let address = f["instruction_addr"].flatMap({ UInt64($0.dropFirst(2), radix: 16) }) else {
                throw TestSupportError("snapshot frame without instruction_addr: \(f)")
            }
            threads[threads.count - 1].frames.append(Frame(module: f["module"], address: address))
            frame = nil
        }
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            let indent = line.prefix { $0 == " " }.count
            var content = line.trimmingCharacters(in: .whitespaces)
            if indent == 0 {
                try flushFrame()
                try flushImage()
                section = content
                continue
            }
            let startsItem = content.hasPrefix("- ")
            if startsItem { content = String(content.dropFirst(2)) }
            guard let colon = content.range(of: ": ") ?? (content.hasSuffix(":") ? content.range(of: ":", options: .backwards) : nil) else { continue }
            let key = String(content[..<colon.lowerBound])
            let value = Self.unquote(String(content[colon.upperBound...]))
            switch section {
            case "threads:":
                if indent == 2, startsItem {
                    try flushFrame()
                    threads.append(Thread(id: Int(value) ?? -1, name: nil, crashed: false, frames: []))
                } else if indent == 4 {
                    try flushFrame()
                    if key == "name" { threads[threads.count - 1].name = value }
                    if key == "crashed" { threads[threads.count - 1].crashed = value == "true" }
                } else if indent == 6, startsItem {
                    try flushFrame()
                    frame = [key: value]
                } else if indent == 8, frame != nil {
                    frame?[key] = value
                }
            case "binary_images:":
                if indent == 2, startsItem { try flushImage() }
                image[key] = value
            default:
                continue
            }
        }
        try flushFrame()
        try flushImage()
    }

    static func unquote(_ s: String) -> String {
        guard s.count >= 2, s.hasPrefix("\""), s.hasSuffix("\"") else { return s }
        return String(s.dropFirst().dropLast()).replacingOccurrences(of: "\\\"", with: "\"")
            .replacingOccurrences(of: "\\n", with: "\n").replacingOccurrences(of: "\\\\", with: "\\")
    }
}

@Suite struct AppleCrashWildSampleTests {
    @Test(arguments: ["handcrafted", "spaces", "XCDYouTubeKit-54"])
    func parsesLikeTheSentryParser(_ name: String) throws {
        let data = try wildSample("apple-crash/\(name).txt")
        let snapshot = try SentrySnapshot(String(decoding: try wildSample("apple-crash/\(name).expected.snap"), as: UTF8.self))
        #expect(!snapshot.threads.isEmpty && !snapshot.images.isEmpty, "the snapshot reader found nothing")
        #expect(FormatRegistry.standard.detect(data)?.id == "apple-crash")
        let report = try FormatRegistry.standard.detectAndParse(data)

        // Images: name, uuid, load address, arch. The sentry parser's size is end − start; the
        // end address is the image's last byte, so Stackline's size is one more. That parser
        // also keeps the parentheses of a "(x86_64)" column as part of the arch.
        #expect(report.images.count == snapshot.images.count)
        for (ours, theirs) in zip(report.images, snapshot.images) {
            #expect(ours.name == theirs.name)
            #expect(ours.loadAddress.value == theirs.addr)
            #expect(ours.size == theirs.size + 1)
            #expect(ours.id?.hex == theirs.uuid.replacingOccurrences(of: "-", with: ""))
            #expect(ours.arch?.name == theirs.arch.trimmingCharacters(in: CharacterSet(charactersIn: "()")))
            #expect(ours.path == theirs.path)
        }

        // Threads and frames: index, crashed, name, address, and the image the frame line names.
        #expect(report.threads.map(\.index) == snapshot.threads.map(\.id))
        for (ours, theirs) in zip(report.threads, snapshot.threads) {
            #expect(ours.crashed == theirs.crashed, "thread \(theirs.id)")
            if let name = theirs.name { #expect(ours.name == name) }
            #expect(ours.frames.map(\.address.value) == theirs.frames.map(\.address), "thread \(theirs.id)")
            for (i, (frame, expected)) in zip(ours.frames, theirs.frames).enumerated() {
                // The image the snapshot's module names among its own images, at this address.
                let named = snapshot.images.firstIndex {
                    $0.name == expected.module && $0.addr <= expected.address && expected.address <= $0.addr + $0.size
                }
                #expect(frame.imageIndex == named, "thread \(theirs.id) frame \(i) (\(expected.module ?? "???"))")
                #expect(frame.kind == (i == 0 ? .pc : .returnAddress))
            }
        }
    }

    @Test func lastExceptionBacktraceInBothForms() throws {
        let image = "0x100000000 - 0x100003fff App arm64  <00112233-4455-6677-8899-aabbccddeeff> /App"
        let listForm = """
            Incident Identifier: 1
            Exception Type:  EXC_CRASH (SIGABRT)
            Triggered by Thread:  0

            Last Exception Backtrace:
            (0x100000010 0x100000020
             0x100000030)

            Thread 0 name:  Dispatch queue: com.apple.main-thread
            Thread 0:
            0   App                           0x0000000100000040 0x100000000 + 64

            Binary Images:
            \(image)
            """
        let report = try AppleCrashTextFormat().parse(Data(listForm.utf8))
        let leb = try #require(report.threads.first { $0.index == AppleCrashTextFormat.lastExceptionThreadIndex })
        #expect(leb.frames.map(\.address.value) == [0x1_0000_0010, 0x1_0000_0020, 0x1_0000_0030])
        #expect(report.threads.first { $0.index == 0 }?.crashed == true)
        #expect(report.threads.first { $0.index == 0 }?.name == "com.apple.main-thread")
        #expect(report.exception?.signal == "SIGABRT")

        let frameForm = listForm.replacingOccurrences(
            of: "(0x100000010 0x100000020\n 0x100000030)",
            with: "0   App   0x0000000100000010 0x100000000 + 16\n1   App   0x0000000100000020 0x100000000 + 32")
        let second = try AppleCrashTextFormat().parse(Data(frameForm.utf8))
        let frames = try #require(second.threads.first { $0.index == AppleCrashTextFormat.lastExceptionThreadIndex }).frames
        #expect(frames.map(\.address.value) == [0x1_0000_0010, 0x1_0000_0020])
        #expect(frames.allSatisfy { $0.imageIndex == 0 })
    }

    @Test func unparseableLinesInsideKnownSectionsBecomeWarnings() throws {
        let text = """
            Exception Type:  EXC_BAD_ACCESS (SIGSEGV)
            Thread 0 Crashed:
            0   App   0x0000000100000040 0x100000000 + 64
            1   App   garbage
            Binary Images:
            0x100000000 - 0x100003fff App arm64  <00112233445566778899aabbccddeeff> /App
               0x1 - what is this
            0x200000000 - 0x200003fff Short arm64  <0011223344> /Short
            """
        let report = try AppleCrashTextFormat().parse(Data(text.utf8))
        #expect(report.warnings.contains { $0.contains("line 4") && $0.contains("frame not understood") })
        #expect(report.warnings.contains { $0.contains("line 7") && $0.contains("binary image not understood") })
        // A uuid of the wrong length keeps the image (its frames will be "malformed") and says why.
        let short = try #require(report.images.first { $0.name == "Short" })
        #expect(short.id == nil)
        #expect(report.warnings.contains { $0.contains("Short") && $0.contains("10 hex digits") })
    }

    @Test func noBinaryImagesIsAnError() throws {
        let text = "Incident Identifier: 1\nException Type:  SIGSEGV\nThread 0 Crashed:\n0   App   0x0000000100000040 0x100000000 + 64\n"
        #expect(AppleCrashTextFormat().matches(Data(text.utf8)))
        #expect(throws: ReportParseError.self) { try FormatRegistry.standard.detectAndParse(Data(text.utf8)) }
        do {
            _ = try FormatRegistry.standard.detectAndParse(Data(text.utf8))
        } catch {
            #expect("\(error)".contains("no \"Binary Images:\" section"))
        }
    }
}
