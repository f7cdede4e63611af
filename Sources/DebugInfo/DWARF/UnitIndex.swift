import CElfUtils

/// Everything one compile unit knows, read once through libdw and then answered by binary search.
/// This replaces libdw's per-address `dwarf_getscopes`, which walks the DIE tree on every query.
/// Immutable once read: a sweep asks it millions of times, and constant stored arrays are read
/// without the exclusivity checks a class's variables cost on every access (`make bench`,
/// symcache build).
final class UnitIndex {
    private let scopes: [Scope]
    private let ranges: [(start: UInt64, end: UInt64)]
    private let functions: IntervalIndex
    private let rows: [LineRow]
    /// Index into the file's string table for each `DW_AT_call_file` number of this unit.
    private let callFiles: [Int32]

    init(die cuDie: Dwarf_Die, strings: StringTable, lowestCodeAddress: UInt64) {
        var reader = Reader(strings: strings, lowestCodeAddress: lowestCodeAddress)
        var cu = cuDie
        let compDir = Reader.string(&cu, UInt32(DW_AT_comp_dir))
        reader.readLines(&cu, compDir: compDir)
        var pending: [Dwarf_Die] = []
        reader.collectFunctions(under: &cu, pending: &pending)
        while let next = pending.popLast() {
            var die = next
            reader.addFunction(&die, pending: &pending)
        }
        var intervals: [(start: UInt64, end: UInt64, value: Int32)] = []
        var i = 0
        while i < reader.scopes.count {
            let s = reader.scopes[i]
            for r in Int(s.firstRange)..<Int(s.firstRange + s.rangeCount) {
                intervals.append((reader.ranges[r].start, reader.ranges[r].end, Int32(i)))
            }
            i = Int(s.subtreeEnd)
        }
        functions = IntervalIndex(intervals)
        scopes = reader.scopes
        ranges = reader.ranges
        rows = reader.rows
        callFiles = reader.callFiles
    }

    private init(scopes: [Scope], ranges: [(start: UInt64, end: UInt64)], functions: IntervalIndex, rows: [LineRow], callFiles: [Int32]) {
        (self.scopes, self.ranges, self.functions, self.rows, self.callFiles) = (scopes, ranges, functions, rows, callFiles)
    }

    /// This unit with every string id moved up by `base`: for a unit read into a string table
    /// of its own (`DebugFile`'s second reader) whose entries were appended at `base`.
    func renumberingStrings(by base: Int32) -> UnitIndex {
        func moved(_ id: Int32) -> Int32 { id >= 0 ? id + base : id }
        var scopes = self.scopes
        for i in scopes.indices { scopes[i].name = moved(scopes[i].name) }
        var rows = self.rows
        for i in rows.indices { rows[i].file = moved(rows[i].file) }
        return UnitIndex(scopes: scopes, ranges: ranges, functions: functions, rows: rows, callFiles: callFiles.map(moved))
    }

    /// The union of this unit's function and line ranges, for units whose DIE states none.
    var coveredRanges: [(start: UInt64, end: UInt64)] {
        var out = ranges
        var start: UInt64?
        for row in rows {
            if row.endSequence {
                if let s = start, s < row.address { out.append((s, row.address)) }
                start = nil
            } else if start == nil {
                start = row.address
            }
        }
        return out
    }

    /// The code ranges of a DIE (`DW_AT_low_pc`/`high_pc` or `DW_AT_ranges`), without the ranges
    /// of discarded code: below `lowestCodeAddress`, or lld's -1 / -2 tombstones.
    static func addressRanges(of die: inout Dwarf_Die, lowestCodeAddress: UInt64) -> [(start: UInt64, end: UInt64)] {
        var out: [(start: UInt64, end: UInt64)] = []
        var base: Dwarf_Addr = 0
        var start: Dwarf_Addr = 0
        var end: Dwarf_Addr = 0
        var offset = dwarf_ranges(&die, 0, &base, &start, &end)
        while offset > 0 {
            if start < end && end < UInt64.max - 1 && start >= lowestCodeAddress { out.append((start, end)) }
            offset = dwarf_ranges(&die, offset, &base, &start, &end)
        }
        return out
    }

