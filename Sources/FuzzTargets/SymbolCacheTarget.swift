import Demangling
import Foundation
import ReportModel
import SymbolCache

/// The symcache reader on hostile bytes: open (header, size, checksums, structure), then
/// lookups across and around everything it covers, comparing `frames(at:)` with the visitor.
///
/// Each input is tried twice: as it is (the checksums turn away nearly every mutation, which
/// fuzzes the header checks), and resealed with its checksums recomputed, which lets mutations
/// reach the structural checks and the lookups behind them, as a file written by something
/// other than our writer would. Both take the expected key from the header itself.
enum SymbolCacheTarget {
    static func openAndLookUp(_ data: Data) throws(FuzzFailure) -> String {
        let bytes = [UInt8](data)
        let asIs = try attempt(bytes, name: "input.symcache")
        let resealed = try attempt(SymbolCache.resealed(bytes), name: "resealed.symcache")
        return "as is: \(asIs); resealed: \(resealed)"
    }

    private static func attempt(_ bytes: [UInt8], name: String) throws(FuzzFailure) -> String {
        let path = try Scratch.shared.write(Data(bytes), name: name)
        let key = SymbolCache.recordedKey(bytes) ?? SymbolCacheKey(source: SymbolCacheSource(size: 0, modifiedNanoseconds: 0, inode: 0))
        let cache: SymbolCache
        do throws(SymbolCacheError) { cache = try SymbolCache(path: path, expecting: key) } catch {
            if error.description.isEmpty { throw FuzzFailure("refusal without a message") }
            return "refused: \(error)"
        }
        // Addresses around the segment base, spread over 32 bits past it, and the extremes.
        let base = cache.preferredBase
        var addresses: [UInt64] = [0, 1, UInt64.max, UInt64.max - 1, base, base &- 1]
        var step: UInt64 = 1
        while step < 1 << 34 {
            addresses += [base &+ step, base &+ step &- 1, base &+ step &* 3 / 2]
            step <<= 1
        }
        var answered = 0
        for a in addresses {
            let frames = cache.frames(at: a)
            var visited = 0
            var derivedProblem: String?
            cache.visitFrames(at: a) { f in
                if f.index != visited || f.count != frames.count { visited = -1_000_000 }
                visited += 1
                _ = (f.symbol?.bytes.count, f.file?.bytes.count, f.fullName?.string)
                // The simplified style of a Swift name is derived from its symbol at lookup
                // (format version 4): any bytes a symbol holds go to the demangler, and the
                // verdict on escaping is made with the derived name. (A stored string's verdict
                // is the writer's, which a resealed input may change.)
                if let symbol = f.symbol, Demangler.family(ofUTF8: symbol.bytes)?.stylesDiffer == true, let simplified = f.simplifiedName,
                    simplified.needsTerminalEscaping != (TerminalText.escape(simplified.string) != simplified.string)
                {
                    derivedProblem = "the simplified name of \(symbol.string) has the wrong verdict on terminal escaping"
                }
            }
            if let derivedProblem { throw FuzzFailure("0x\(String(a, radix: 16)): \(derivedProblem)") }
            guard visited == frames.count else {
                throw FuzzFailure("0x\(String(a, radix: 16)): the visitor saw \(visited) levels, frames(at:) \(frames.count)")
            }
            if frames.contains(where: { ($0.source.symbol == nil) != ($0.fullName == nil) || ($0.fullName == nil) != ($0.simplifiedName == nil) }) {
                throw FuzzFailure("0x\(String(a, radix: 16)): a name without its demangled forms")
            }
            // Only Swift names have a simplified form of their own; any other answers its full name.
            if let f = frames.first(where: { $0.source.symbol.map { Demangler.family(of: $0)?.stylesDiffer != true } == true && $0.simplifiedName != $0.fullName }) {
                throw FuzzFailure("0x\(String(a, radix: 16)): \(f.source.symbol ?? "") is not a Swift name, yet its simplified name differs from its full one")
            }
            if !frames.isEmpty { answered += 1 }
        }
        return "opened: \(cache.architecture), \(cache.segmentCount) segments, \(cache.functionCount) functions, \(answered) of \(addresses.count) lookups answered"
    }
}
