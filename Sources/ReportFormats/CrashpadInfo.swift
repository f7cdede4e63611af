import Foundation
import ReportModel

/// Crashpad's own minidump stream (`MinidumpCrashpadInfo`, type 0x43500001): the client id
/// (the report id at 4 is the dump's file name, and nothing Stackline keeps), the process's simple annotations, and each module's list annotations, simple
/// annotations and annotation objects (crashpad's `minidump/minidump_extensions.h`). A stream
/// that does not read is left out with a warning: the stacks matter more than the annotations.
struct CrashpadInfo {
    static let streamType: UInt32 = 0x4350_0001
    /// Annotations kept per report; Chromium attaches about 50.
    static let maxAnnotations = 1_024
    /// Crashpad's own bounds: a name of 256 bytes, a value of 5 × 4096 (`Annotation::kValueMaxSize`).
    static let maxKeyBytes = 256
    static let maxValueBytes = 20_480

    /// The client id: one per Crashpad database, so per installation.
    var clientID: String?
    var annotations: [ReportAnnotation] = []
    var dropped = 0

    /// The stream at `stream`, with `moduleNames` naming the module list's entries.
    init(_ input: NativeBytes, stream: (size: UInt32, rva: UInt32), moduleNames: [String]) throws(NativeProblem) {
        let base = Int(stream.rva)
        guard stream.size >= 52 else { throw NativeProblem("a \(stream.size)-byte stream, shorter than its 52-byte header") }
        clientID = try Self.uuid(input.bytes(at: UInt64(base) + 20, count: 16, "client id"))
        try readDictionary(input, at: try Self.location(input, base + 36), module: nil)
        let modules = try Self.location(input, base + 44)
        guard modules.size > 0 else { return }
        let start = Int(modules.rva)
        let n = try input.count(UInt64(try input.u32(start)), each: 12, from: start + 4, limit: ReportLimits.maxImages, "module list")
        for i in 0..<n {
            let link = start + 4 + 12 * i
            let index = Int(try input.u32(link))
            let info = try Self.location(input, link + 4)
            let module = moduleNames.indices.contains(index) ? moduleNames[index] : "module \(index)"
            // MinidumpModuleCrashpadInfo: version, then list annotations, simple annotations and
            // (version 1 of late 2017 on) annotation objects.
            guard info.size >= 20 else { continue }
            let m = Int(info.rva)
            try readList(input, at: try Self.location(input, m + 4), module: module)
            try readDictionary(input, at: try Self.location(input, m + 12), module: module)
            if info.size >= 28 { try readObjects(input, at: try Self.location(input, m + 20), module: module) }
        }
    }

    private static func location(_ input: NativeBytes, _ offset: Int) throws(NativeProblem) -> (size: UInt32, rva: UInt32) {
        (try input.u32(offset), try input.u32(offset + 4))
    }

    /// A `UUID` as Crashpad writes it (a GUID: the first three fields little-endian), in its
    /// usual text form; nil when all zero (no id).
    private static func uuid(_ raw: Data) -> String? {
        let b = [UInt8](raw)
        guard b.count == 16, b.contains(where: { $0 != 0 }) else { return nil }
        let h = Array(BuildID(bytes: NativeBytes.guidInByteOrder(b)).hex)
        return [h[0..<8], h[8..<12], h[12..<16], h[16..<20], h[20..<32]].map { String($0) }.joined(separator: "-")
    }

    /// A `MinidumpUTF8String` (length without the NUL, then bytes) or a `MinidumpByteArray`
    /// (length, bytes): both start the same; nil when longer than `limit`.
    private static func text(_ input: NativeBytes, at rva: UInt32, limit: Int) throws(NativeProblem) -> String? {
        let length = try input.u32(Int(rva))
        guard length <= limit else { return nil }
        return String(decoding: try input.bytes(at: UInt64(rva) + 4, count: UInt64(length), "annotation text"), as: UTF8.self)
    }

    private mutating func keep(_ key: String?, _ value: String?, module: String?) {
        guard let key, let value, annotations.count < Self.maxAnnotations else {
            dropped += 1
            return
        }
        annotations.append(ReportAnnotation(key: key, value: value, module: module))
    }

    /// `MinidumpSimpleStringDictionary`: a count, then (key, value) string offsets.
    private mutating func readDictionary(_ input: NativeBytes, at location: (size: UInt32, rva: UInt32), module: String?) throws(NativeProblem) {
        guard location.size > 0 else { return }
        let start = Int(location.rva)
        let n = try input.count(UInt64(try input.u32(start)), each: 8, from: start + 4, limit: Self.maxAnnotations, "simple annotations")
        for i in 0..<n {
            let entry = start + 4 + 8 * i
            keep(
                try Self.text(input, at: try input.u32(entry), limit: Self.maxKeyBytes),
                try Self.text(input, at: try input.u32(entry + 4), limit: Self.maxValueBytes), module: module)
        }
    }

    /// `MinidumpRVAList` of strings: each is keyed by its position.
    private mutating func readList(_ input: NativeBytes, at location: (size: UInt32, rva: UInt32), module: String) throws(NativeProblem) {
        guard location.size > 0 else { return }
        let start = Int(location.rva)
        let n = try input.count(UInt64(try input.u32(start)), each: 4, from: start + 4, limit: Self.maxAnnotations, "list annotations")
        for i in 0..<n {
            keep("[\(i)]", try Self.text(input, at: try input.u32(start + 4 + 4 * i), limit: Self.maxValueBytes), module: module)
        }
    }

    /// `MinidumpAnnotationList`: (name, type, value) entries. Only string annotations (type 1)
    /// are text; others are the client's own binary types, left out.
    private mutating func readObjects(_ input: NativeBytes, at location: (size: UInt32, rva: UInt32), module: String) throws(NativeProblem) {
        guard location.size > 0 else { return }
        let start = Int(location.rva)
        let n = try input.count(UInt64(try input.u32(start)), each: 12, from: start + 4, limit: Self.maxAnnotations, "annotation objects")
        for i in 0..<n {
            let entry = start + 4 + 12 * i
            guard try input.u16(entry + 4) == 1 else {
                dropped += 1
                continue
            }
            keep(
                try Self.text(input, at: try input.u32(entry), limit: Self.maxKeyBytes),
                try Self.text(input, at: try input.u32(entry + 8), limit: Self.maxValueBytes), module: module)
        }
    }

    /// The app as Breakpad's and Crashpad's conventional process annotations name it
    /// (`prod`, `ver`), each kept only as an identity value is (`DeviceInfo.isKept`).
    var app: AppInfo? {
        func value(_ key: String) -> String? {
            annotations.first { $0.module == nil && $0.key == key }.map(\.value).flatMap { DeviceInfo.isKept($0) ? $0 : nil }
        }
        let name = value("prod"), version = value("ver")
        return name == nil && version == nil ? nil : AppInfo(name: name, version: version)
    }
}
