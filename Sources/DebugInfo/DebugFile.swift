import CElfUtils
import Foundation
import ReportModel

/// A debug file opened for lookups: "what code is at file address A".
///
/// Opening reads only unit headers and their address ranges; a unit's functions, inline
/// scopes and line table are indexed the first time an address falls into it, then every
/// lookup is a binary search. Not thread-safe: one owner (a worker, a CLI run) at a time.
public final class DebugFile {
    /// The ELF file, or for a Mach-O slice the in-memory ELF that presents its DWARF to libdw.
    public let elf: ElfFile
    /// The Mach-O slice this was opened from; nil for an ELF file.
    public let machO: MachOSlice?
    /// Where the image expects to be loaded: the first `PT_LOAD` page, or `__TEXT.vmaddr`.
    public let preferredBase: UInt64
    /// `x86_64`, `arm64`, `arm64e`, …
    public let architecture: Arch
    private let strings = StringTable()
    private var unitDies: [Dwarf_Die] = []
    private var unitIndexes: [UnitIndex?] = []
    private var unitRanges = IntervalIndex([])
    private let symbols: SymbolTable
    private let lowestCodeAddress: UInt64
    /// Readers of the same file that indexed some of its units: their section data holds
    /// strings `strings` names, so they live as long as this file.
    private var secondReaders: [ElfFile] = []

    /// Opens `path`. `symbolsFrom` supplies a symbol table when the debug file has none
    /// (e.g. a debug file whose stripped binary still has `.dynsym`).
    public convenience init(path: String, symbolsFrom companion: ElfFile? = nil) throws(ElfError) {
        try self.init(elf: ElfFile(path: path), symbolsFrom: companion)
    }

    public convenience init(elf: ElfFile, symbolsFrom companion: ElfFile? = nil) throws(ElfError) {
        var table = SymbolTable(elf: elf)
        // MiniDebugInfo holds the local functions a stripped binary's .dynsym lacks: both answer.
        if !elf.hasSymbolTable, let mini = try elf.miniDebugInfoSymbols() {
            table = SymbolTable(symbols: table.symbols + mini.symbols)
        }
        if table.isEmpty, let companion { table = SymbolTable(elf: companion) }
        try self.init(elf: elf, symbols: table, machO: nil, preferredBase: elf.preferredBase, architecture: elf.architecture)
    }

    /// Throws what opening `elf` would, without reading its symbol table (the DWARF units, a
    /// MiniDebugInfo section): how an upload is refused for the reasons a lookup would fail,
    /// without paying for the table twice (the store opens the stored copy again to index it).
    public static func validate(elf: ElfFile) throws(ElfError) {
        if !elf.hasSymbolTable { _ = try elf.miniDebugInfoSymbols() }
        _ = try DebugFile(elf: elf, symbols: SymbolTable(symbols: []), machO: nil, preferredBase: elf.preferredBase, architecture: elf.architecture)
    }

    init(elf: ElfFile, symbols table: SymbolTable, machO: MachOSlice?, preferredBase: UInt64, architecture: Arch) throws(ElfError) {
        self.elf = elf
        self.machO = machO
        self.preferredBase = preferredBase
        self.architecture = architecture
        symbols = table
        let code = elf.sections.filter { $0.isExecutable && $0.address > 0 }
        lowestCodeAddress = (elf.elfType == UInt16(ET_REL)) ? 0 : (code.map(\.address).min() ?? 0)
        if let dwarf = elf.dwarf { try readUnits(dwarf) }
    }

    public var unitCount: Int { unitDies.count }
    /// Whether some units were indexed on a second thread (`endDWARFReading`).
    public var indexedOnTwoThreads: Bool { !secondReaders.isEmpty }
    /// How many `.dwarf` ids `AnswerString` can hold so far: every id `levels(at:…)` hands out is
    /// below it once the units it answers from are indexed.
    public var dwarfStringCount: Int { strings.count }
    public var symbolCount: Int { symbols.symbols.count }
    /// The symbols `frames(at:)` names outermost levels from (`AnswerString.symbolName` indexes it).
    public var symbolTable: SymbolTable { symbols }

    /// The file's sized symbols that start inside a DWARF unit's address ranges, in address
    /// order: functions a lookup must name with a file and line (`symbols verify` looks a few
    /// up to prove the file answers). Data symbols and code no unit describes (crt1's `_start`) are left out.
    public var symbolsDescribedByDWARF: [ElfSymbol] {
        symbols.symbols.filter { $0.size > 0 && unitRanges.find($0.address) != nil }
    }

