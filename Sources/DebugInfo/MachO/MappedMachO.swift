/// A Mach-O file mapped once and parsed once, with headroom for one ELF header per slice, so
/// every slice's `DebugFile` reads from this one mapping (see `MachOElfImage`).
final class MappedMachO {
    let image: MappedFile
    let file: MachOFile
    /// Where each slice's ELF header starts in the headroom, by slice index.
    private let headerOffsets: [Int]

    /// Room for the ELF headers of any real file's slices. Anonymous pages that are never
    /// written cost no memory, so reserving more than a thin file needs is free.
    static let defaultHeadroom = 64 << 10

    init(file input: RegularFile) throws(MachOError) {
        var image = try Self.map(input, headroom: Self.defaultHeadroom)
        let file = try MachOFile(path: input.path, bytes: image.contents)
        var offsets: [Int] = []
        var end = 0
        for slice in file.slices {
            offsets.append(end)
            end += (MachOElfImage.headerSize(for: slice) + 7) & ~7
        }
        if end > image.headroom {
            // Only a file with thousands of DWARF sections gets here. The second mapping must
            // hold the bytes that were parsed: offsets hold only for them.
            let again = try Self.map(input, headroom: end)
            guard again.fileSize == image.fileSize, let reparsed = try? MachOFile(path: input.path, bytes: again.contents),
                reparsed.slices == file.slices
            else { throw .unreadable(path: input.path, reason: "the file changed while it was being opened") }
            image = again
        }
        self.image = image
        self.file = file
        headerOffsets = offsets
    }

    private static func map(_ input: RegularFile, headroom: Int) throws(MachOError) -> MappedFile {
        do { return try MappedFile(file: input, headroom: headroom) } catch { throw MachOError(error) }
    }

    /// Writes slice `index`'s ELF header into the headroom and returns where its ELF image starts.
    func elfImageOffset(slice index: Int) -> Int {
        let start = headerOffsets[index]
        let bytes = MachOElfImage.header(for: file.slices[index], fileStart: image.headroom - start)
        UnsafeMutableRawBufferPointer(rebasing: image.region[start..<start + bytes.count]).copyBytes(from: bytes)
        return start
    }
}
