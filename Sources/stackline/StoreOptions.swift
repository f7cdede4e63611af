import ArgumentParser
import SymbolStore

/// `--symbols DIR`, shared by every command that reads or writes the debug-file store.
struct StoreOptions: ParsableArguments {
    @Option(name: .customLong("symbols"), help: "Debug-file store (default: $STACKLINE_SYMBOLS or ./symbols).")
    var symbols: String?

    var store: SymbolStoreDirectory {
        SymbolStoreDirectory.resolve(option: symbols, variable: processEnvironment.symbols, limits: processEnvironment.storeLimits)
    }
}
