import ReportModel

/// A Mach-O file, thin or fat (universal): its slices, each parsed and checked against the
/// file's size. Holds no file handle; `DebugFile` reads slices through `MappedMachO`, which
/// parses the file once from the mapping it reads DWARF from.
public struct MachOFile: Sendable {
    public let path: String
    public let fileSize: UInt64
    public let isFat: Bool
    public let slices: [MachOSlice]

    /// More slices than any real fat file has: a count above it is a corrupt header (or a
    /// Java class file, which shares the 0xcafebabe magic).
    static let maximumSlices: UInt32 = 64

    public init(path: String) throws(MachOError) {
        let file: RegularFile
        do { file = try RegularFile(path: path) } catch { throw .unreadable(path: path, reason: error.reason) }
        try self.init(file: file)
    }

    /// Parses the file `file` has open.
    public init(file: RegularFile) throws(MachOError) {
        let mapped: MappedFile
        do { mapped = try MappedFile(file: file) } catch { throw MachOError(error) }
        try self.init(path: file.path, bytes: mapped.contents)
    }

    init(path: String, bytes: UnsafeRawBufferPointer) throws(MachOError) {
        self.path = path
        fileSize = UInt64(bytes.count)
        let big = ByteReader(bytes: bytes, bigEndian: true)
        let little = ByteReader(bytes: bytes, bigEndian: false)
        guard let magic = big.u32(0) else { throw .notMachO(path: path, detail: "\(bytes.count)-byte file") }
        guard magic == 0xcafe_babe || magic == 0xcafe_babf else {
            isFat = false
            slices = [try MachOSlice(file: little, offset: 0, size: UInt64(bytes.count), path: path, label: "image")]
            return
        }
        isFat = true
        let wide = magic == 0xcafe_babf
        guard let count = big.u32(4) else { throw .truncated(path: path, detail: "fat header is cut short") }
        guard count > 0, count <= Self.maximumSlices else {
            throw .corrupt(path: path, detail: "fat header claims \(count) architectures")
        }
        let entrySize = wide ? 32 : 20
        guard big.contains(8, UInt64(count) * UInt64(entrySize)) else {
            throw .truncated(path: path, detail: "fat header lists \(count) architectures, the file ends at \(bytes.count) bytes")
        }
        var slices: [MachOSlice] = []
        for i in 0..<Int(count) {
            let e = 8 + i * entrySize
            guard let cpuField = big.u32(e), let subField = big.u32(e + 4),
                let offset = wide ? big.u64(e + 8) : big.u32(e + 8).map(UInt64.init),
                let size = wide ? big.u64(e + 16) : big.u32(e + 12).map(UInt64.init)
            else { throw .truncated(path: path, detail: "fat architecture \(i) is cut short") }
            let cpu = Int32(bitPattern: cpuField), sub = Int32(bitPattern: subField)
            let declared = Arch(machOCPUType: cpu, subtype: sub)
            let slice = try MachOSlice(file: little, offset: offset, size: size, path: path, label: "fat slice \(i)", declaredArch: declared)
            guard slice.cpuType == cpu else {
                throw .corrupt(path: path, detail: "fat slice \(i) is listed as \(declared) but holds a \(slice.arch) image")
            }
            slices.append(slice)
        }
        self.slices = slices
    }

    public var architectures: [Arch] { slices.map(\.arch) }

    /// The slice for `arch` (any spelling of it); a thin file's only slice when `arch` is nil.
    public func slice(arch: Arch?) throws(MachOError) -> MachOSlice {
        guard let arch else {
            guard slices.count == 1 else { throw .archRequired(path: path, available: architectures.map(\.name)) }
            return slices[0]
        }
        guard let s = slices.first(where: { $0.arch.isSame(as: arch) }) else {
            throw .noSuchArch(path: path, arch: arch.name, available: architectures.map(\.name))
        }
        return s
    }

    public func slice(uuid: BuildID) -> MachOSlice? {
        slices.first { $0.uuid == uuid }
    }
}
