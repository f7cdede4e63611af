/// Every cross-reference of a symcache checked once at open, so that lookups can follow them
/// without a check each: string ends ascending, each string inside one string block, the blocks
/// ascending and ending with the strings, function and caller records' indexes inside their tables (a caller's next always an earlier caller, so a chain ends), and
/// every block decoded whole: its varints inside its bytes and ending where the next block begins,
/// its ids inside their tables, its starts rising strictly and above the previous block's. The
/// checksum already rules out damage; this rules out a file written with a valid checksum by
/// something other than the writer (a fuzzer, an attacker).
///
/// Linear in the tables; the compressed strings are not decompressed here (a block that does not
/// decompress to its size reads as zeros, `SymbolCache.stringBlock`).
enum SymbolCacheValidation {
    static func problem(_ bytes: UnsafeRawBufferPointer, _ layout: SymbolCacheLayout) -> String? {
        func u32(_ offset: Int) -> UInt32 { UInt32(littleEndian: bytes.load(fromByteOffset: offset, as: UInt32.self)) }
        func u64(_ offset: Int) -> UInt64 { UInt64(littleEndian: bytes.load(fromByteOffset: offset, as: UInt64.self)) }
        let none = SymbolCacheLayout.none

        var previousEnd: UInt32 = 0
        var blockIndex = 0
        func blockEnd(_ i: Int) -> Int { Int(u32(layout.stringBlocksOffset + i * 8 + 4)) }
        for i in 0..<layout.stringCount {
            let end = u32(layout.stringEndsOffset + i * 4) & ~SymbolCacheLayout.escapeBit
            if end < previousEnd || Int(end) > layout.blobSize { return "string \(i) ends at \(end), outside [\(previousEnd), \(layout.blobSize)]" }
            // A string lies inside one block: no block ends strictly inside it.
            while blockIndex < layout.stringBlockCount && blockEnd(blockIndex) <= Int(previousEnd) { blockIndex += 1 }
            if end > previousEnd && (blockIndex == layout.stringBlockCount || blockEnd(blockIndex) < Int(end)) {
                return "string \(i) crosses the end of a string block"
            }
            previousEnd = end
        }
        var previousBlock = (compressed: UInt32(0), end: UInt32(0))
        for i in 0..<layout.stringBlockCount {
            let compressed = u32(layout.stringBlocksOffset + i * 8), end = u32(layout.stringBlocksOffset + i * 8 + 4)
            if compressed <= previousBlock.compressed || end <= previousBlock.end { return "string block \(i) is empty or out of order" }
            previousBlock = (compressed, end)
        }
        if Int(previousBlock.compressed) != layout.compressedSize || Int(previousBlock.end) != layout.blobSize {
            return "string blocks end at \(previousBlock.end) (\(previousBlock.compressed) compressed), the strings at \(layout.blobSize) (\(layout.compressedSize))"
        }
        let strings = UInt32(layout.stringCount)
        let functions = UInt32(layout.functionCount)
        let callers = UInt32(layout.callerCount)
        for i in 0..<layout.functionCount {
            let record = layout.functionsOffset + i * SymbolCacheLayout.functionRecordSize
            typealias F = FunctionRecord.Offset
            let symbol = u32(record + F.symbol), full = u32(record + F.fullName)
            // `none` is above every index, so it must be told apart; no array here: this loop runs
            // once per function at every open, and an array per function was most of its cost.
            if symbol != none && symbol >= strings { return "function \(i) names string \(symbol) of \(strings)" }
            if full != none && full >= strings { return "function \(i) names string \(full) of \(strings)" }
            if u32(record + F.flags) & ~FunctionRecord.Flag.known != 0 { return "function \(i) has unknown flags" }
            // A name without its demangled form (or the reverse) would answer differently by style.
            if (symbol == none) != (full == none) {
                return "function \(i) has demangled names that do not match its symbol"
            }
        }
        for i in 0..<layout.callerCount {
            let record = layout.callersOffset + i * SymbolCacheLayout.callerRecordSize
            typealias C = CallerRecord.Offset
            let function = u32(record + C.function), file = u32(record + C.file), next = u32(record + C.next)
            if function >= functions { return "caller \(i) names function \(function) of \(functions)" }
            if file != none && file >= strings { return "caller \(i) names string \(file) of \(strings)" }
            if next != none && next >= UInt32(i) { return "caller \(i) is called from caller \(next), not an earlier one" }
        }
        let blocks = (layout.segmentCount + SegmentCoding.blockLength - 1) / SegmentCoding.blockLength
        if blocks != layout.blockCount { return "\(layout.blockCount) blocks for \(layout.segmentCount) segments" }
        var last: UInt64?
        var expectedOffset = layout.streamOffset
        for b in 0..<layout.blockCount {
            let first = u64(layout.blockStartsOffset + b * 8)
            if let last, first <= last { return "block \(b) does not start after block \(b - 1)" }
            let offset = layout.streamOffset + Int(u32(layout.blockOffsetsOffset + b * 4))
            if offset != expectedOffset { return "block \(b) begins at \(offset - layout.streamOffset), where block \(b - 1) ended at \(expectedOffset - layout.streamOffset)" }
            let end = b + 1 < layout.blockCount
                ? layout.streamOffset + Int(u32(layout.blockOffsetsOffset + b * 4 + 4)) : layout.streamOffset + layout.streamSize
            if end < offset || end > layout.streamOffset + layout.streamSize { return "block \(b) ends outside the segment stream" }
            var bad: String?
            let count = min(SegmentCoding.blockLength, layout.segmentCount - b * SegmentCoding.blockLength)
            let (problem, position) = SegmentCoding.decode(bytes, offset: offset, end: end, firstStart: first, count: count) { start, answer in
                last = start
                guard let answer else { return true }
                if answer.function >= functions { bad = "names function \(answer.function) of \(functions)" }
                if answer.file != none && answer.file >= strings { bad = "names string \(answer.file) of \(strings)" }
                if answer.caller != none && answer.caller >= callers { bad = "names caller \(answer.caller) of \(callers)" }
                return bad == nil
            }
            if let problem { return "block \(b): \(problem)" }
            if let bad { return "a segment of block \(b) \(bad)" }
            if position != end { return "block \(b) has \(end - position) bytes after its segments" }
            expectedOffset = end
        }
        if expectedOffset != layout.streamOffset + layout.streamSize { return "the segment stream has bytes after its last block" }
        return nil
    }
}
