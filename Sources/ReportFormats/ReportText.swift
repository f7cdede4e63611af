import Foundation
import ReportModel

/// Helpers shared by the text formats and by the identifiers every format carries.
enum ReportText {
    /// True when `needle` occurs in the first `window` bytes of a report that is not JSON.
    static func textHead(_ data: Data, contains needle: String, window: Int = 65536) -> Bool {
        !JSONText.looksLikeJSON(data) && JSONText.head(data, contains: needle, window: window)
    }

    /// Last path component, or the whole string when it has no slash.
    static func basename(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}

/// Validates the identifier a report gives an image (Mach-O UUID or GNU build-id).
enum ImageIdentifier {
    /// Byte counts of a Mach-O UUID (16) and of GNU build-ids (8: xxhash, 16: md5/uuid, 20: sha1, 32: sha256).
    static let elfByteCounts: Set<Int> = [8, 16, 20, 32]
    /// Apple formats carry 16-byte UUIDs; 20-byte GNU build-ids are accepted too, so reports from
    /// ELF processes written in these formats (and our ELF-backed tests) can be symbolicated.
    static let appleByteCounts: Set<Int> = [16, 20]

    /// The normalised id (lowercase hex, no dashes), or nil with a warning when `raw` is not hex
    /// of an accepted length. An all-zero id means "unknown" and is dropped silently.
    static func validated(
        _ raw: String?, image: String, byteCounts: Set<Int>, warnings: inout WarningLog
    ) -> String? {
        guard let raw else { return nil }
        let trimmed = raw.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return nil }
        let hex = trimmed.lowercased().filter { $0 != "-" && $0 != "{" && $0 != "}" }
        guard hex.allSatisfy(\.isHexDigit) else {
            warnings.append("image \(image): id '\(raw)' is not hexadecimal; its frames cannot be symbolicated")
            return nil
        }
        guard hex.count % 2 == 0, byteCounts.contains(hex.count / 2) else {
            let sizes = byteCounts.sorted().map(String.init).joined(separator: ", ")
            warnings.append(
                "image \(image): id '\(raw)' has \(hex.count) hex digits, expected \(sizes) bytes; its frames cannot be symbolicated")
            return nil
        }
        if hex.allSatisfy({ $0 == "0" }) { return nil }
        return hex
    }
}

/// Names for Mach-O CPU types as KSCrash reports them (`cpu_type`, `cpu_subtype` from <mach/machine.h>).
enum MachCPU {
    static func name(type: Int64?, subtype: Int64?) -> String? {
        guard let type else { return nil }
        let abi64: Int64 = 0x0100_0000
        let abi64_32: Int64 = 0x0200_0000
        let sub = (subtype ?? 0) & 0x00ff_ffff
        switch type {
        case 7: return "i386"
        case 7 | abi64: return sub == 8 ? "x86_64h" : "x86_64"
        case 12:
            switch sub {
            case 6: return "armv6"
            case 9: return "armv7"
            case 11: return "armv7s"
            case 12: return "armv7k"
            default: return "arm"
            }
        case 12 | abi64: return sub == 2 ? "arm64e" : "arm64"
        case 12 | abi64_32: return "arm64_32"
        default: return "cpu-\(type)"
        }
    }
}
