import DebugInfo
import Demangling
import Foundation
import SymbolCache
import TestSupport

/// The independent oracle the symcache is held to: the DWARF path itself (`DebugFile.frames(at:)`,
/// on a file opened afresh) plus `Demangler.demangle` in both styles, per address.
final class SymbolCacheOracle {
    let file: DebugFile
    private var names: [String: (String, String)] = [:]

    init(_ file: DebugFile) { self.file = file }

    func frames(at address: UInt64) -> [CachedFrame] {
        file.frames(at: address).map { f in
            guard let symbol = f.symbol else { return CachedFrame(source: f, fullName: nil, simplifiedName: nil) }
            let (full, simplified) = names[symbol] ?? {
                let pair = (Demangler.demangle(symbol, style: .full), Demangler.demangle(symbol, style: .simplified))
                names[symbol] = pair
                return pair
            }()
            return CachedFrame(source: f, fullName: full, simplifiedName: simplified)
        }
    }

    /// Every byte address of the file's executable sections, plus the neighbours of every
    /// address where the answer may change and addresses far outside the code.
    static func addresses(_ file: DebugFile, boundaries: AnswerBoundaries) -> [UInt64] {
        var ranges: [(UInt64, UInt64)] = []
        if let slice = file.machO {
            // S_ATTR_PURE_INSTRUCTIONS | S_ATTR_SOME_INSTRUCTIONS: code, with or without bytes (a dSYM's have none).
            for s in slice.sections where s.flags & 0x8000_0400 != 0 { ranges.append((s.address, s.address + s.size)) }
        } else {
            for s in file.elf.sections where s.isExecutable && s.address > 0 { ranges.append((s.address, s.address + s.size)) }
        }
        var out = Set<UInt64>()
        for (start, end) in ranges { for a in start..<end { out.insert(a) } }
        for b in boundaries { for d in [-2, -1, 0, 1] { out.insert(UInt64(bitPattern: Int64(bitPattern: b) &+ Int64(d))) } }
        for a: UInt64 in [0, 1, 0x1000, 0xffff_ffff, 0x1_0000_0000, 0x7fff_ffff_ffff, UInt64.max - 1, UInt64.max] { out.insert(a) }
        if let last = boundaries.last { for a in [last &+ 0x1000, last &+ 0x1_0000_0000, last &+ 0x2_0000_0000] { out.insert(a) } }
        return out.sorted()
    }
}