    private func readUnits(_ dwarf: OpaquePointer) throws(ElfError) {
        var intervals: [(start: UInt64, end: UInt64, value: Int32)] = []
        try Self.forEachUnit(of: dwarf, path: elf.path) { cuDie in
            let index = Int32(unitDies.count)
            unitDies.append(cuDie)
            unitIndexes.append(nil)
            var ranges = UnitIndex.addressRanges(of: &cuDie, lowestCodeAddress: lowestCodeAddress)
            if ranges.isEmpty {
                // No range attributes on the unit DIE: index it now and use what it covers.
                let unit = UnitIndex(die: cuDie, strings: strings, lowestCodeAddress: lowestCodeAddress)
                unitIndexes[Int(index)] = unit
                ranges = unit.coveredRanges
            }
            intervals += ranges.map { ($0.start, $0.end, index) }
        }
        unitRanges = IntervalIndex(intervals)
    }

    /// Calls `body` with the DIE of each compile and partial unit of `dwarf`, in file order:
    /// the units a `DebugFile` indexes, numbered as it numbers them.
    private static func forEachUnit(of dwarf: OpaquePointer, path: String, _ body: (inout Dwarf_Die) -> Void) throws(ElfError) {
        var cu: OpaquePointer?
        var count = 0
        while true {
            var next: OpaquePointer?
            var version: UInt16 = 0
            var unitType: UInt8 = 0
            var cuDie = Dwarf_Die()
            // No split-unit DIE asked for: libdw would look for each skeleton unit's .dwo file
            // (a Swift binary has one per Clang module, naming a .pcm in the build's module
            // cache) with a realpath and an open each, and nothing here reads split units.
            let rc = dwarf_get_units(dwarf, cu, &next, &version, &unitType, &cuDie, nil)
            if rc == 1 { break }
            if rc != 0 {
                throw .corrupt(path: path, detail: "bad DWARF unit after \(count) units (\(ElfFile.dwarfMessage()))")
            }
            cu = next
            if unitType == UInt8(DW_UT_type) || unitType == UInt8(DW_UT_split_type) { continue }
            let tag = dwarf_tag(&cuDie)
            guard tag == Int32(DW_TAG_compile_unit) || tag == Int32(DW_TAG_partial_unit) else { continue }
            count += 1
            body(&cuDie)
        }
    }

    private func unit(number: Int32) -> UnitIndex? {
        let i = Int(number)
        if let built = unitIndexes[i] { return built }
        // Every unit was indexed before the reader ended (`endDWARFReading`).
        guard i < unitDies.count else { return nil }
        let built = UnitIndex(die: unitDies[i], strings: strings, lowestCodeAddress: lowestCodeAddress)
        unitIndexes[i] = built
        return built
    }

    /// Indexes every unit now; used to validate a file at upload and to time index builds.
    public func indexAllUnits() {
        let pending = unitDies.indices.filter { $0 < unitIndexes.count && unitIndexes[$0] == nil }
        Self.index(pending.map { ($0, unitDies[$0]) }, strings: strings, lowestCodeAddress: lowestCodeAddress, reader: elf) {
            unitIndexes[$0] = $1
        }
    }

    /// Indexes `units` in order, read through `reader` into `strings`, and hands each to `store`.
    /// The units read so far are not read again: every `unitsBetweenPageDrops` their pages leave
    /// the resident set, where they would otherwise add up to most of the file (`make bench`,
    /// the symcache build's peak RSS).
    fileprivate static func index(
        _ units: [(number: Int, die: Dwarf_Die)], strings: StringTable, lowestCodeAddress: UInt64, reader: ElfFile,
        _ store: (Int, UnitIndex) -> Void
    ) {
        for (k, (number, die)) in units.enumerated() {
            store(number, UnitIndex(die: die, strings: strings, lowestCodeAddress: lowestCodeAddress))
            if (k + 1) % unitsBetweenPageDrops == 0 { reader.dropReadPages() }
        }
    }

    private static let unitsBetweenPageDrops = 256

    /// Indexes every unit, then frees libdw's reader and its caches (`ElfFile.endDWARF`): the
    /// answers need nothing more from it, and for a large file its line tables are the largest
    /// thing a symcache build holds (`make bench`, the symcache build's peak RSS).
    ///
    /// The units are indexed on two threads when a second reader of the file can be opened
    /// ("use both cores where it pays": issue 31); the answers are the same either way.
    public func endDWARFReading() {
        indexAllUnitsOnTwoThreads()
        unitDies = []
        elf.endDWARF()
        for reader in secondReaders { reader.endDWARF() }
    }

