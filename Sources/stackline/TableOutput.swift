import ReportModel

/// Left-aligns `s`, escaped for the terminal (so the width counts what is shown), in a column
/// of `width`, always leaving at least one space after it, for the plain tables
/// `symbols list`, `symbols missing`, `groups` and `group` print.
func pad(_ s: String, _ width: Int) -> String {
    let s = TerminalText.escape(s)
    return s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
}
