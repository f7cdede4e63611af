import SymbolStore
import Testing

/// `--symbols`, then `STACKLINE_SYMBOLS`, then `./symbols`; an empty value is unset, as for `STACKLINE_DB`.
@Suite struct StoreLocationTests {
    @Test func optionThenEnvironmentThenDefault() {
        #expect(SymbolStoreDirectory.resolve(option: "/a", variable: "/b").root == "/a")
        #expect(SymbolStoreDirectory.resolve(option: nil, variable: "/b").root == "/b")
        #expect(SymbolStoreDirectory.resolve(option: nil, variable: nil).root == "symbols")
    }

    @Test func emptyValuesCountAsUnset() {
        #expect(SymbolStoreDirectory.resolve(option: "", variable: "/b").root == "/b")
        #expect(SymbolStoreDirectory.resolve(option: nil, variable: "").root == "symbols")
    }
}
