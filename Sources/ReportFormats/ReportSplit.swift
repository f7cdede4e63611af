import Foundation

/// Cutting one input into the reports it holds (`ReportFormat.split`).
enum ReportSplit {
    /// `data` cut before each of `starts` but the first (byte offsets from its start, ascending):
    /// what precedes the first report stays with it, so the parts cover the input exactly.
    static func pieces(_ data: Data, startingAt starts: [Int]) -> [Data] {
        guard starts.count > 1 else { return [data] }
        let base = data.startIndex
        let bounds = [0] + starts.dropFirst() + [data.count]
        return zip(bounds, bounds.dropFirst()).map { Data(data[base + $0..<base + $1]) }
    }
}
