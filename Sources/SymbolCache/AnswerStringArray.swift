import DebugInfo

/// A value for each `AnswerString`, kept in one array per kind and indexed by the id's number,
/// grown as higher ids come; ids never set read as `empty`. The builder asks for these on every
/// segment and for every name: arrays instead of a dictionary, whose hashing was a large part of
/// a build (`make bench`, symcache build).
struct AnswerStringArray<Value> {
    let empty: Value
    private var dwarf: [Value]
    private var symbolName: [Value]
    private var symbolFile: [Value]

    /// `symbolCount` and `dwarfCount`: the ids expected, allocated at once (they may be exceeded).
    init(empty: Value, symbolCount: Int = 0, dwarfCount: Int = 0) {
        self.empty = empty
        dwarf = Array(repeating: empty, count: dwarfCount)
        symbolName = Array(repeating: empty, count: symbolCount)
        symbolFile = Array(repeating: empty, count: symbolCount)
    }

    subscript(id: AnswerString) -> Value {
        get {
            switch id {
            case .none: return empty
            case .dwarf(let i): return Self.read(dwarf, i, empty)
            case .symbolName(let i): return Self.read(symbolName, i, empty)
            case .symbolFile(let i): return Self.read(symbolFile, i, empty)
            }
        }
        set {
            switch id {
            case .none: return
            case .dwarf(let i): Self.write(&dwarf, i, newValue, empty)
            case .symbolName(let i): Self.write(&symbolName, i, newValue, empty)
            case .symbolFile(let i): Self.write(&symbolFile, i, newValue, empty)
            }
        }
    }

    private static func read(_ values: [Value], _ i: Int32, _ empty: Value) -> Value {
        i >= 0 && Int(i) < values.count ? values[Int(i)] : empty
    }

    private static func write(_ values: inout [Value], _ i: Int32, _ value: Value, _ empty: Value) {
        guard i >= 0 else { return }
        if Int(i) >= values.count { values.append(contentsOf: repeatElement(empty, count: Int(i) + 1 - values.count)) }
        values[Int(i)] = value
    }
}
