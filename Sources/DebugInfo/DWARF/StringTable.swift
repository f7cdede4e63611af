import CElfUtils

/// Strings shared by all units of one file. A name libdw hands out is kept as its pointer into
/// the file's section data (`.debug_str`, `.debug_info`), which lives as long as the file is
/// open, and becomes a `String` only when an answer asks for it: a large Swift binary has
/// hundreds of thousands of linkage names, and copying and hashing each at index time showed
/// in a symcache build's time and memory (`make bench`, symcache build).
/// Paths, which the unit joins to its directory, are kept as strings.
final class StringTable {
    private enum Entry {
        case section(UnsafePointer<CChar>)
        case joined(String)
    }

    private var entries: [Entry] = []
    private var byPointer: [UInt: Int32] = [:]
    private var byValue: [String: Int32] = [:]

    var count: Int { entries.count }

    /// The id of the string at `p`; equal pointers get one id (the linker merges `.debug_str`,
    /// so equal strings are nearly always one pointer; where not, two ids name equal strings).
    func intern(_ p: UnsafePointer<CChar>) -> Int32 {
        let key = UInt(bitPattern: p)
        if let i = byPointer[key] { return i }
        let i = Int32(entries.count)
        entries.append(.section(p))
        byPointer[key] = i
        return i
    }

    func intern(_ s: String) -> Int32 {
        if let i = byValue[s] { return i }
        let i = Int32(entries.count)
        entries.append(.joined(s))
        byValue[s] = i
        return i
    }

    /// Appends every entry of `other` (a table a second reader filled, whose section pointers
    /// stay valid as long as that reader does): `other`'s id `i` is `base + i` here.
    func append(_ other: StringTable) -> Int32 {
        let base = Int32(entries.count)
        for (i, entry) in other.entries.enumerated() {
            let id = base + Int32(i)
            entries.append(entry)
            switch entry {
            case .section(let p): byPointer[UInt(bitPattern: p)] = id
            case .joined(let s): if byValue[s] == nil { byValue[s] = id }
            }
        }
        return base
    }

    subscript(i: Int32) -> String? {
        guard i >= 0 else { return nil }
        switch entries[Int(i)] {
        case .section(let p): return String(cString: p)
        case .joined(let s): return s
        }
    }
}
