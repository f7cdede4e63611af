import Compression
import Foundation
import ReportFormats
import ReportModel

/// One input of `submit`: a file, or stdin for `-`.
struct ReportInput {
    let label: String
    let path: String?

    /// Files and `-` as given; directories expand to their regular files, recursively, sorted.
    static func expand(_ arguments: [String]) throws -> [ReportInput] {
        var inputs: [ReportInput] = []
        let fm = FileManager.default
        for argument in arguments {
            if argument == "-" {
                inputs.append(ReportInput(label: "-", path: nil))
                continue
            }
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: argument, isDirectory: &isDir) else {
                throw SubmitError.unreadable(argument, "no such file or directory")
            }
            if !isDir.boolValue {
                inputs.append(ReportInput(label: argument, path: argument))
                continue
            }
            let files = (fm.enumerator(atPath: argument)?.compactMap { $0 as? String } ?? [])
                .map { (argument as NSString).appendingPathComponent($0) }
                .filter { path in
                    var dir: ObjCBool = false
                    return fm.fileExists(atPath: path, isDirectory: &dir) && !dir.boolValue
                }
                .sorted()
            inputs += files.map { ReportInput(label: $0, path: $0) }
        }
        return inputs
    }

    /// Reads stdin in chunks and stops past `limit`, so an endless pipe cannot exhaust memory.
    /// (gzip input is at most `limit` compressed bytes too: real reports compress, bombs are refused.)
    private static func readStandardInput(limit: Int, label: String) throws -> Data {
        var data = Data()
        while true {
            let chunk = FileHandle.standardInput.readData(ofLength: 1 << 16)
            if chunk.isEmpty { return data }
            data.append(chunk)
            if data.count > limit { throw SubmitError.tooLarge(label, limit) }
        }
    }

    /// The report's bytes, gunzipped when they start with the gzip magic; never more than `limit`.
    func load(limit: Int) throws -> Data {
        let data: Data
        if let path {
            let attributes = try? FileManager.default.attributesOfItem(atPath: path)
            if let size = attributes?[.size] as? Int, size > limit {
                throw SubmitError.tooLarge(label, limit)
            }
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw SubmitError.unreadable(label, "cannot read")
            }
            data = contents
        } else {
            data = try Self.readStandardInput(limit: limit, label: label)
        }
        guard Zlib.isGzip(data) else {
            guard data.count <= limit else { throw SubmitError.tooLarge(label, limit) }
            return data
        }
        do {
            return try Zlib.inflate(data, limit: limit)
        } catch {
            throw SubmitError.badGzip(label, error)
        }
    }
}

/// Why `submit` refused an input.
enum SubmitError: Error, CustomStringConvertible {
    case unreadable(String, String)
    case tooLarge(String, Int)
    case badGzip(String, CompressionError)
    case unparseable(String, ReportParseError)

    var description: String {
        switch self {
        case .unreadable(let label, let why): "\(label): \(why)"
        case .tooLarge(let label, let limit): "\(label): larger than \(limit) bytes (raise --max-size to accept it)"
        case .badGzip(let label, let error): "\(label): gzip: \(error)"
        case .unparseable(let label, let error): "\(label): \(error)"
        }
    }
}
