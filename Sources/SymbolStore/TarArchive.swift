import DebugInfo
import Foundation
import SystemCalls

/// Unpacks `.tar` archives (POSIX ustar and pax, and GNU tar's default format) into a fresh
/// private temporary directory, under the same rules as zips (`ArchiveRules`).
///
/// Hand-written because no tar library resolves as a Swift package here, and the one C library
/// Debian has (libarchive) reads dozens of formats, compressed and sparse ones included, where
/// the store needs exactly one thing: regular files and directories out of an uncompressed tar.
/// Linking that attack surface into every process that opens the store, for a format of
/// 512-byte headers whose only variable parts are three long-name mechanisms (the ustar prefix,
/// pax `path`, GNU `L` entries), is the worse trade. So the reader stays small and refuses the
/// rest: only file, directory and long-name entries are read; links (hard and symbolic),
/// devices, FIFOs, sparse and multi-volume entries refuse the whole archive, as do absolute and
/// `..` names, a bad header checksum, sizes past the end of the file and, before anything is
/// written, more entries or bytes than the caps allow. Data is copied from the open
/// descriptor by range, so memory stays bounded whatever sizes the headers declare.
enum TarArchive {
    private static let block: UInt64 = 512
    /// pax extended headers and GNU long names are metadata: a few KiB in real archives.
    private static let maximumMetadata: UInt64 = 1 << 20

    /// True when the file starts with a tar header (the ustar magic, which pax and GNU tar
    /// write too; its checksum is checked when it is read); pre-POSIX v7 archives have no
    /// magic and are not recognised.
    static func recognises(_ file: RegularFile) -> Bool {
        guard let head = try? file.read(at: 0, count: Int(block)), head.count == Int(block) else { return false }
        return magic(head) != nil
    }

    /// One regular file or directory to unpack.
    private struct Member {
        var parts: [String]
        var isDirectory: Bool
        var dataOffset: UInt64
        var size: UInt64
    }

