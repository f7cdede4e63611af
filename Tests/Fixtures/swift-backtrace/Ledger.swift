// Crashes on purpose, for the Swift backtracer fidelity tests (Tests/TestSupport/SwiftCrashProgram.swift).
// Usage: Ledger index|unwrap|abort|noisy
//   index   an array index out of range: the runtime prints "Fatal error: Index out of range"
//   unwrap  a force-unwrap of nil: "Fatal error: Unexpectedly found nil while unwrapping an Optional value"
//   abort   abort(), as a C++ std::terminate ends: the backtracer says "Aborted"
//   noisy   stderr first gets an LLVM-style stack dump and log lines, then the index crash
#if canImport(Glibc)
import Glibc
#endif

struct Ledger {
    var entries: [Int] = [10, 20, 30]
    var owner: String? = nil

    @inline(never) func entry(at position: Int) -> Int {
        return entries[position]
    }

    @inline(never) func ownerName() -> String {
        return owner!
    }
}

@inline(never) func noise() {
    let lines = [
        "Stack dump:",
        "0.\tProgram arguments: /usr/bin/swift-frontend -frontend -c Ledger.swift",
        "1.\tSwift version 6.3.1",
        "#0 0x000055d0b8a3f1e8 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int)",
        "#1 0x000055d0b8a3d0ce llvm::sys::RunSignalHandlers()",
        "Thread 3 crashed:",
        "ledger: loaded 3 entries",
    ]
    for line in lines { fputs(line + "\n", stderr) }
}

@inline(never) func run(_ mode: String) -> Int {
    let ledger = Ledger()
    switch mode {
    case "index": return ledger.entry(at: ledger.entries.count + 2)
    case "unwrap": return ledger.ownerName().count
    case "noisy":
        noise()
        return ledger.entry(at: ledger.entries.count + 2)
    default: abort()
    }
}

print(run(CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "index"))
