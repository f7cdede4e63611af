import ArgumentParser
import Foundation
import ReportModel

/// Prints one line to stderr (stdout carries results). Callers name the command: `stackline lookup: …`.
/// Messages quote file names and report text, so the whole line is escaped for the terminal:
/// a newline inside a quoted value cannot forge a second message.
func printError(_ message: String) {
    var stderr = StandardError()
    print(TerminalText.escape(message), to: &stderr)
}

/// Prints one line of human-readable output to stdout, escaped like `printError`'s.
func printLine(_ line: String) {
    print(TerminalText.escape(line))
}

/// Prints a one-line error and returns the exit code to throw.
func fail(_ message: String, code: Int32 = 1) -> ExitCode {
    printError(message)
    return ExitCode(code)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandle.standardError.write(Data(string.utf8))
    }
}
