import DebugInfo
import Foundation

/// One file, or one slice of a fat Mach-O file, validated and described, ready to be stored.
struct StoreCandidate {
    /// GNU build-id or Mach-O UUID, lowercase hex.
    var id: String
    var name: String
    var arch: String
    var kind: String
    var size: UInt64
    var hasDWARF: Bool
    var hasSymbolTable: Bool
    /// Holds runnable code: fills the store's executable role.
    var isImage: Bool
    var format: String
    var source: String
    /// The bytes to store: the whole file, or one slice of it.
    var range: Range<UInt64>?

    /// Validates `path` (every DWARF unit header is read: a file libdw cannot walk is refused
    /// now, not at crash time) and describes what it would store. A fat file yields one
    /// candidate per slice, or fails as a whole.
    static func identify(path: String) throws(StoreError) -> [StoreCandidate] {
        let name = (path as NSString).lastPathComponent
        switch ObjectFormat.of(path: path) {
        case .machO, .fatMachO:
            let file: MachOFile
            do { file = try MachOFile(path: path) } catch { throw .rejectedMachO(error) }
            var out: [StoreCandidate] = []
            for slice in file.slices {
                let debug: DebugFile
                do { debug = try DebugFile(machO: path, uuid: slice.uuid) } catch { throw .rejectedMachO(error) }
                out.append(StoreCandidate(
                    id: slice.uuid, name: name, arch: slice.arch, kind: slice.kindDescription, size: slice.size,
                    hasDWARF: debug.elf.hasDWARF, hasSymbolTable: debug.symbolCount > 0, isImage: slice.isImage,
                    format: "mach-o", source: path,
                    range: file.isFat ? slice.offset..<slice.offset + slice.size : nil))
            }
            return out
        default:
            let elf: ElfFile
            do {
                elf = try ElfFile(path: path)
                _ = try DebugFile(elf: elf)
            } catch {
                throw .rejected(error)
            }
            guard let id = elf.buildID else { throw .noBuildID(path: path) }
            return [StoreCandidate(
                id: id, name: name, arch: elf.architecture, kind: elf.kindDescription, size: elf.fileSize,
                hasDWARF: elf.hasDWARF, hasSymbolTable: elf.hasSymbolTable,
                isImage: !elf.isDebugOnly && !elf.loadSegments.isEmpty, format: "elf", source: path, range: nil)]
        }
    }

    /// Writes the bytes to store to `destination`: a fat file's slice becomes a thin file
    /// of its own, so a worker maps only the architecture it needs.
    func write(to destination: String) throws(StoreError) {
        guard let range else {
            do {
                try FileManager.default.copyItem(atPath: source, toPath: destination)
            } catch {
                throw .io(path: source, reason: "cannot copy into the store: \(error.localizedDescription)")
            }
            return
        }
        guard let input = FileHandle(forReadingAtPath: source) else {
            throw .io(path: source, reason: "cannot open: \(String(cString: strerror(errno)))")
        }
        defer { try? input.close() }
        do {
            try input.seek(toOffset: range.lowerBound)
            guard let bytes = try input.read(upToCount: Int(range.count)), bytes.count == range.count else {
                throw StoreError.io(path: source, reason: "slice at \(range.lowerBound) is cut short")
            }
            guard FileManager.default.createFile(atPath: destination, contents: bytes) else {
                throw StoreError.io(path: destination, reason: "cannot write the slice")
            }
        } catch let e as StoreError {
            throw e
        } catch {
            throw .io(path: source, reason: "cannot read the slice: \(error.localizedDescription)")
        }
    }
}