    /// Extracts the archive `input` has open into a new temporary directory and returns it;
    /// the caller removes it. On failure nothing is left behind.
    static func extract(_ input: RegularFile, limits: StoreLimits) throws(StoreError) -> String {
        let label = input.path
        let temporary = limits.temporaryDirectory
        let limit = try ArchiveRules.limit(temporary: temporary, cap: limits.unpackMaxBytes, archive: label)
        let members = try scan(input)
        var declared: UInt64 = 0
        for member in members where !member.isDirectory {
            declared = declared.addingReportingOverflow(member.size).overflow ? .max : declared + member.size
        }
        guard declared <= limit.bytes else {
            throw .archive(path: label, reason: "it would unpack to \(declared) bytes, more than \(limit.name)")
        }
        let directory = try ArchiveRules.makeScratch(prefix: "stackline-untar", archive: label, temporary: temporary)
        do {
            for member in members {
                let path = try ArchiveRules.prepare(member.parts, isDirectory: member.isDirectory, in: directory, archive: label)
                if member.isDirectory { continue }
                // A tar entry's data is exactly its declared size, so the check above bounds what is written.
                try NewFile(path: path).copy(from: input, range: member.dataOffset..<member.dataOffset + member.size)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        return directory
    }

    /// Reads every header and checks every entry; nothing is written.
    private static func scan(_ input: RegularFile) throws(StoreError) -> [Member] {
        let label = input.path
        func corrupt(_ offset: UInt64, _ why: String) -> StoreError {
            .archive(path: label, reason: "not a readable tar archive: header at byte \(offset) \(why)")
        }
        var members: [Member] = []
        var offset: UInt64 = 0
        // Set by a pax `x` header or a GNU `L` entry, for the next entry only.
        var longName: String?
        var paxSize: UInt64?
        while true {
            let header: [UInt8]
            do { header = try input.read(at: offset, count: Int(block)) } catch {
                throw .archive(path: label, reason: error.reason)
            }
            // The end: two zero blocks, or the end of the file at a header boundary.
            if header.isEmpty || header.allSatisfy({ $0 == 0 }) { break }
            guard header.count == Int(block) else { throw corrupt(offset, "is cut short") }
            guard let gnu = magic(header) else { throw corrupt(offset, "has no ustar magic (only ustar, pax and GNU tar archives are read)") }
            guard checksumMatches(header) else { throw corrupt(offset, "has a bad checksum") }
            guard let headerSize = number(header[124..<136]) else { throw corrupt(offset, "has an unreadable size") }
            let size = paxSize ?? headerSize
            let dataOffset = offset + block
            let padded = size.addingReportingOverflow(block - 1)
            guard !padded.overflow, size <= input.size, dataOffset + size <= input.size else {
                throw corrupt(offset, "declares \(size) bytes, past the end of the file")
            }
            let next = dataOffset + padded.partialValue / block * block
            let type = header[156]

            switch type {
            case UInt8(ascii: "x"), UInt8(ascii: "g"), UInt8(ascii: "L"), UInt8(ascii: "K"):
                guard size <= maximumMetadata else { throw corrupt(offset, "has \(size) bytes of metadata, more than \(maximumMetadata)") }
                let data: [UInt8]
                do { data = try input.read(at: dataOffset, count: Int(size)) } catch { throw .archive(path: label, reason: error.reason) }
                if type == UInt8(ascii: "x") {
                    let records = try paxRecords(data, corrupt: { corrupt(offset, $0) })
                    if let path = records["path"] { longName = path }
                    if let text = records["size"] {
                        guard let value = UInt64(text) else { throw corrupt(offset, "has a pax size that is not a number") }
                        paxSize = value
                    }
                } else if type == UInt8(ascii: "L") {
                    longName = String(decoding: data.prefix { $0 != 0 }, as: UTF8.self)
                }
                // `g` (global pax records) and `K` (a long link target) name nothing to unpack.
                offset = next
                continue
            default:
                break
            }

            let name = longName ?? headerName(header, gnu: gnu)
            longName = nil
            paxSize = nil
            guard members.count < ArchiveRules.maximumEntries else {
                throw .archive(path: label, reason: "it has more than \(ArchiveRules.maximumEntries) entries")
            }
            switch type {
            case UInt8(ascii: "0"), 0, UInt8(ascii: "7"), UInt8(ascii: "5"):
                let isDirectory = type == UInt8(ascii: "5")
                if let parts = try ArchiveRules.components(of: name, archive: label) {
                    members.append(Member(parts: parts, isDirectory: isDirectory, dataOffset: dataOffset, size: isDirectory ? 0 : size))
                }
            case UInt8(ascii: "1"): throw ArchiveRules.refuse(name, archive: label, "is a hard link \(ArchiveRules.linkRefusal)")
            case UInt8(ascii: "2"): throw ArchiveRules.refuse(name, archive: label, "is a symbolic link \(ArchiveRules.linkRefusal)")
            case UInt8(ascii: "3"): throw ArchiveRules.refuse(name, archive: label, "is a character device (only regular files and directories are unpacked)")
            case UInt8(ascii: "4"): throw ArchiveRules.refuse(name, archive: label, "is a block device (only regular files and directories are unpacked)")
            case UInt8(ascii: "6"): throw ArchiveRules.refuse(name, archive: label, "is a FIFO (only regular files and directories are unpacked)")
            default:
                let shown = (0x21..<0x7f).contains(type) ? "'\(Character(UnicodeScalar(type)))'" : "0x\(String(type, radix: 16))"
                throw ArchiveRules.refuse(name, archive: label, "has entry type \(shown), which is not unpacked (only regular files and directories are)")
            }
            offset = next
        }
        return members
    }

    /// `ustar\0` + `00` (POSIX) → false, `ustar ` + ` \0` (GNU) → true, anything else → nil.
    private static func magic(_ header: [UInt8]) -> Bool? {
        let field = Array(header[257..<265])
        if field == Array("ustar\u{0}00".utf8) { return false }
        if field == Array("ustar  \u{0}".utf8) { return true }
        return nil
    }

    /// The header's checksum field against the sum of its bytes, the field counted as blanks.
    private static func checksumMatches(_ header: [UInt8]) -> Bool {
        guard let stored = number(header[148..<156]) else { return false }
        var sum: UInt64 = 0
        for (i, b) in header.enumerated() { sum += (148..<156).contains(i) ? 0x20 : UInt64(b) }
        return sum == stored
    }

    /// A numeric field: octal digits (blank- or NUL-padded), or GNU's base-256 for large
    /// values; nil when it is neither or does not fit 64 bits.
    private static func number(_ field: ArraySlice<UInt8>) -> UInt64? {
        guard let first = field.first else { return nil }
        if first & 0x80 != 0 {
            guard first == 0x80 else { return nil }  // 0xff: negative
            var value: UInt64 = 0
            for b in field.dropFirst() {
                guard value >> 56 == 0 else { return nil }
                value = value << 8 | UInt64(b)
            }
            return value
        }
        let digits = field.drop { $0 == 0x20 }.prefix { $0 != 0 && $0 != 0x20 }
        guard !digits.isEmpty else { return field.allSatisfy { $0 == 0 || $0 == 0x20 } ? 0 : nil }
        var value: UInt64 = 0
        for b in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(b), value >> 61 == 0 else { return nil }
            value = value << 3 | UInt64(b - UInt8(ascii: "0"))
        }
        return value
    }

    /// The name a plain header gives: the POSIX prefix field joined to the name field (GNU
    /// tar uses the prefix's bytes for other things).
    private static func headerName(_ header: [UInt8], gnu: Bool) -> String {
        func text(_ range: Range<Int>) -> String { String(decoding: header[range].prefix { $0 != 0 }, as: UTF8.self) }
        let name = text(0..<100)
        let prefix = gnu ? "" : text(345..<500)
        return prefix.isEmpty ? name : prefix + "/" + name
    }

    /// pax records: `LENGTH KEY=VALUE\n`, LENGTH counting the whole record.
    private static func paxRecords(_ data: [UInt8], corrupt: (String) -> StoreError) throws(StoreError) -> [String: String] {
        var records: [String: String] = [:]
        var i = 0
        while i < data.count {
            if data[i] == 0 { break }
            guard let space = data[i...].firstIndex(of: 0x20),
                let length = Int(String(decoding: data[i..<space], as: UTF8.self)), length > space - i + 1,
                i + length <= data.count, data[i + length - 1] == 0x0a
            else { throw corrupt("has a malformed pax record") }
            let record = data[(space + 1)..<(i + length - 1)]
            guard let equals = record.firstIndex(of: UInt8(ascii: "=")) else { throw corrupt("has a malformed pax record") }
            records[String(decoding: record[..<equals], as: UTF8.self)] = String(decoding: record[(equals + 1)...], as: UTF8.self)
            i += length
        }
        return records
    }
}
