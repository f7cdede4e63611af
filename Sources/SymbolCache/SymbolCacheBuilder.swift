import Compression
import DebugInfo
import Demangling
import ReportModel
import SystemCalls
import StacklineDeflate

/// Builds a symcache's bytes from a debug file.
///
/// One sweep upwards over the addresses where `DebugFile.frames(at:)` may change its answer
/// (`DebugFile.answerBoundaries()`), asking `DebugFile.levels(at:into:cursor:)`, the integer form
/// `frames(at:)` itself is made from, with one cursor: each step moves the symbol and line-row
/// positions forward from the last instead of searching, and compares and hashes ids, not
/// strings. So the stored answers are the DWARF path's own, not a second implementation that
/// could drift (the equality tests hold the two to the same answer at every instruction).
/// Neighbouring intervals with the same answer are merged, callers and functions are stored
/// once, and each string is stored once per id (`stringID`).
struct SymbolCacheBuilder {
    private let file: DebugFile
    /// The builder's own strings (names and paths), numbered from 0.
    private var own = StringRun()
    /// The source-file names of symbol-table symbols stored so far (`stringID`).
    private var stringsByValue: [String: UInt32] = [:]
    /// The symcache's string index of each `AnswerString` (`unset` until first used).
    private var stringIDs: AnswerStringArray<UInt32>
    private static let unset: UInt32 = 0xFFFF_FFFE
    /// The last function looked up, asked again by nearly every segment of one function.
    private var lastFunction: (key: FunctionKey, id: UInt32)?
    /// The last answer with callers, and the id of its callers' chain.
    private var lastCallers: (levels: [AnswerLevel], id: UInt32) = ([], SymbolCacheLayout.none)
    private var demangling: Demangling

    /// The mangled names met so far, and the queue demangling them on another thread.
    private struct Demangling {
        var asked: AnswerStringArray<Bool>
        /// The demanglers the stored names went through: the key records their identities.
        var families: Set<Demangler.Family> = []
        let queue: DemanglingQueue
        /// Each function record's name, as the debug file knows it.
        var recordNames: [AnswerString] = []

        init(symbolCount: Int) {
            asked = AnswerStringArray(empty: false, symbolCount: symbolCount)
            queue = DemanglingQueue(symbolCount: symbolCount)
        }

        /// Queues `name` (known as `id`) unless it was queued already or no demangler takes it.
        mutating func ask(_ id: AnswerString, _ name: String, into names: inout [(id: AnswerString, name: String)]) {
            guard !asked[id], let family = Demangler.family(of: name) else { return }
            asked[id] = true
            if !families.contains(family) { families.insert(family) }
            names.append((id, name))
        }
    }

    private var functionRecords: [UInt8] = []
    private var functionIDs = DenseIDs<FunctionKey>()
    private var callerRecords: [UInt8] = []
    private var callerIDs = DenseIDs<CallerKey>()

    private init(file: DebugFile) {
        self.file = file
        // Made its size in the sweep, once the DWARF strings are counted: nothing asks before.
        stringIDs = AnswerStringArray(empty: Self.unset)
        demangling = Demangling(symbolCount: file.symbolCount)
    }

    /// Queues the mangled names of the symbols in code before the sweep starts, so that the
    /// demangling thread works while the units are indexed: nearly every function record is
    /// named from one of them. Names the sweep meets otherwise are queued when met.
    private mutating func queueSymbolNames() {
        let code = file.elf.sections.filter { $0.isExecutable && $0.address > 0 }.map { ($0.address, $0.address &+ $0.size) }
        var names: [(id: AnswerString, name: String)] = []
        names.reserveCapacity(file.symbolCount)
        for (i, symbol) in file.symbolTable.symbols.enumerated()
        where code.isEmpty || code.contains(where: { symbol.address >= $0.0 && symbol.address < $0.1 }) {
            demangling.ask(.symbolName(Int32(i)), symbol.name, into: &names)
        }
        demangling.queue.add(contentsOf: names)
    }

    /// The symcache's bytes in order, header first: `key` names the inputs the header records.
    static func build(from file: DebugFile, key: SymbolCacheKey) throws(SymbolCacheError) -> [[UInt8]] {
        var builder = SymbolCacheBuilder(file: file)
        return try builder.run(key: key)
    }

