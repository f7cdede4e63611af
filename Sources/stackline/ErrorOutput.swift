import ArgumentParser
import Foundation

/// Prints one line to stderr (stdout carries results). Callers name the command: `stackline lookup: …`.
func printError(_ message: String) {
    var stderr = StandardError()
    print(message, to: &stderr)
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