    /// `indexAllUnits()`, with the units in the later half of `.debug_info` read on a thread of
    /// their own through a second reader of the file (its own libelf and libdw handles and its
    /// own string table, appended to this one's when it is done). Falls back to one thread when
    /// no second reader can be opened or it does not see the same units.
    private func indexAllUnitsOnTwoThreads() {
        let pending = unitDies.indices.filter { $0 < unitIndexes.count && unitIndexes[$0] == nil }
        guard pending.count >= 2, let reader = elf.secondReader(), let dwarf = reader.dwarf else {
            indexAllUnits()
            return
        }
        var theirDies: [Dwarf_Die] = []
        do throws(ElfError) {
            try Self.forEachUnit(of: dwarf, path: elf.path) { theirDies.append($0) }
        } catch {
            indexAllUnits()
            return
        }
        var offsets: [UInt64] = []
        for i in unitDies.indices {
            var mine = unitDies[i]
            offsets.append(dwarf_dieoffset(&mine))
        }
        guard theirDies.count == unitDies.count,
            zip(offsets, theirDies).allSatisfy({ offset, die in var die = die; return dwarf_dieoffset(&die) == offset })
        else {
            indexAllUnits()
            return
        }
        // Split where half of the pending units' bytes lie before: a unit's index costs about
        // in proportion to its size.
        let end = offsets.last.map { $0 + 1 } ?? 0
        func size(_ i: Int) -> UInt64 { (i + 1 < offsets.count ? offsets[i + 1] : end) &- offsets[i] }
        let total = pending.reduce(UInt64(0)) { $0 &+ size($1) }
        var sum: UInt64 = 0
        var split = pending.count
        for (k, i) in pending.enumerated() {
            sum &+= size(i)
            if sum >= total / 2 { split = k + 1; break }
        }
        let batch = UnitBatch(units: pending[split...].map { ($0, theirDies[$0]) }, lowestCodeAddress: lowestCodeAddress, reader: reader)
        let thread = Thread { batch.run() }
        thread.start()
        Self.index(pending[..<split].map { ($0, unitDies[$0]) }, strings: strings, lowestCodeAddress: lowestCodeAddress, reader: elf) {
            unitIndexes[$0] = $1
        }
        batch.done.wait()
        let base = strings.append(batch.strings)
        for (i, unit) in batch.built { unitIndexes[i] = unit.renumberingStrings(by: base) }
        // Its section data holds the strings its units named.
        secondReaders.append(reader)
    }

    /// Units indexed on a thread of their own through a second reader of the file.
    // Sendable: the thread alone touches `strings` and `built` until it signals `done`; the
    // caller reads them only after waiting for it.
    private final class UnitBatch: @unchecked Sendable {
        let units: [(number: Int, die: Dwarf_Die)]
        let lowestCodeAddress: UInt64
        let reader: ElfFile
        let strings = StringTable()
        var built: [(number: Int, unit: UnitIndex)] = []
        let done = DispatchSemaphore(value: 0)

        init(units: [(number: Int, die: Dwarf_Die)], lowestCodeAddress: UInt64, reader: ElfFile) {
            (self.units, self.lowestCodeAddress, self.reader) = (units, lowestCodeAddress, reader)
        }

        func run() {
            DebugFile.index(units, strings: strings, lowestCodeAddress: lowestCodeAddress, reader: reader) { built.append(($0, $1)) }
            // Its libdw caches go as soon as its half is done, not when the other half is: the
            // two readers' caches together were the build's peak (`make bench`, peak RSS). The
            // names its units gave are section data, which stays with the reader.
            reader.endDWARF()
            done.signal()
        }
    }

    /// Every address at which `frames(at:)` may answer differently from the address before it,
    /// sorted and unique: between two neighbours the answer is the same. Below the first there
    /// is no answer; from the last on, the answer is the last one's. Indexes every unit.
    ///
    /// The symcache evaluates `frames(at:)` once per interval instead of per address: the answer
    /// depends only on which unit ranges, symbols, line rows and scope ranges contain the
    /// address, and each of those changes only at its bounds.
    public func answerBoundaries() -> AnswerBoundaries {
        indexAllUnits()
        var out: [UInt64] = []
        out.reserveCapacity(unitIndexes.reduce(2 * symbols.symbols.count) { $0 + ($1?.boundaryCount ?? 0) })
        unitRanges.appendBoundaries(to: &out)
        for unit in unitIndexes { unit?.appendBoundaries(to: &out) }
        for (address, size) in zip(symbols.addresses, symbols.sizes) {
            out.append(address)
            // A sized symbol stops covering at its end; a zero-sized one at the next symbol.
            if size != 0 {
                let (end, overflow) = address.addingReportingOverflow(size)
                if !overflow { out.append(end) }
            }
        }
        return AnswerBoundaries(unsorted: out)
    }

