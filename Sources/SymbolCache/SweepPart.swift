import DebugInfo
import Demangling

/// One range of the symcache builder's sweep, with tables of its own: the builder sweeps the
/// lower and the upper half of the answer boundaries at once, each on its own thread, and joins
/// the two parts after (`SymbolCacheBuilder`). Only the debug file, read and never written once
/// its units are indexed, and the demangling queue, which locks, are shared.
///
/// The sweep asks `DebugFile.levels(at:into:cursor:)`, the integer form `frames(at:)` itself is
/// made from, with one cursor: each step moves the symbol and line-row positions forward from
/// the last instead of searching, and compares and hashes ids, not strings. So the stored
/// answers are the DWARF path's own, not a second implementation that could drift (the equality
/// tests hold the two to the same answer at every instruction). Neighbouring intervals with the
/// same answer are merged, callers and functions are stored once per part, and each string is
/// stored once per id (`stringID`).
struct SweepPart {
    private let file: DebugFile
    private let queue: DemanglingQueue
    /// The part's own strings (names and paths), numbered from 0.
    private(set) var own = StringRun()
    /// The source-file names of symbol-table symbols stored so far (`stringID`).
    private var stringsByValue: [String: UInt32] = [:]
    /// The part's string index of each `AnswerString` (`unset` until first used).
    private var stringIDs: AnswerStringArray<UInt32>
    private static let unset: UInt32 = 0xFFFF_FFFE
    /// The last function looked up, asked again by nearly every segment of one function.
    private var lastFunction: (key: FunctionKey, id: UInt32)?
    /// The last answer with callers, and the id of its callers' chain.
    private var lastCallers: (levels: [AnswerLevel], id: UInt32) = ([], SymbolCacheLayout.none)
    /// The mangled names queued for demangling, by this part or before the sweep.
    private var asked: AnswerStringArray<Bool>
    /// The demanglers the part's names went through: the key records their identities.
    private(set) var families: Set<Demangler.Family>

    private(set) var functionRecords: [UInt8] = []
    private var functionIDs = DenseIDs<FunctionKey>()
    private(set) var callerRecords: [UInt8] = []
    private var callerIDs = DenseIDs<CallerKey>()
    /// Each function record's name, as the debug file knows it.
    private(set) var recordNames: [AnswerString] = []
    private(set) var segments = SegmentEncoder()
    /// The last segment's answer, nil before the first (see `started`).
    private(set) var previous: SegmentAnswer?
    private(set) var started = false

    var functionCount: Int { functionRecords.count / SymbolCacheLayout.functionRecordSize }
    var callerCount: Int { callerRecords.count / SymbolCacheLayout.callerRecordSize }

    /// `asked`: the names queued before the sweep, and the demanglers they went to.
    init(file: DebugFile, queue: DemanglingQueue, asked: AnswerStringArray<Bool>, families: Set<Demangler.Family>) {
        self.file = file
        self.queue = queue
        self.asked = asked
        self.families = families
        stringIDs = AnswerStringArray(empty: Self.unset, symbolCount: file.symbolCount, dwarfCount: file.dwarfStringCount)
    }

    /// Queues `name` (known as `id`) unless it was queued already or no demangler takes it.
    static func ask(
        _ id: AnswerString, _ name: String, asked: inout AnswerStringArray<Bool>, families: inout Set<Demangler.Family>,
        into names: inout [(id: AnswerString, name: String)]
    ) {
        guard !asked[id], let family = Demangler.family(of: name) else { return }
        asked[id] = true
        if !families.contains(family) { families.insert(family) }
        names.append((id, name))
    }

    /// Sweeps `boundaries[range]` upwards. The first part leaves out leading intervals with no
    /// answer (they answer as addresses below the first start do); a later part keeps them,
    /// since they end its predecessor's last interval.
    mutating func sweep(_ boundaries: AnswerBoundaries, _ range: Range<Int>, isFirst: Bool, path: String) throws(SymbolCacheError) {
        var cursor = AnswerCursor()
        var levels: [AnswerLevel] = []
        var previousLevels: [AnswerLevel] = []
        var sawLevels = false
        for i in range {
            let address = boundaries[i]
            file.levels(at: address, into: &levels, cursor: &cursor)
            // Same levels, same answer: skipped before any id is looked up.
            if sawLevels && levels == previousLevels { continue }
            sawLevels = true
            swap(&levels, &previousLevels)
            append(start: address, answer: try encode(previousLevels, path: path), keepingLeadingNoAnswer: !isFirst)
        }
    }

    /// Appends one segment unless it answers what the last one does (different ids can still
    /// name equal strings: merged on the stored answer).
    mutating func append(start: UInt64, answer: SegmentAnswer?, keepingLeadingNoAnswer: Bool) {
        if !started && answer == nil && !keepingLeadingNoAnswer { return }
        if started && answer == previous { return }
        segments.append(start: start, answer: answer)
        previous = answer
        started = true
    }

