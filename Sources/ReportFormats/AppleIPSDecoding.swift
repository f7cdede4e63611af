import Foundation
import ReportModel

// The `.ips` header and body read through `JSONCursor`: the fast path of every `.ips` upload.
// Each init reads exactly the members the `Decodable` conformance reads, with the same types and
// the same rule for null (an optional member that is null is absent); any other shape stops the
// fast path and `ExactJSON` decodes with JSONDecoder. `IPSFastPathTests` holds the two to the same
// value on every `.ips` sample.

extension IPSHeader: JSONCursorDecodable {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        self.init()
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "bug_type") {
                try c.once(&seen, 1 << 0)
                bugType = try JSONLooseString.readIfPresent(&c)
            } else if c.key(key, is: "app_name") {
                try c.once(&seen, 1 << 1)
                appName = try c.stringIfPresent()
            } else if c.key(key, is: "app_version") {
                try c.once(&seen, 1 << 2)
                appVersion = try c.stringIfPresent()
            } else if c.key(key, is: "build_version") {
                try c.once(&seen, 1 << 3)
                buildVersion = try c.stringIfPresent()
            } else if c.key(key, is: "os_version") {
                try c.once(&seen, 1 << 4)
                osVersion = try c.stringIfPresent()
            } else if c.key(key, is: "timestamp") {
                try c.once(&seen, 1 << 5)
                timestamp = try c.stringIfPresent()
            } else if c.key(key, is: "name") {
                try c.once(&seen, 1 << 6)
                name = try c.stringIfPresent()
            } else {
                try c.skipValue()
            }
        }
    }
}

extension IPSBody: JSONCursorDecodable {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        self.init()
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "usedImages") {
                try c.once(&seen, 1 << 0)
                usedImages = try c.arrayIfPresent { c throws(JSONCursor.Unsupported) in try Image(reading: &c) }
            } else if c.key(key, is: "threads") {
                try c.once(&seen, 1 << 1)
                threads = try c.arrayIfPresent { c throws(JSONCursor.Unsupported) in try Thread(reading: &c) }
            } else if c.key(key, is: "faultingThread") {
                try c.once(&seen, 1 << 2)
                faultingThread = c.null() ? nil : try c.int()
            } else if c.key(key, is: "exception") {
                try c.once(&seen, 1 << 3)
                exception = c.null() ? nil : try Exception(reading: &c)
            } else if c.key(key, is: "lastExceptionBacktrace") {
                try c.once(&seen, 1 << 4)
                lastExceptionBacktrace = try c.arrayIfPresent { c throws(JSONCursor.Unsupported) in try Frame(reading: &c) }
            } else if c.key(key, is: "procName") {
                try c.once(&seen, 1 << 5)
                procName = try c.stringIfPresent()
            } else if c.key(key, is: "procPath") {
                try c.once(&seen, 1 << 6)
                procPath = try c.stringIfPresent()
            } else if c.key(key, is: "asi") {
                try c.once(&seen, 1 << 7)
                asi = c.null() ? nil : try Self.readASI(&c)
            } else if c.key(key, is: "termination") {
                try c.once(&seen, 1 << 8)
                termination = c.null() ? nil : try Termination(reading: &c)
            } else if c.key(key, is: "cpuType") {
                try c.once(&seen, 1 << 9)
                cpuType = try c.stringIfPresent()
            } else if c.key(key, is: "osVersion") {
                try c.once(&seen, 1 << 10)
                osVersion = c.null() ? nil : try OSVersion(reading: &c)
            } else if c.key(key, is: "captureTime") {
                try c.once(&seen, 1 << 11)
                captureTime = try c.stringIfPresent()
            } else if c.key(key, is: "bundleInfo") {
                try c.once(&seen, 1 << 12)
                bundleInfo = c.null() ? nil : try BundleInfo(reading: &c)
            } else if c.key(key, is: "modelCode") {
                try c.once(&seen, 1 << 13)
                modelCode = try c.stringIfPresent()
            } else if c.key(key, equivalentTo: "crashReporterKey") {
                try c.once(&seen, 1 << 14)
                crashReporterKey = try c.stringIfPresent()
            } else {
                try c.skipValue()
            }
        }
    }

    private static func readASI(_ c: inout JSONCursor) throws(JSONCursor.Unsupported) -> [String: JSONStringList] {
        var map: [String: JSONStringList] = [:]
        try c.beginObject()
        while let key = try c.nextKey() {
            let name = c.text(of: key)
            guard map[name] == nil else { throw JSONCursor.Unsupported() }
            map[name] = try JSONStringList(reading: &c)
        }
        return map
    }
}

extension IPSBody.Image {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        var base: JSONAddress?
        var size: UInt64?, uuid: String?, arch: String?, name: String?, path: String?
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "base") {
                try c.once(&seen, 1 << 0)
                base = try JSONAddress(reading: &c)
            } else if c.key(key, is: "size") {
                try c.once(&seen, 1 << 1)
                size = c.null() ? nil : try c.uint64()
            } else if c.key(key, is: "uuid") {
                try c.once(&seen, 1 << 2)
                uuid = try c.stringIfPresent()
            } else if c.key(key, is: "arch") {
                try c.once(&seen, 1 << 3)
                arch = try c.stringIfPresent()
            } else if c.key(key, is: "name") {
                try c.once(&seen, 1 << 4)
                name = try c.stringIfPresent()
            } else if c.key(key, is: "path") {
                try c.once(&seen, 1 << 5)
                path = try c.stringIfPresent()
            } else {
                try c.skipValue()
            }
        }
        // A missing base is JSONDecoder's `keyNotFound`: its error, its words.
        guard let base else { throw JSONCursor.Unsupported() }
        self.init(base: base, size: size, uuid: uuid, arch: arch, name: name, path: path)
    }
}

