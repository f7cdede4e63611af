import DebugInfo
import Foundation
import SystemCalls
import ZIPFoundation

/// Unpacks zip archives (dSYM uploads, the way Xcode archives them) in-process with
/// ZIPFoundation, streaming each entry into a fresh private temporary directory.
///
/// Nothing an archive declares is trusted: the bytes actually written are counted and the
/// unpacking stops at the cap; only regular files and directories are made (a symbolic link
/// entry, an absolute path or a `..` component refuses the whole archive before anything is
/// written); archives inside the archive are left packed (the store refuses them).
enum ZipArchive {
    /// Extracts the archive `input` has open into a new temporary directory and returns it;
    /// the caller removes it. On failure nothing is left behind.
    static func extract(_ input: RegularFile, limits: StoreLimits) throws(StoreError) -> String {
        let label = input.path
        let temporary = limits.temporaryDirectory
        let limit = try ArchiveRules.limit(temporary: temporary, cap: limits.unpackMaxBytes, archive: label)
        let archive: Archive
        do {
            archive = try Archive(url: URL(fileURLWithPath: descriptorPath(input.descriptor)), accessMode: .read)
        } catch {
            throw .archive(path: label, reason: "not a readable zip archive (\(error))")
        }

        // Every entry is checked before anything is written, so a hostile archive leaves nothing.
        var entries: [(entry: Entry, parts: [String])] = []
        var declared: UInt64 = 0
        for entry in archive {
            guard entries.count < ArchiveRules.maximumEntries else {
                throw .archive(path: label, reason: "it has more than \(ArchiveRules.maximumEntries) entries")
            }
            guard let parts = try check(entry, archive: label) else { continue }
            declared = declared.addingReportingOverflow(entry.uncompressedSize).overflow ? .max : declared + entry.uncompressedSize
            entries.append((entry, parts))
        }
        guard declared <= limit.bytes else {
            throw .archive(path: label, reason: "it would unpack to \(declared) bytes, more than \(limit.name)")
        }

        let directory = try ArchiveRules.makeScratch(prefix: "stackline-unzip", archive: label, temporary: temporary)
        do {
            var written: UInt64 = 0
            for (entry, parts) in entries {
                try unpack(entry, parts: parts, into: directory, archive: archive, input: input, limit: limit, written: &written)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        return directory
    }

    /// The entry's path components, nil for an entry that names the archive's root; throws
    /// for an entry that must not be unpacked.
    private static func check(_ entry: Entry, archive: String) throws(StoreError) -> [String]? {
        if entry.type == .symlink {
            throw ArchiveRules.refuse(entry.path, archive: archive, "is a symbolic link \(ArchiveRules.linkRefusal)")
        }
        return try ArchiveRules.components(of: entry.path, archive: archive)
    }

    private struct Overflow: Error {}
    private struct StreamOverrun: Error {}

    private static func unpack(
        _ entry: Entry, parts: [String], into directory: String, archive: Archive, input: RegularFile, limit: ArchiveRules.Limit,
        written: inout UInt64
    ) throws(StoreError) {
        let label = input.path
        let isDirectory = entry.type == .directory
        let path = try ArchiveRules.prepare(parts, isDirectory: isDirectory, in: directory, archive: label)
        if isDirectory { return }
        let output = try NewFile(path: path)
        var failure: StoreError?
        // Counts what is actually written, whatever the entry declares.
        let consumer: Consumer = { data in
            guard written + UInt64(data.count) <= limit.bytes else { throw Overflow() }
            do throws(StoreError) {
                try output.write(data)
            } catch {
                failure = error
                throw error
            }
            written += UInt64(data.count)
        }
        let checksum: CRC32
        do {
            if entry.isCompressed {
                guard let start = dataOffset(of: entry, in: input) else {
                    throw StoreError.archive(path: label, reason: "entry \(ArchiveRules.quoted(entry.path)): its local header is missing or unreadable")
                }
                checksum = try inflate(entry, at: start, from: input, consumer: consumer)
            } else {
                // Stored entries are read for exactly their declared size: bounded.
                checksum = try archive.extract(entry, bufferSize: chunkSize, skipCRC32: false, consumer: consumer)
            }
        } catch is Overflow {
            throw .archive(
                path: label,
                reason: "it unpacked past \(limit.bytes) bytes (\(limit.name)) at entry \(ArchiveRules.quoted(entry.path)), which declares \(entry.uncompressedSize) bytes")
        } catch is StreamOverrun {
            throw .archive(path: label, reason: "entry \(ArchiveRules.quoted(entry.path)) is corrupt: its deflate stream does not end within its \(entry.compressedSize) compressed bytes")
        } catch let error as StoreError {
            throw error
        } catch {
            if let failure { throw failure }
            throw .archive(path: label, reason: "entry \(ArchiveRules.quoted(entry.path)) cannot be unpacked: \(error)")
        }
        guard checksum == entry.checksum else {
            throw .archive(path: label, reason: "entry \(ArchiveRules.quoted(entry.path)) is corrupt: CRC-32 \(String(checksum, radix: 16)), the archive says \(String(entry.checksum, radix: 16))")
        }
    }

    private static let chunkSize = 1 << 16

    /// Inflates a compressed entry with ZIPFoundation's decoder, fed by a provider that stops
    /// at the entry's compressed size. ZIPFoundation's own reader (0.9.20, weichsel/ZIPFoundation#389)
    /// reads on to the end of the archive and then spins forever when a deflate stream does not
    /// end; its decoder also tells zlib every chunk is full-sized, so chunks are padded to size
    /// (zeros, which end a corrupt stream in an error rather than more output).
    private static func inflate(_ entry: Entry, at start: UInt64, from input: RegularFile, consumer: Consumer) throws -> CRC32 {
        let size = entry.compressedSize
        var consumed: UInt64 = 0
        return try Data.decompress(size: Int64(clamping: size), bufferSize: chunkSize, skipCRC32: false, provider: { _, count in
            guard consumed < size else { throw StreamOverrun() }
            var bytes = try input.read(at: start + consumed, count: Int(min(UInt64(count), size - consumed)))
            guard !bytes.isEmpty else { throw StreamOverrun() }
            consumed += UInt64(bytes.count)
            bytes += [UInt8](repeating: 0, count: max(0, count - bytes.count))
            return Data(bytes)
        }, consumer: consumer)
    }

    /// Where an entry's data starts. ZIPFoundation keeps the local header's offset internal,
    /// so it is read from the entry's stored central-directory fields, and the header itself
    /// from the archive; nil when either cannot be read.
    private static func dataOffset(of entry: Entry, in input: RegularFile) -> UInt64? {
        guard let record = Mirror(reflecting: entry).descendant("centralDirectoryStructure") else { return nil }
        let fields = Mirror(reflecting: record)
        guard var offset = (fields.descendant("relativeOffsetOfLocalHeader") as? UInt32).map(UInt64.init) else { return nil }
        if offset == 0xFFFF_FFFF {
            guard let wide = fields.descendant("zip64ExtendedInformation", "some", "relativeOffsetOfLocalHeader") as? UInt64
            else { return nil }
            offset = wide
        }
        guard let header = try? input.read(at: offset, count: 30), header.count == 30,
            header[0..<4].elementsEqual([0x50, 0x4b, 0x03, 0x04])
        else { return nil }
        let nameLength = UInt64(header[26]) | UInt64(header[27]) << 8
        let extraLength = UInt64(header[28]) | UInt64(header[29]) << 8
        return offset + 30 + nameLength + extraLength
    }

    /// A name for the file `fd` has open, for a library that opens by name: the same open
    /// file, whatever its original path names by now.
    private static func descriptorPath(_ fd: Int32) -> String {
        #if os(Linux)
            return "/proc/self/fd/\(fd)"
        #else
            return "/dev/fd/\(fd)"
        #endif
    }
}