    /// The stored form of one answer: the innermost level, and its callers interned outermost
    /// first (so a record's next is always an earlier record).
    private mutating func encode(_ levels: [AnswerLevel], path: String) throws(SymbolCacheError) -> SegmentAnswer? {
        guard let inner = levels.first else { return nil }
        var caller = SymbolCacheLayout.none
        var i = levels.count - 1
        // Neighbouring rows of one inlined call share its callers: known without a lookup.
        if i > 0 && levels.count == lastCallers.levels.count && levels[1...] == lastCallers.levels[1...] {
            caller = lastCallers.id
            i = 0
        }
        while i > 0 {
            let l = levels[i]
            let key = CallerKey(function: functionID(l), file: stringID(l.file), line: l.line, column: l.column, next: caller)
            let (id, isNew) = callerIDs.insert(key)
            if isNew { CallerRecord.append(function: key.function, file: key.file, line: key.line, column: key.column, next: key.next, to: &callerRecords) }
            caller = id
            i -= 1
        }
        if levels.count > 1 {
            // Copied into a buffer of its own, so the sweep's reused buffers stay unshared.
            lastCallers.levels.removeAll(keepingCapacity: true)
            lastCallers.levels.append(contentsOf: levels)
            lastCallers.id = caller
        }
        guard callerIDs.count < Int(SymbolCacheLayout.none), functionIDs.count < Int(SymbolCacheLayout.none) else {
            throw .unwritable(path: path, reason: "too many functions for format version \(SymbolCacheVersions.current)")
        }
        return SegmentAnswer(function: functionID(inner), file: stringID(inner.file), line: inner.line, column: inner.column, caller: caller)
    }

    private struct CallerKey: DenseIDKey {
        var function: UInt32
        var file: UInt32
        var line: Int32
        var column: Int32
        var next: UInt32

        var mixed: UInt64 {
            Self.mix(Self.mix(UInt64(function) << 32 | UInt64(file)) ^ UInt64(UInt32(bitPattern: line)) << 32 ^ UInt64(UInt32(bitPattern: column)) ^ UInt64(next) << 16)
        }
    }

    /// What the levels of one function share, stored once.
    private struct FunctionKey: DenseIDKey {
        var name: UInt32
        var functionStart: UInt64?
        var fromSymbolTableOnly: Bool

        var mixed: UInt64 {
            Self.mix((functionStart ?? 0) ^ UInt64(name) << 2 ^ (functionStart == nil ? 2 : 0) ^ (fromSymbolTableOnly ? 1 : 0))
        }
    }

    private mutating func functionID(_ level: AnswerLevel) -> UInt32 {
        let name = stringID(level.symbol)
        let key = FunctionKey(name: name, functionStart: level.functionStart, fromSymbolTableOnly: level.fromSymbolTableOnly)
        if let last = lastFunction, last.key == key { return last.id }
        let (id, isNew) = functionIDs.insert(key)
        lastFunction = (key, id)
        guard isNew else { return id }
        var flags: UInt32 = 0
        if key.functionStart != nil { flags |= FunctionRecord.Flag.hasFunctionStart }
        if key.fromSymbolTableOnly { flags |= FunctionRecord.Flag.fromSymbolTableOnly }
        // The full name is filled in after the sweep (`SymbolCacheBuilder.joinDemangledNames`).
        FunctionRecord.append(start: key.functionStart ?? 0, symbol: name, fullName: name, flags: flags, to: &functionRecords)
        recordNames.append(level.symbol)
        if name != SymbolCacheLayout.none && !asked[level.symbol], let text = file.string(level.symbol) {
            var names: [(id: AnswerString, name: String)] = []
            Self.ask(level.symbol, text, asked: &asked, families: &families, into: &names)
            queue.add(contentsOf: names)
        }
        return id
    }

    /// The part's index of the string `id` names: one per id.
    private mutating func stringID(_ id: AnswerString) -> UInt32 {
        switch id {
        case .none:
            return SymbolCacheLayout.none
        // A name is stored once per id, not looked up by value: the file's string table already
        // gives equal DWARF names one pointer and equal paths one id, and what is left (a name
        // both in the symbol table and in DWARF) costs a little size, where hashing every name
        // cost the sweep's thread more than that saved (`make bench`, symcache build; the
        // figures are in docs/performance.md). The source files of symbol-table symbols
        // repeat once per symbol: those are interned.
        case .dwarf, .symbolName:
            if stringIDs[id] == Self.unset { stringIDs[id] = own.append(file.string(id) ?? "") }
            return stringIDs[id]
        case .symbolFile:
            if stringIDs[id] == Self.unset { stringIDs[id] = intern(file.string(id) ?? "") }
            return stringIDs[id]
        }
    }

    private mutating func intern(_ s: String) -> UInt32 {
        if let known = stringsByValue[s] { return known }
        let index = own.append(s)
        stringsByValue[s] = index
        return index
    }

    // What the join has taken, freed as it goes: the parts' tables are not held beside the output.
    mutating func dropRecords() { (functionRecords, callerRecords, recordNames) = ([], [], []) }
    mutating func dropSegments() { segments = SegmentEncoder() }
    mutating func dropStrings() { own = StringRun() }

    /// Frees what only the sweep needed, before the output is laid out beside the tables.
    mutating func finishSweep() {
        own.finish()
        stringsByValue = [:]
        functionIDs = DenseIDs()
        callerIDs = DenseIDs()
        stringIDs = AnswerStringArray(empty: Self.unset)
        asked = AnswerStringArray(empty: false)
        lastCallers = ([], SymbolCacheLayout.none)
    }
}