    /// The unit's tables while they are read.
    private struct Reader {
        let strings: StringTable
        /// Code below this address is in no section: linkers resolve code of discarded sections
        /// to 0 (gc-sections, COMDAT), so such ranges and rows describe nothing that runs.
        let lowestCodeAddress: UInt64
        var scopes: [Scope] = []
        var ranges: [(start: UInt64, end: UInt64)] = []
        var rows: [LineRow] = []
        var callFiles: [Int32] = []

        mutating func readLines(_ cu: inout Dwarf_Die, compDir: String?) {
            var lines: OpaquePointer?
            var count = 0
            guard dwarf_getsrclines(&cu, &lines, &count) == 0, let lines else { return }
            var fileIDs: [UInt: Int32] = [:]
            var lastFile: (key: UInt, id: Int32) = (0, -1)
            rows.reserveCapacity(count)
            for i in 0..<count {
                guard let line = dwarf_onesrcline(lines, i) else { continue }
                var addr: Dwarf_Addr = 0
                var lineNo: Int32 = 0
                var col: Int32 = 0
                var end = false
                guard dwarf_lineaddr(line, &addr) == 0, addr >= lowestCodeAddress else { continue }
                dwarf_lineno(line, &lineNo)
                dwarf_linecol(line, &col)
                dwarf_lineendsequence(line, &end)
                var file: Int32 = -1
                if let src = dwarf_linesrc(line, nil, nil) {
                    let key = UInt(bitPattern: src)
                    // Rows come in long stretches of one file, so the last file is asked first:
                    // a dictionary lookup per row showed in indexing a unit's lines (`make bench`,
                    // symcache build).
                    if key == lastFile.key {
                        file = lastFile.id
                    } else if let f = fileIDs[key] {
                        file = f
                    } else {
                        file = strings.intern(Self.absolute(String(cString: src), compDir: compDir))
                        fileIDs[key] = file
                    }
                    lastFile = (key, file)
                }
                rows.append(LineRow(address: addr, file: file, line: lineNo, column: col, endSequence: end))
            }
            // libdw sorts rows by address; keep that guarantee explicit (stable, so rows of one
            // address keep their sequence order).
            if !zip(rows, rows.dropFirst()).allSatisfy({ $0.address <= $1.address }) {
                rows = rows.enumerated().sorted { ($0.element.address, $0.offset) < ($1.element.address, $1.offset) }.map(\.element)
            }
            var files: OpaquePointer?
            var fileCount = 0
            if dwarf_getsrcfiles(&cu, &files, &fileCount) == 0, let files {
                callFiles = (0..<fileCount).map { i in
                    guard let name = dwarf_filesrc(files, i, nil, nil) else { return -1 }
                    return strings.intern(Self.absolute(String(cString: name), compDir: compDir))
                }
            }
        }

        /// Joins a relative path to the unit's directory and folds doubled separators, as
        /// llvm-symbolizer's path joining does (libdw joins "/" and "/x" into "//x").
        private static func absolute(_ path: String, compDir: String?) -> String {
            var joined = path
            if !path.hasPrefix("/"), let compDir, !compDir.isEmpty { joined = compDir + "/" + path }
            // A byte scan: `String.contains(_:)` resolved to Foundation's, which showed in a
            // symcache build's profile (`make bench`, symcache build) for every path of every unit.
            var previousByte: UInt8 = 0
            guard joined.utf8.contains(where: { byte in
                defer { previousByte = byte }
                return byte == UInt8(ascii: "/") && previousByte == UInt8(ascii: "/")
            }) else { return joined }
            var out = ""
            out.reserveCapacity(joined.utf8.count)
            var previousSlash = false
            for c in joined {
                if c == "/" && previousSlash { continue }
                previousSlash = c == "/"
                out.append(c)
            }
            return out
        }

