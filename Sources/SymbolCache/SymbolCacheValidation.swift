/// Every cross-reference of a symcache checked once at open, so that lookups can follow them
/// without a check each: string refs inside the blob, frame and function indexes inside their
/// tables, chain starts ascending and inside the frames, segment chains inside the chains,
/// segment starts strictly ascending. The checksum already rules out damage; this rules out a
/// file written with a valid checksum by something other than the writer (a fuzzer, an attacker).
///
/// Linear in the tables and far cheaper than the checksum: the blob, the bulk, is not walked.
enum SymbolCacheValidation {
    static func problem(_ bytes: UnsafeRawBufferPointer, _ layout: SymbolCacheLayout) -> String? {
        func u32(_ offset: Int) -> UInt32 { UInt32(littleEndian: bytes.load(fromByteOffset: offset, as: UInt32.self)) }
        func u64(_ offset: Int) -> UInt64 { UInt64(littleEndian: bytes.load(fromByteOffset: offset, as: UInt64.self)) }
        let none = SymbolCacheLayout.none

        for i in 0..<layout.stringCount {
            let ref = layout.stringRefsOffset + i * 8
            let end = UInt64(u32(ref)) + UInt64(u32(ref + 4) & ~SymbolCacheLayout.escapeBit)
            if end > UInt64(layout.blobSize) { return "string \(i) ends at \(end), past the blob (\(layout.blobSize) bytes)" }
        }
        let strings = UInt32(layout.stringCount)
        let functions = UInt32(layout.functionCount)
        for i in 0..<layout.frameCount {
            let record = layout.framesOffset + i * SymbolCacheLayout.frameRecordSize
            let function = u32(record + FrameRecord.Offset.function)
            if function >= functions { return "frame \(i) names function \(function) of \(functions)" }
            let file = u32(record + FrameRecord.Offset.file)
            if file != none && file >= strings { return "frame \(i) names string \(file) of \(strings)" }
        }
        for i in 0..<layout.functionCount {
            let record = layout.functionsOffset + i * SymbolCacheLayout.functionRecordSize
            typealias F = FunctionRecord.Offset
            let symbol = u32(record + F.symbol), full = u32(record + F.fullName), simplified = u32(record + F.simplifiedName)
            // `none` is above every index, so it must be told apart; no array here: this loop runs
            // once per function at every open, and an array per function was most of its cost.
            if symbol != none && symbol >= strings { return "function \(i) names string \(symbol) of \(strings)" }
            if full != none && full >= strings { return "function \(i) names string \(full) of \(strings)" }
            if simplified != none && simplified >= strings { return "function \(i) names string \(simplified) of \(strings)" }
            if u32(record + F.flags) & ~FunctionRecord.Flag.known != 0 { return "function \(i) has unknown flags" }
            // A name without its demangled forms (or the reverse) would answer differently by style.
            if (symbol == none) != (full == none) || (symbol == none) != (simplified == none) {
                return "function \(i) has demangled names that do not match its symbol"
            }
        }
        var previous = u32(layout.chainStartsOffset)
        if previous != 0 { return "the first chain starts at frame \(previous)" }
        for i in stride(from: 1, through: layout.chainCount, by: 1) {
            let start = u32(layout.chainStartsOffset + i * 4)
            if start <= previous { return "chain \(i - 1) is empty or reversed" }
            previous = start
        }
        if Int(previous) != layout.frameCount { return "chains end at frame \(previous) of \(layout.frameCount)" }
        let chains = UInt32(layout.chainCount)
        var last: UInt64?
        for i in 0..<layout.segmentCount {
            let chain = u32(layout.chainOfSegmentOffset + i * 4)
            if chain != none && chain >= chains { return "segment \(i) answers chain \(chain) of \(chains)" }
            let start = layout.wideStarts ? u64(layout.startsOffset + i * 8) : UInt64(u32(layout.startsOffset + i * 4))
            if let last, start <= last { return "segment \(i) does not start after segment \(i - 1)" }
            last = start
        }
        return nil
    }
}