    /// What is at `address` (a file address), innermost inline level first; empty when
    /// neither DWARF nor the symbol table covers it.
    ///
    /// The outermost level takes its name from the symbol table when a symbol covers the
    /// address, as llvm-symbolizer does: it names compiler clones (`.cold`, `.constprop.0`)
    /// that DWARF only knows by their origin.
    public func frames(at address: UInt64) -> [SourceFrame] {
        var cursor = AnswerCursor()
        var levels: [AnswerLevel] = []
        self.levels(at: address, into: &levels, cursor: &cursor)
        return levels.map { l in
            SourceFrame(
                symbol: string(l.symbol), file: string(l.file), line: Int(l.line), column: Int(l.column),
                functionStart: l.functionStart, fromSymbolTableOnly: l.fromSymbolTableOnly)
        }
    }

    /// `frames(at:)`'s answer with its strings as ids (`string(_:)`), into `levels`. Called at
    /// ascending addresses with one `cursor`, each lookup steps from the last instead of
    /// searching (the symcache builder's sweep). Reads only once every unit is indexed
    /// (`indexAllUnits()`), so concurrent sweeps of disjoint ranges, each with its own cursor,
    /// are safe then.
    public func levels(at address: UInt64, into levels: inout [AnswerLevel], cursor: inout AnswerCursor) {
        levels.removeAll(keepingCapacity: true)
        let symbolIndex = symbols.index(containing: address, hint: &cursor.symbol)
        guard let unitNumber = unitRanges.find(address, hint: &cursor.unitRange), let unit = unit(number: unitNumber) else {
            guard let symbolIndex else { return }
            levels.append(AnswerLevel(
                symbol: .symbolName(Int32(symbolIndex)), file: symbols.symbols[symbolIndex].sourceFile == nil ? .none : .symbolFile(Int32(symbolIndex)),
                line: 0, column: 0, functionStart: symbols.symbols[symbolIndex].address, fromSymbolTableOnly: true))
            return
        }
        if cursor.unit != unitNumber {
            cursor.unit = unitNumber
            cursor.row = -1
            cursor.function = -1
        }
        let row = unit.row(at: address, hint: &cursor.row)
        unit.scopeChain(at: address, into: &cursor.chain, hint: &cursor.function)
        var file = Self.dwarfString(row?.file ?? -1)
        var line = row?.line ?? 0
        var column = row?.column ?? 0
        for index in cursor.chain.reversed() {
            let scope = unit.scope(index)
            levels.append(AnswerLevel(
                symbol: Self.dwarfString(scope.name), file: file, line: line, column: column, functionStart: nil, fromSymbolTableOnly: false))
            file = Self.dwarfString(unit.callFile(scope))
            line = scope.callLine
            column = scope.callColumn
        }
        if levels.isEmpty {
            levels.append(AnswerLevel(symbol: .none, file: file, line: line, column: column, functionStart: nil, fromSymbolTableOnly: false))
        }
        let outer = levels.count - 1
        if let symbolIndex {
            levels[outer].symbol = .symbolName(Int32(symbolIndex))
            levels[outer].functionStart = symbols.symbols[symbolIndex].address
        } else if let top = cursor.chain.first {
            levels[outer].functionStart = unit.rangeStart(of: unit.scope(top), containing: address)
        }
        if row == nil && levels.count == 1 && levels[0].file == .none {
            levels[0].fromSymbolTableOnly = true
        }
    }

    /// The string `id` names in this file's answers; nil for `.none`.
    public func string(_ id: AnswerString) -> String? {
        switch id {
        case .none: return nil
        case .dwarf(let i): return strings[i]
        case .symbolName(let i): return symbols.symbols[Int(i)].name
        case .symbolFile(let i): return symbols.symbols[Int(i)].sourceFile
        }
    }

    private static func dwarfString(_ id: Int32) -> AnswerString { id >= 0 ? .dwarf(id) : .none }
}
