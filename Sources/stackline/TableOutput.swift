/// Left-aligns `s` in a column of `width`, always leaving at least one space after it,
/// for the plain tables `symbols list`, `symbols missing`, `groups` and `group` print.
func pad(_ s: String, _ width: Int) -> String {
    s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
}
