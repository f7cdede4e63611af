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
