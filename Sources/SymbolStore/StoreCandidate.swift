import DebugInfo
import Foundation
import ReportModel

/// One file, or one slice of a fat Mach-O file, validated and described, ready to be stored.
struct StoreCandidate {
    /// GNU build-id or Mach-O UUID.
    var id: BuildID
    var name: String
    var arch: Arch
    var kind: String
    var size: UInt64
    var hasDWARF: Bool
    var hasSymbolTable: Bool
    /// Holds runnable code: fills the store's executable role.
    var isImage: Bool
    var format: String
    /// The open input; its path is where the file came from.
    var file: RegularFile
    var source: String { file.path }
    /// The bytes to store: the whole file, or one slice of it.
    var range: Range<UInt64>?

    /// Validates `file` (every DWARF unit header is read: a file libdw cannot walk is refused
    /// now, not at crash time) and describes what it would store. A fat file yields one
    /// candidate per slice, or fails as a whole. `file.path` names it in messages and `source`.
    static func identify(file: RegularFile) throws(StoreError) -> [StoreCandidate] {
        let path = file.path
        let name = (path as NSString).lastPathComponent
        switch ObjectFormat.of(file: file) {
        case .machO, .fatMachO:
            let machO: MachOFile, debugFiles: [DebugFile]
            do { (machO, debugFiles) = try DebugFile.slices(machO: file) } catch { throw .rejectedMachO(error) }
            var out: [StoreCandidate] = []
            for (slice, debug) in zip(machO.slices, debugFiles) {
                out.append(StoreCandidate(
                    id: slice.uuid, name: name, arch: slice.arch, kind: slice.kindDescription, size: slice.size,
                    hasDWARF: debug.elf.hasDWARF, hasSymbolTable: debug.symbolCount > 0, isImage: slice.isImage,
                    format: "mach-o", file: file,
                    range: machO.isFat ? slice.offset..<slice.offset + slice.size : nil))
            }
            return out
        default:
            let elf: ElfFile
            do {
                elf = try ElfFile(file: file)
                try DebugFile.validate(elf: elf)
            } catch {
                throw .rejected(error)
            }
            guard let id = elf.buildID else { throw .noBuildID(path: path) }
            return [StoreCandidate(
                id: id, name: name, arch: elf.architecture, kind: elf.kindDescription, size: elf.fileSize,
                hasDWARF: elf.hasDWARF, hasSymbolTable: elf.answersFromSymbols,
                isImage: !elf.isDebugOnly && !elf.loadSegments.isEmpty, format: "elf", file: file, range: nil)]
        }
    }

    /// Writes the bytes to store to `destination`, a name that must not exist yet, copied
    /// from the descriptor that was validated: a fat file's slice becomes a thin file of its
    /// own, so a worker maps only the architecture it needs.
    func write(to destination: String) throws(StoreError) {
        try NewFile(path: destination).copy(from: file, range: range)
    }
}
