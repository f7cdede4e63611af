import ArgumentParser
import Foundation
import SymbolStore

/// `--symbols DIR`, shared by every command that reads or writes the debug-file store.
struct StoreOptions: ParsableArguments {
    @Option(name: .customLong("symbols"), help: "Debug-file store (default: $STACKLINE_SYMBOLS or ./symbols).")
    var symbols: String?

    var store: SymbolStoreDirectory { SymbolStoreDirectory.resolve(option: symbols) }
}

/// Writes a one-line error to stderr and exits non-zero.
func fail(_ message: String, code: Int32 = 1) -> ExitCode {
    printError(message)
    return ExitCode(code)
}

func printError(_ message: String) {
    var stderr = StandardError()
    print("stackline: \(message)", to: &stderr)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandle.standardError.write(Data(string.utf8))
    }
}
