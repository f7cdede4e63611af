import Compression
import DebugInfo
import Demangling
import Foundation
import ReportModel
import SystemCalls
import StacklineDeflate

/// Builds a symcache's bytes from a debug file.
///
/// One sweep upwards over the addresses where `DebugFile.frames(at:)` may change its answer
/// (`DebugFile.answerBoundaries()`), in two parts at once: the lower half of the boundaries on
/// the calling thread and the upper half on a thread of its own, each with tables of its own
/// (`SweepPart`), joined after with the upper part's ids moved past the lower part's
/// (`RecordShift`). A function or string met by both parts is stored twice, which costs a
/// little size and no answer. Beside them a third thread demangles the names
/// (`DemanglingQueue`). On one thread the sweep was most of a large build's wall time while
/// the other core idled (`make bench`, symcache build).
struct SymbolCacheBuilder {
    private let file: DebugFile
    private let queue: DemanglingQueue
    /// Fewer boundaries than this per part are swept on one thread.
    static let minimumPartSize = 32

    private init(file: DebugFile) {
        self.file = file
        queue = DemanglingQueue(symbolCount: file.symbolCount)
    }

    /// The symcache's bytes in order, header first: `key` names the inputs the header records.
    static func build(from file: DebugFile, key: SymbolCacheKey) throws(SymbolCacheError) -> [[UInt8]] {
        try SymbolCacheBuilder(file: file).run(key: key)
    }

    /// Queues the mangled names of the symbols in code before the sweep starts, so that the
    /// demangling thread works while the units are indexed: nearly every function record is
    /// named from one of them. Names the sweep meets otherwise are queued when met. Runs on a
    /// thread of its own beside the indexing's start, which keeps one core busy at first
    /// (`make bench`, symcache build); `wait()` gives which names were queued and the demanglers
    /// they went to.
    // Sendable: `result` written by the scanning thread before it signals, read after the wait.
    private final class SymbolNameScan: @unchecked Sendable {
        private var result: (AnswerStringArray<Bool>, Set<Demangler.Family>)?
        private let done = DispatchSemaphore(value: 0)

        init(_ file: DebugFile, queue: DemanglingQueue) {
            let table = file.symbolTable
            let code = file.elf.sections.filter { $0.isExecutable && $0.address > 0 }.map { ($0.address, $0.address &+ $0.size) }
            Thread { [self] in
                var asked = AnswerStringArray(empty: false, symbolCount: table.symbols.count)
                var families: Set<Demangler.Family> = []
                var names: [(id: AnswerString, name: String)] = []
                names.reserveCapacity(table.symbols.count)
                // By index, reading the addresses alone: copying each symbol retained and
                // released its strings (`make bench`, symcache build).
                for (i, address) in table.addresses.enumerated()
                where code.isEmpty || code.contains(where: { address >= $0.0 && address < $0.1 }) {
                    SweepPart.ask(.symbolName(Int32(i)), table.symbols[i].name, asked: &asked, families: &families, into: &names)
                }
                queue.add(contentsOf: names)
                result = (asked, families)
                done.signal()
            }.start()
        }

        func wait() -> (AnswerStringArray<Bool>, Set<Demangler.Family>) {
            done.wait()
            return result ?? (AnswerStringArray(empty: false), [])
        }
    }

