/// Why a debug file of either container format cannot be used.
public enum DebugFileError: Error, Equatable, CustomStringConvertible {
    case elf(ElfError)
    case machO(MachOError)

    public var description: String {
        switch self {
        case .elf(let e): return e.description
        case .machO(let e): return e.description
        }
    }
}