extension IPSBody.Frame {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        var imageIndex: Int?, imageOffset: UInt64?, symbol: String?, symbolLocation: UInt64?
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "imageOffset") {
                try c.once(&seen, 1 << 0)
                imageOffset = try c.uint64()
            } else if c.key(key, is: "imageIndex") {
                try c.once(&seen, 1 << 1)
                imageIndex = c.null() ? nil : try c.int()
            } else if c.key(key, is: "symbol") {
                try c.once(&seen, 1 << 2)
                symbol = try c.stringIfPresent()
            } else if c.key(key, is: "symbolLocation") {
                try c.once(&seen, 1 << 3)
                symbolLocation = c.null() ? nil : try c.uint64()
            } else {
                try c.skipValue()
            }
        }
        guard let imageOffset else { throw JSONCursor.Unsupported() }
        self.init(imageIndex: imageIndex, imageOffset: imageOffset, symbol: symbol, symbolLocation: symbolLocation)
    }
}

extension IPSBody.Thread {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        self.init()
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "name") {
                try c.once(&seen, 1 << 0)
                name = try c.stringIfPresent()
            } else if c.key(key, is: "queue") {
                try c.once(&seen, 1 << 1)
                queue = try c.stringIfPresent()
            } else if c.key(key, is: "triggered") {
                try c.once(&seen, 1 << 2)
                triggered = c.null() ? nil : try c.bool()
            } else if c.key(key, is: "frames") {
                try c.once(&seen, 1 << 3)
                frames = try c.arrayIfPresent { c throws(JSONCursor.Unsupported) in try IPSBody.Frame(reading: &c) }
            } else {
                try c.skipValue()
            }
        }
    }
}

extension IPSBody.Exception {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        self.init()
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "type") {
                try c.once(&seen, 1 << 0)
                type = try c.stringIfPresent()
            } else if c.key(key, is: "signal") {
                try c.once(&seen, 1 << 1)
                signal = try c.stringIfPresent()
            } else if c.key(key, is: "codes") {
                try c.once(&seen, 1 << 2)
                codes = try c.stringIfPresent()
            } else if c.key(key, is: "subtype") {
                try c.once(&seen, 1 << 3)
                subtype = try c.stringIfPresent()
            } else if c.key(key, is: "message") {
                try c.once(&seen, 1 << 4)
                message = try c.stringIfPresent()
            } else {
                try c.skipValue()
            }
        }
    }
}

extension IPSBody.Termination {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        self.init()
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "namespace") {
                try c.once(&seen, 1 << 0)
                namespace = try c.stringIfPresent()
            } else if c.key(key, is: "code") {
                try c.once(&seen, 1 << 1)
                code = try JSONLooseString.readIfPresent(&c)
            } else if c.key(key, is: "indicator") {
                try c.once(&seen, 1 << 2)
                indicator = try c.stringIfPresent()
            } else {
                try c.skipValue()
            }
        }
    }
}

extension IPSBody.OSVersion {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        self.init()
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "train") {
                try c.once(&seen, 1 << 0)
                train = try c.stringIfPresent()
            } else if c.key(key, is: "build") {
                try c.once(&seen, 1 << 1)
                build = try c.stringIfPresent()
            } else {
                try c.skipValue()
            }
        }
    }
}

extension IPSBody.BundleInfo {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        self.init()
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "CFBundleShortVersionString") {
                try c.once(&seen, 1 << 0)
                shortVersion = try c.stringIfPresent()
            } else if c.key(key, is: "CFBundleVersion") {
                try c.once(&seen, 1 << 1)
                version = try c.stringIfPresent()
            } else {
                try c.skipValue()
            }
        }
    }
}

/// How the fast reader (`JSONCursor`) and JSONDecoder read one report, for tests and the fuzz
/// targets (`AppleIPSFormat.compareDecoders`, `SwiftBacktraceJSONFormat.compareDecoders`).
public enum JSONDecoderAgreement: Equatable, Sendable {
    /// Every part was read by the cursor, and JSONDecoder reads the same values.
    case fastPath
    /// The cursor gave way on a part (JSON5, an unexpected shape, an error to word).
    case fallback
    /// The bytes are refused before any decoder runs (UTF-8, limits) or hold no document to decode.
    case notDecoded
    /// The cursor read a value JSONDecoder does not: a defect.
    case disagreement(String)
}

/// The name the `.ips` tests knew it by first.
public typealias IPSDecoderAgreement = JSONDecoderAgreement

extension AppleIPSFormat {
    /// Decodes the header and the body of `data` both ways and compares them.
    public static func compareDecoders(_ data: Data) -> JSONDecoderAgreement {
        guard let (headerRange, rest) = JSONText.headerLine(data) else { return .notDecoded }
        let header = Data(data[headerRange]), body = Data(data[rest...])
        var fellBack = false
        for (part, bytes) in [("header", header), ("body", body)] {
            do { try JSONPreflight.check(bytes) } catch { return .notDecoded }
            let agreement = part == "header"
                ? ExactJSON.compareDecoders(IPSHeader.self, bytes, part: part, format: "apple-ips")
                : ExactJSON.compareDecoders(IPSBody.self, bytes, part: part, format: "apple-ips")
            switch agreement {
            case .fastPath: continue
            case .fallback: fellBack = true
            default: return agreement
            }
        }
        return fellBack ? .fallback : .fastPath
    }
}