    private func run(key: SymbolCacheKey) throws(SymbolCacheError) -> [[UInt8]] {
        let path = file.elf.path
        var parts = try sweep(symbolNames: SymbolNameScan(file, queue: queue), path: path)
        let usedDemanglers = parts.reduce(into: Set<Demangler.Family>()) { $0.formUnion($1.families) }
        var (records, callerRecords, recordNames, shifts) = try Self.joinRecords(&parts, path: path)
        let segments = Self.joinSegments(&parts, shifts)
        let (strings, stringEnds) = try joinStrings(parts: &parts, records: &records, names: recordNames, path: path)
        let functionCount = records.count / SymbolCacheLayout.functionRecordSize
        let callerCount = callerRecords.count / SymbolCacheLayout.callerRecordSize
        guard strings.size < Int(SymbolCacheLayout.escapeBit), segments.count < Int(UInt32.max), segments.stream.count < Int(UInt32.max),
            stringEnds.count < Int(UInt32.max), strings.compressed.count < Int(UInt32.max),
            functionCount < Int(SymbolCacheLayout.none), callerCount < Int(SymbolCacheLayout.none)
        else {
            throw .unwritable(path: path, reason: "too large for format version \(SymbolCacheVersions.current)")
        }
        let layout = SymbolCacheLayout(
            segmentCount: segments.count, blockCount: segments.blockStarts.count, streamSize: segments.stream.count,
            callerCount: callerCount, functionCount: functionCount, stringCount: stringEnds.count, blobSize: strings.size,
            stringBlockCount: strings.blocks.count, compressedSize: strings.compressed.count)
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
        add(records, at: layout.functionsOffset)
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
            recorded.usedDemanglers = usedDemanglers
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

    /// The boundaries swept in parts, each part's sweep finished (`SweepPart.finishSweep`).
    private func sweep(symbolNames: SymbolNameScan, path: String) throws(SymbolCacheError) -> [SweepPart] {
        // libdw's reader goes before the boundaries are gathered: its line tables and the
        // boundaries (with their sort's buffer) were the peak of a build together
        // (`make bench`, the symcache build's peak RSS).
        file.endDWARFReading()
        SystemCall.returnFreedMemory()
        let boundaries = file.answerBoundaries()
        let count = boundaries.count
        let (asked, families) = symbolNames.wait()
        var lower = SweepPart(file: file, queue: queue, asked: asked, families: families)
        guard count >= 2 * Self.minimumPartSize else {
            try lower.sweep(boundaries, 0..<count, isFirst: true, path: path)
            lower.finishSweep()
            return [lower]
        }
        let middle = count / 2
        let upper = UpperPart(SweepPart(file: file, queue: queue, asked: asked, families: families))
        let done = DispatchSemaphore(value: 0)
        Thread {
            upper.outcome = Result { () throws(SymbolCacheError) in try upper.part.sweep(boundaries, middle..<count, isFirst: false, path: path) }
            upper.part.finishSweep()
            done.signal()
        }.start()
        let lowerOutcome = Result { () throws(SymbolCacheError) in try lower.sweep(boundaries, 0..<middle, isFirst: true, path: path) }
        lower.finishSweep()
        done.wait()
        try lowerOutcome.get()
        try upper.outcome.get()
        return [lower, upper.part]
    }

    /// The part swept on a thread of its own, handed back when the thread signals.
    // Sendable: written only by that thread until it signals, read only after.
    private final class UpperPart: @unchecked Sendable {
        var part: SweepPart
        var outcome: Result<Void, SymbolCacheError> = .success(())
        init(_ part: SweepPart) { self.part = part }
    }

    /// The parts' function and caller records end to end with their ids moved, each record's
    /// name, and how far each part's ids moved.
    private static func joinRecords(
        _ parts: inout [SweepPart], path: String
    ) throws(SymbolCacheError) -> (functions: [UInt8], callers: [UInt8], names: [AnswerString], shifts: [RecordShift]) {
        var functions: [UInt8] = []
        var callers: [UInt8] = []
        var names: [AnswerString] = []
        var shifts: [RecordShift] = []
        var next = RecordShift()
        for k in parts.indices {
            let part = parts[k]
            parts[k].dropRecords()
            shifts.append(next)
            var f = part.functionRecords, c = part.callerRecords
            FunctionRecord.shift(&f, by: next)
            CallerRecord.shift(&c, by: next)
            functions += f
            callers += c
            names += part.recordNames
            guard let after = next.after(functions: part.functionCount, strings: part.own.ends.count, callers: part.callerCount) else {
                throw .unwritable(path: path, reason: "too many functions for format version \(SymbolCacheVersions.current)")
            }
            next = after
        }
        return (functions, callers, names, shifts)
    }

    /// The first part's segments, followed by each later part's with its ids moved (merged
    /// where the answer across the seam is the same).
    private static func joinSegments(_ parts: inout [SweepPart], _ shifts: [RecordShift]) -> SegmentEncoder {
        guard var joined = parts.first else { return SegmentEncoder() }
        parts[0].dropSegments()
        for k in parts.indices.dropFirst() {
            parts[k].segments.forEachSegment { start, answer in
                joined.append(start: start, answer: answer.map(shifts[k].moved), keepingLeadingNoAnswer: false)
            }
            parts[k].dropSegments()
        }
        return joined.segments
    }

    private static func littleEndian<T: FixedWidthInteger>(_ values: [T]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(values.count * MemoryLayout<T>.size)
        for v in values { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        return out
    }

    /// All the strings and their ends: each part's own, then each demangling thread's full
    /// names; and each function record's full name set (the name itself unless a demangler took
    /// it). `names`: each record's name as the debug file knows it.
    private func joinStrings(
        parts: inout [SweepPart], records: inout [UInt8], names: [AnswerString], path: String
    ) throws(SymbolCacheError) -> (strings: CompressedStrings, ends: [UInt32]) {
        let made = queue.finish()
        var strings = CompressedStrings()
        var stringEnds: [UInt32] = []
        // Where each run starts among all the strings (the parts' own, then each demangling
        // thread's), checked: the counts come from the debug file.
        var starts: [UInt32] = []
        var next = RecordShift()
        for count in parts.map({ $0.own.ends.count }) + made.map({ $0.full.ends.count }) {
            starts.append(next.strings)
            guard let after = next.after(functions: 0, strings: count, callers: 0) else {
                throw .unwritable(path: path, reason: "too many strings for format version \(SymbolCacheVersions.current)")
            }
            next = after
        }
        let fullBases = Array(starts.dropFirst(parts.count))
        for run in parts.map(\.own) + made.map(\.full) {
            let shift = UInt32(truncatingIfNeeded: min(strings.size, Int(SymbolCacheLayout.escapeBit) - 1))
            for end in run.ends {
                stringEnds.append(((end & ~SymbolCacheLayout.escapeBit) &+ shift) | (end & SymbolCacheLayout.escapeBit))
            }
            strings.append(run.strings)
        }
        for k in parts.indices { parts[k].dropStrings() }
        guard !strings.failed else { throw .unwritable(path: path, reason: "compressing its strings failed") }
        records.withUnsafeMutableBytes { raw in
            for (record, id) in names.enumerated() {
                guard let k = made.indices.first(where: { made[$0].names[id] != DemanglingQueue.Results.none }) else { continue }
                let offset = record * SymbolCacheLayout.functionRecordSize + FunctionRecord.Offset.fullName
                raw.storeBytes(of: (made[k].names[id] &+ fullBases[k]).littleEndian, toByteOffset: offset, as: UInt32.self)
            }
        }
        return (strings, stringEnds)
    }
}