    private mutating func run(key: SymbolCacheKey) throws(SymbolCacheError) -> [[UInt8]] {
        let path = file.elf.path
        queueSymbolNames()
        let segments = try sweep(path: path)
        let (strings, stringEnds) = try joinDemangledNames(path: path)
        guard strings.size < Int(SymbolCacheLayout.escapeBit), segments.count < Int(UInt32.max), segments.stream.count < Int(UInt32.max),
            stringEnds.count < Int(UInt32.max), strings.compressed.count < Int(UInt32.max)
        else {
            throw .unwritable(path: path, reason: "too large for format version \(SymbolCacheVersions.current)")
        }
        let layout = SymbolCacheLayout(
            segmentCount: segments.count, blockCount: segments.blockStarts.count, streamSize: segments.stream.count,
            callerCount: callerIDs.count, functionCount: functionIDs.count, stringCount: stringEnds.count, blobSize: strings.size,
            stringBlockCount: strings.blocks.count, compressedSize: strings.compressed.count)
        // What only the sweep needed goes before the output is laid out beside the tables.
        stringsByValue = [:]
        functionIDs = DenseIDs()
        callerIDs = DenseIDs()
        stringIDs = AnswerStringArray(empty: Self.unset)
        // The body in order, each section padded to its offset: written part by part, never
        // copied into one buffer the size of the file.
        var body: [[UInt8]] = []
        var offset = SymbolCacheLayout.headerSize
        func add(_ part: [UInt8], at start: Int) {
            if start > offset { body.append([UInt8](repeating: 0, count: start - offset)) }
            body.append(part)
            offset = start + part.count
        }
        add(Self.littleEndian(segments.blockStarts), at: layout.blockStartsOffset)
        add(Self.littleEndian(segments.blockOffsets.map { UInt32($0) }), at: layout.blockOffsetsOffset)
        add(segments.stream, at: layout.streamOffset)
        add(callerRecords, at: layout.callersOffset)
        add(functionRecords, at: layout.functionsOffset)
        add(Self.littleEndian(stringEnds), at: layout.stringEndsOffset)
        add(Self.littleEndian(strings.blocks.flatMap { [UInt32($0.compressedEnd), UInt32($0.end)] }), at: layout.stringBlocksOffset)
        add(strings.compressed, at: layout.compressedOffset)
        add([], at: layout.totalSize)
        var bodyCRC: UInt32 = 0
        for part in body { part.withUnsafeBytes { bodyCRC = SymbolCacheChecksum.crc32($0, continuing: bodyCRC) } }

        var header = [UInt8](repeating: 0, count: SymbolCacheLayout.headerSize)
        header.withUnsafeMutableBytes { raw in
            func put<T: FixedWidthInteger>(_ value: T, _ offset: Int) { raw.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self) }
            typealias O = SymbolCacheLayout.Offset
            for (i, b) in SymbolCacheLayout.magic.enumerated() { raw[i] = b }
            put(SymbolCacheVersions.current, O.version)
            var recorded = key
            recorded.usedDemanglers = demangling.families
            put((file.machO != nil ? SymbolCacheLayout.Flag.machO : 0) | recorded.flags, O.flags)
            put(UInt64(layout.totalSize), O.totalSize)
            put(file.preferredBase, O.preferredBase)
            recorded.write(into: raw)
            put(UInt32(layout.segmentCount), O.segmentCount)
            put(UInt32(layout.blockCount), O.blockCount)
            put(UInt32(layout.callerCount), O.callerCount)
            put(UInt32(layout.functionCount), O.functionCount)
            put(UInt32(layout.stringCount), O.stringCount)
            put(UInt64(layout.blobSize), O.blobSize)
            put(UInt64(layout.streamSize), O.streamSize)
            put(UInt32(layout.stringBlockCount), O.stringBlockCount)
            put(UInt64(layout.compressedSize), O.compressedSize)
            let arch = Array(file.architecture.name.utf8.prefix(SymbolCacheLayout.maxArchName))
            raw[O.archName] = UInt8(arch.count)
            for (i, b) in arch.enumerated() { raw[O.archName + 1 + i] = b }
            put(bodyCRC, O.bodyCRC)
            put(SymbolCacheChecksum.crc32(UnsafeRawBufferPointer(raw)), O.headerCRC)
        }
        return [header] + body
    }

    /// One sweep upwards over the boundaries (freed when it returns, before the output is laid out).
    private mutating func sweep(path: String) throws(SymbolCacheError) -> SegmentEncoder {
        var segments = SegmentEncoder()
        var cursor = AnswerCursor()
        var levels: [AnswerLevel] = []
        var previousLevels: [AnswerLevel] = []
        var previous: SegmentAnswer?
        var started = false
        // libdw's reader goes before the boundaries are gathered: its line tables and the
        // boundaries (with their sort's buffer) were the peak of a build together
        // (`make bench`, the symcache build's peak RSS).
        file.endDWARFReading()
        SystemCall.returnFreedMemory()
        let boundaries = file.answerBoundaries()
        stringIDs = AnswerStringArray(empty: Self.unset, symbolCount: file.symbolCount, dwarfCount: file.dwarfStringCount)
        for address in boundaries {
            file.levels(at: address, into: &levels, cursor: &cursor)
            // Same levels, same answer: skipped before any id is looked up.
            if started && levels == previousLevels { continue }
            swap(&levels, &previousLevels)
            let answer = try encode(previousLevels, path: path)
            // Leading "no answer" intervals answer as addresses below the first start do.
            if !started && answer == nil { continue }
            // Different ids can still name equal strings: merge on the stored answer.
            if started && answer == previous { continue }
            segments.append(start: address, answer: answer)
            previous = answer
            started = true
        }
        return segments
    }

    private static func littleEndian<T: FixedWidthInteger>(_ values: [T]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(values.count * MemoryLayout<T>.size)
        for v in values { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        return out
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
            if isNew {
                Self.append(key.function, to: &callerRecords)
                Self.append(key.file, to: &callerRecords)
                Self.append(UInt32(bitPattern: key.line), to: &callerRecords)
                Self.append(UInt32(bitPattern: key.column), to: &callerRecords)
                Self.append(key.next, to: &callerRecords)
            }
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
        withUnsafeBytes(of: (key.functionStart ?? 0).littleEndian) { functionRecords += $0 }
        // The demangled names are filled in after the sweep (`joinDemangledNames`).
        for field in [name, name, name, flags] { Self.append(field, to: &functionRecords) }
        demangling.recordNames.append(level.symbol)
        if name != SymbolCacheLayout.none && !demangling.asked[level.symbol], let text = file.string(level.symbol) {
            var names: [(id: AnswerString, name: String)] = []
            demangling.ask(level.symbol, text, into: &names)
            demangling.queue.add(contentsOf: names)
        }
        return id
    }

    /// All the strings and their ends: the builder's, then each demangling thread's full names,
    /// then their simplified ones (equal strings across runs stay two); and each function
    /// record's full and simplified names set: the name itself unless a demangler changes it.
    private mutating func joinDemangledNames(path: String) throws(SymbolCacheError) -> (strings: CompressedStrings, ends: [UInt32]) {
        own.finish()
        let made = demangling.queue.finish()
        var strings = CompressedStrings()
        var stringEnds: [UInt32] = []
        // Where each thread's full and simplified runs start among all the strings.
        var fullBases: [UInt32] = []
        var simplifiedBases: [UInt32] = []
        var next = UInt32(truncatingIfNeeded: own.ends.count)
        for m in made { fullBases.append(next); next &+= UInt32(truncatingIfNeeded: m.full.ends.count) }
        for m in made { simplifiedBases.append(next); next &+= UInt32(truncatingIfNeeded: m.simplified.ends.count) }
        for run in [own] + made.map(\.full) + made.map(\.simplified) {
            let shift = UInt32(truncatingIfNeeded: min(strings.size, Int(SymbolCacheLayout.escapeBit) - 1))
            for end in run.ends {
                stringEnds.append(((end & ~SymbolCacheLayout.escapeBit) &+ shift) | (end & SymbolCacheLayout.escapeBit))
            }
            strings.append(run.strings)
        }
        own = StringRun()
        guard !strings.failed else { throw .unwritable(path: path, reason: "compressing its strings failed") }
        typealias F = FunctionRecord.Offset
        functionRecords.withUnsafeMutableBytes { raw in
            for (record, id) in demangling.recordNames.enumerated() {
                guard let k = made.indices.first(where: { made[$0].names[id].full != DemanglingQueue.Results.none.full }) else { continue }
                let names = made[k].names[id]
                let offset = record * SymbolCacheLayout.functionRecordSize
                raw.storeBytes(of: (names.full &+ fullBases[k]).littleEndian, toByteOffset: offset + F.fullName, as: UInt32.self)
                raw.storeBytes(of: (names.simplified &+ simplifiedBases[k]).littleEndian, toByteOffset: offset + F.simplifiedName, as: UInt32.self)
            }
        }
        demangling.recordNames = []
        return (strings, stringEnds)
    }

    /// The symcache's index of the string `id` names: one per id.
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

    private static func append(_ value: UInt32, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out += $0 }
    }
}
