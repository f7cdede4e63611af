import Foundation

/// Little-endian fields of a binary crash artifact (a minidump, an ELF core file), every
/// offset, size and count checked against the file where it is read: nothing trusts a size it
/// read. Shared by `MinidumpFormat` and `ElfCoreFormat`.
struct NativeBytes {
    let data: Data

    init(_ data: Data) { self.data = data }

    func u16(_ offset: Int) throws(NativeProblem) -> UInt16 { UInt16(truncatingIfNeeded: try integer(offset, 2)) }
    func u32(_ offset: Int) throws(NativeProblem) -> UInt32 { UInt32(truncatingIfNeeded: try integer(offset, 4)) }
    func u64(_ offset: Int) throws(NativeProblem) -> UInt64 { try integer(offset, 8) }

    private func integer(_ offset: Int, _ width: Int) throws(NativeProblem) -> UInt64 {
        guard offset >= 0, offset <= data.count - width else {
            throw NativeProblem("a \(width)-byte field at offset \(offset) runs past the end of the \(data.count)-byte file")
        }
        var value: UInt64 = 0
        let start = data.startIndex + offset
        for i in 0..<width { value |= UInt64(data[start + i]) << (8 * UInt64(i)) }
        return value
    }

    /// The `count` bytes at `offset`, checked to lie inside the file.
    func bytes(at offset: UInt64, count: UInt64, _ what: String) throws(NativeProblem) -> Data {
        guard offset <= UInt64(data.count), count <= UInt64(data.count) - offset else {
            throw NativeProblem("\(what): \(count) bytes at offset \(offset) run past the end of the \(data.count)-byte file")
        }
        let start = data.startIndex + Int(offset)
        return data[start..<start + Int(count)]
    }

    /// A GUID's 16 bytes as a UUID's: the first three fields (4, 2 and 2 bytes) are stored
    /// little-endian, the last eight in order. Minidumps store CodeView `RSDS` ids and
    /// Crashpad's client ids this way.
    static func guidInByteOrder(_ guid: [UInt8]) -> [UInt8] {
        [guid[3], guid[2], guid[1], guid[0], guid[5], guid[4], guid[7], guid[6]] + guid[8..<16]
    }

    /// An element count read from the file, checked against its limit and the bytes its
    /// elements would take from `offset` on.
    func count(_ n: UInt64, each: Int, from offset: Int, limit: Int, _ what: String) throws(NativeProblem) -> Int {
        guard n <= UInt64(limit) else { throw NativeProblem("\(what): \(n) entries, more than the \(limit) allowed") }
        let room = UInt64(max(0, data.count - offset))
        guard n * UInt64(each) <= room else {
            throw NativeProblem("\(what): \(n) entries of \(each) bytes run past the end of the file")
        }
        return Int(n)
    }
}

/// Why a binary crash artifact cannot be read; says which part and what is wrong with it.
struct NativeProblem: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Linux's signal numbers (not Darwin's: SIGBUS is 7 here).
enum LinuxSignal {
    static let names: [UInt32: String] = [
        1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL",
        10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 17: "SIGCHLD",
        18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 24: "SIGXCPU", 25: "SIGXFSZ", 31: "SIGSYS",
    ]
}
