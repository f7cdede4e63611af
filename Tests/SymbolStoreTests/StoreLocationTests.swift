import SymbolStore
import Testing

/// `--symbols`, then `STACKLINE_SYMBOLS`, then `./symbols`; an empty value is unset, as for `STACKLINE_DB`.
@Suite struct StoreLocationTests {
    @Test func optionThenEnvironmentThenDefault() {
        #expect(SymbolStoreDirectory.resolve(option: "/a", environment: ["STACKLINE_SYMBOLS": "/b"]).root == "/a")
        #expect(SymbolStoreDirectory.resolve(option: nil, environment: ["STACKLINE_SYMBOLS": "/b"]).root == "/b")
        #expect(SymbolStoreDirectory.resolve(option: nil, environment: [:]).root == "symbols")
    }

    @Test func emptyValuesCountAsUnset() {
        #expect(SymbolStoreDirectory.resolve(option: "", environment: ["STACKLINE_SYMBOLS": "/b"]).root == "/b")
        #expect(SymbolStoreDirectory.resolve(option: nil, environment: ["STACKLINE_SYMBOLS": ""]).root == "symbols")
    }
}
