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

extension BuildID {
    /// The id a report gives an image, or nil with a warning when it is not hex of a byte count
    /// `lengths` accepts. An empty or all-zero id means "unknown" and is dropped silently.
    static func reported(
        _ raw: String?, image: String, lengths: BuildID.Lengths, warnings: inout WarningLog
    ) -> BuildID? {
        guard let raw else { return nil }
        do {
            let id = try BuildID(raw, lengths: lengths)
            return id.isUnknown ? nil : id
        } catch {
            if error != .empty { warnings.append("image \(image): \(error.description); its frames cannot be symbolicated") }
            return nil
        }
    }
}

/// A report's bytes as the parsers read them: UTF-8 without a byte-order mark.
///
/// Editors on Windows save UTF-8 with a BOM (`EF BB BF`), and a JSON decoder or a `{` sniff
/// refuses it. The registry strips it once here, for every format, and reports a bad byte's
/// offset in the file as sent. (CRLF line endings need nothing here: `TextLine` drops the `\r`,
/// and JSON counts it as whitespace.)
struct ReportEncoding {
    static let utf8BOM: [UInt8] = [0xef, 0xbb, 0xbf]

    /// What the parsers get.
    let text: Data
    /// Bytes dropped from the front of the input.
    let dropped: Int

    init(_ data: Data) {
        if data.starts(with: Self.utf8BOM) {
            // Rebased, so parsers can keep assuming indices start at 0. Only BOM input pays the copy.
            text = Data(data.dropFirst(Self.utf8BOM.count))
            dropped = Self.utf8BOM.count
        } else {
            text = data
            dropped = 0
        }
    }

    /// Runs `parse` on `text`; a UTF-8 error's offset is moved back to count from the input's start.
    func parsing<T>(_ parse: (Data) throws(ReportParseError) -> T) throws(ReportParseError) -> T {
        do {
            return try parse(text)
        } catch .invalidUTF8(let offset) {
            throw .invalidUTF8(offset: offset + dropped)
        }
    }
}