        /// Calls `body` on each child of `parent`, in order.
        private static func forEachChild(of parent: inout Dwarf_Die, _ body: (inout Dwarf_Die) -> Void) {
            var child = Dwarf_Die()
            guard dwarf_child(&parent, &child) == 0 else { return }
            while true {
                body(&child)
                var next = Dwarf_Die()
                guard dwarf_siblingof(&child, &next) == 0 else { return }
                child = next
            }
        }

        /// Walks containers (namespaces, types, modules) looking for function definitions.
        mutating func collectFunctions(under parent: inout Dwarf_Die, pending: inout [Dwarf_Die]) {
            Self.forEachChild(of: &parent) { child in
                switch dwarf_tag(&child) {
                case Int32(DW_TAG_subprogram):
                    addFunction(&child, pending: &pending)
                case Int32(DW_TAG_namespace), Int32(DW_TAG_class_type), Int32(DW_TAG_structure_type),
                    Int32(DW_TAG_union_type), Int32(DW_TAG_module), Int32(DW_TAG_interface_type):
                    collectFunctions(under: &child, pending: &pending)
                default:
                    break
                }
            }
        }

        mutating func addFunction(_ die: inout Dwarf_Die, pending: inout [Dwarf_Die]) {
            let (first, count) = appendRanges(&die)
            guard count > 0 else { return }
            let index = scopes.count
            scopes.append(Scope(name: name(&die), firstRange: first, rangeCount: count))
            collectInlines(under: &die, pending: &pending)
            scopes[index].subtreeEnd = Int32(scopes.count)
        }

        /// Adds the inlined calls below `parent` (through lexical blocks) as its descendants.
        mutating func collectInlines(under parent: inout Dwarf_Die, pending: inout [Dwarf_Die]) {
            Self.forEachChild(of: &parent) { child in
                switch dwarf_tag(&child) {
                case Int32(DW_TAG_inlined_subroutine):
                    let (first, count) = appendRanges(&child)
                    if count > 0 {
                        let index = scopes.count
                        var scope = Scope(name: name(&child), firstRange: first, rangeCount: count)
                        scope.callFile = Self.unsigned(&child, UInt32(DW_AT_call_file)).map { Int32(truncatingIfNeeded: $0) } ?? -1
                        scope.callLine = Self.unsigned(&child, UInt32(DW_AT_call_line)).map { Int32(truncatingIfNeeded: $0) } ?? 0
                        scope.callColumn = Self.unsigned(&child, UInt32(DW_AT_call_column)).map { Int32(truncatingIfNeeded: $0) } ?? 0
                        scopes.append(scope)
                        collectInlines(under: &child, pending: &pending)
                        scopes[index].subtreeEnd = Int32(scopes.count)
                    }
                case Int32(DW_TAG_lexical_block), Int32(DW_TAG_try_block), Int32(DW_TAG_catch_block),
                    Int32(DW_TAG_with_stmt), Int32(DW_TAG_common_block):
                    collectInlines(under: &child, pending: &pending)
                case Int32(DW_TAG_subprogram):
                    // A nested function is its own top-level scope; adding it here would break
                    // the contiguous pre-order of the enclosing function's subtree.
                    pending.append(child)
                default:
                    break
                }
            }
        }

        private mutating func appendRanges(_ die: inout Dwarf_Die) -> (Int32, Int32) {
            let first = Int32(ranges.count)
            ranges += UnitIndex.addressRanges(of: &die, lowestCodeAddress: lowestCodeAddress)
            return (first, Int32(ranges.count) - first)
        }

        private func name(_ die: inout Dwarf_Die) -> Int32 {
            var attr = Dwarf_Attribute()
            for code in [DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name] {
                if dwarf_attr_integrate(&die, UInt32(code), &attr) != nil, let s = dwarf_formstring(&attr) {
                    return strings.intern(s)
                }
            }
            return -1
        }

