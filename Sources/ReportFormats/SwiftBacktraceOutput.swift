import Foundation
import ReportModel

/// What the Swift runtime writes around its backtrace when the report is captured from stderr
/// rather than from `output-to=FILE`: the trap's message (`…: Fatal error: Index out of range`),
/// `*** Signal 4: Backtracing from 0x…... done ***`, and whatever the program or a crashing tool
/// printed before (an LLVM stack dump, logs). Shared by the text and JSON backtrace formats.
struct SwiftBacktraceOutput {
    /// `Fatal error: Index out of range`: the last runtime trap message before the report.
    var trapMessage: String?
    /// The signal named by `*** Signal N: Backtracing from …`, when its number means the same
    /// signal on Linux and Darwin.
    var signal: String?

    /// Reads the lines of `data` before byte `end` (the start of the report proper).
    init(_ data: Data, before end: Int) {
        for line in TextLine.lines(data.prefix(end)) {
            if let number = Self.signalNumber(line) {
                signal = Self.signalNames[number]
            } else if Self.mayHoldTrapMessage(line), let message = SwiftRuntimeMessage.message(in: line.trimmed.rest) {
                trapMessage = message
            }
        }
    }

    /// Signal numbers POSIX systems share (SIGBUS and others differ between Linux and Darwin).
    static let signalNames = [4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 8: "SIGFPE", 11: "SIGSEGV"]

    /// `*** Signal 6: Backtracing from 0x7f…... done ***`.
    static func signalNumber(_ line: TextLine) -> Int? {
        var cursor = line.trimmed
        guard cursor.skip("*** Signal "), let number = cursor.integer(), cursor.skip(": Backtracing") else { return nil }
        return number
    }

    /// A cheap byte test before the line becomes a String.
    private static func mayHoldTrapMessage(_ line: TextLine) -> Bool {
        line.firstIndex(of: "Fatal error") != nil || line.firstIndex(of: "Precondition failed") != nil
            || line.firstIndex(of: "Assertion failed") != nil
    }

    /// Where the runtime's JSON report starts inside captured stderr: the `{` opening the line
    /// that holds `"kind": "crashReport"` (the runtime writes the report's first keys on one
    /// line). Nil when the first 64 KiB hold no such line.
    static func jsonStart(_ data: Data) -> Int? {
        let head = data.prefix(65536)
        guard let kind = head.range(of: Data("\"crashReport\"".utf8)) else { return nil }
        var lineStart = kind.lowerBound
        while lineStart > head.startIndex, head[lineStart - 1] != 0x0a { lineStart -= 1 }
        var brace = lineStart
        while brace < kind.lowerBound, TextLine.isBlank(head[brace]) { brace += 1 }
        return head[brace] == UInt8(ascii: "{") ? brace : nil
    }

    /// The program that crashed. The backtracer names no executable, but it lists the main
    /// thread first, and Linux names that thread after the executable (cut to 15 bytes): the
    /// image of that name, else the thread's name itself (an abort lists only libc's image),
    /// else the one image that is not a shared library. Never simply the first image.
    static func executable(images: [BinaryImage], mainThreadName: String?) -> String? {
        if let thread = mainThreadName, !thread.isEmpty {
            let named = images.first {
                $0.name == thread || ($0.name.utf8.count > 15 && $0.name.utf8.prefix(15).elementsEqual(thread.utf8))
            }
            return named?.name ?? thread
        }
        let programs = images.filter { !isSharedLibrary($0.name) }
        return programs.count == 1 ? programs[0].name : nil
    }

    /// `libfoo.so`, `libc.so.6`, `ld-linux-x86-64.so.2`, `libfoo.dylib`, `[vdso]`.
    static func isSharedLibrary(_ name: String) -> Bool {
        name.hasSuffix(".so") || name.contains(".so.") || name.hasSuffix(".dylib") || name.hasPrefix("[")
    }
}
