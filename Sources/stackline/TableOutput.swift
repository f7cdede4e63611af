import ReportModel

/// Left-aligns `s`, escaped for the terminal (so the width counts what is shown), in a column
/// of `width`, always leaving at least one space after it.
func pad(_ s: String, _ width: Int) -> String {
    let s = TerminalText.escape(s)
    return s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
}

/// A plain table (`groups`, `symbols list`, `symbols missing`) whose columns are as wide as
/// their widest cell, so a long name never pushes the columns after it out of line. Cells
/// are escaped for the terminal before they are measured.
struct Table {
    let header: [String]
    private var rows: [[String]] = []

    init(_ header: String...) { self.header = header }

    mutating func add(_ cells: String...) { rows.append(cells.map(TerminalText.escape)) }

    /// Every line, the last column unpadded; two spaces between columns.
    func render() -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count + 2)
            }.joined()
        }.joined(separator: "\n")
    }
}