        static func string(_ die: inout Dwarf_Die, _ code: UInt32) -> String? {
            var attr = Dwarf_Attribute()
            guard dwarf_attr(&die, code, &attr) != nil, let s = dwarf_formstring(&attr) else { return nil }
            return String(cString: s)
        }

        static func unsigned(_ die: inout Dwarf_Die, _ code: UInt32) -> UInt64? {
            var attr = Dwarf_Attribute()
            var value: Dwarf_Word = 0
            guard dwarf_attr(&die, code, &attr) != nil, dwarf_formudata(&attr, &value) == 0 else { return nil }
            return value
        }
    }

    // MARK: Answering

    /// Every address where `row(at:)`, `scopeChain(at:)` or `rangeStart(of:containing:)` can
    /// change its answer: row addresses and the bounds of every scope range.
    var boundaryCount: Int { rows.count + 2 * ranges.count }

    func appendBoundaries(to out: inout [UInt64]) {
        for row in rows { out.append(row.address) }
        for r in ranges {
            out.append(r.start)
            out.append(r.end)
        }
    }

    /// The line-table row for `address`, following llvm-symbolizer: the last row at or before
    /// the address, unless that ends a sequence. `hint` is where the previous (lower) address's
    /// search landed in this unit, -1 for none (`lastIndex(atOrBelow:)`).
    func row(at address: UInt64, hint: inout Int) -> LineRow? {
        var i = lastIndex(atOrBelow: address, count: rows.count, hint: hint) { rows[$0].address }
        hint = i
        guard i >= 0 else { return nil }
        let at = rows[i].address
        // Where one sequence ends exactly where another starts, the address belongs to the new one.
        while i >= 0 && rows[i].address == at && rows[i].endSequence { i -= 1 }
        // Only end-of-sequence rows at or before the address: it lies in a gap.
        guard i >= 0, rows[i].address == at else { return nil }
        return rows[i]
    }

    /// Scopes containing `address`, outermost (the function) first, as indexes for `scope(_:)`.
    /// `hint` is the function interval found last in this unit (`IntervalIndex.find(_:hint:)`).
    func scopeChain(at address: UInt64, into chain: inout [Int32], hint: inout Int) {
        chain.removeAll(keepingCapacity: true)
        guard let top = functions.find(address, hint: &hint) else { return }
        chain.append(top)
        // Through buffer pointers: a sweep asks once per boundary and scans every child of
        // each level before the one it finds (`make bench`, symcache build).
        scopes.withUnsafeBufferPointer { scopes in
            ranges.withUnsafeBufferPointer { ranges in
                var current = Int(top)
                descend: while true {
                    var child = current + 1
                    let end = Int(scopes[current].subtreeEnd)
                    while child < end {
                        let scope = scopes[child]
                        var r = Int(scope.firstRange)
                        let rangesEnd = r + Int(scope.rangeCount)
                        while r < rangesEnd {
                            if ranges[r].start <= address && address < ranges[r].end {
                                chain.append(Int32(child))
                                current = child
                                continue descend
                            }
                            r += 1
                        }
                        child = Int(scope.subtreeEnd)
                    }
                    break
                }
            }
        }
    }

    func scope(_ index: Int32) -> Scope { scopes[Int(index)] }

    func rangeStart(of scope: Scope, containing address: UInt64) -> UInt64? {
        for r in Int(scope.firstRange)..<Int(scope.firstRange + scope.rangeCount) where ranges[r].start <= address && address < ranges[r].end {
            return ranges[r].start
        }
        return nil
    }

    /// The string-table id of `scope`'s `DW_AT_call_file`, -1 for none.
    func callFile(_ scope: Scope) -> Int32 {
        guard scope.callFile >= 0, Int(scope.callFile) < callFiles.count else { return -1 }
        return callFiles[Int(scope.callFile)]
    }
}
