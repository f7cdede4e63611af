/// The small inline SVG charts: a per-day trend and a bar per version. Geometry only; colours
/// come from classes in web.css (the CSP allows no inline style).
public enum Charts {
    /// A sparkline of `counts` (oldest day first): one bar per day, heights relative to the
    /// busiest day; days without reports get a thin grey bar so the time axis stays visible.
    public static func trend(_ counts: [Int], width: Int = 120, height: Int = 24) -> String {
        guard !counts.isEmpty else { return "" }
        let peak = max(counts.max() ?? 0, 1)
        let step = Double(width) / Double(counts.count)
        var bars = ""
        for (i, n) in counts.enumerated() {
            let h = n == 0 ? 1.0 : max(2.0, Double(height) * Double(n) / Double(peak))
            bars += "<rect\(n == 0 ? " class=\"zero\"" : "") x=\"\(fmt(Double(i) * step))\" y=\"\(fmt(Double(height) - h))\" "
                + "width=\"\(fmt(max(step - 1, 1)))\" height=\"\(fmt(h))\"><title>\(n)</title></rect>"
        }
        let total = counts.saturatingSum()
        return "<svg class=\"trend\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" "
            + "viewBox=\"0 0 \(width) \(height)\" role=\"img\" aria-label=\"\(total) reports in the last \(counts.count) days\">"
            + bars + "</svg>"
    }

    /// Horizontal bars, one per (label, count), widths proportional to the count; `highlight`
    /// (the first version) gets its own class.
    public static func bars(_ rows: [(label: String, count: Int)], highlight: String? = nil, width: Int = 560) -> String {
        guard !rows.isEmpty else { return "" }
        let rowHeight = 22
        let labelWidth = 150
        let peak = max(rows.map(\.count).max() ?? 0, 1)
        let barSpace = Double(width - labelWidth - 60)
        var body = ""
        for (i, row) in rows.enumerated() {
            let y = i * rowHeight
            let w = max(1, barSpace * Double(row.count) / Double(peak))
            let label = row.label.isEmpty ? "(no version)" : row.label
            let shown = label.count > 20 ? String(label.prefix(19)) + "…" : label
            body += "<text x=\"0\" y=\"\(y + 15)\">\(HTML.escape(shown))</text>"
            body += "<rect class=\"bar\(row.label == highlight ? " first" : "")\" data-k=\"version-bar:\(HTML.escape(row.label))\" "
                + "data-count=\"\(row.count)\" x=\"\(labelWidth)\" y=\"\(y + 3)\" width=\"\(fmt(w))\" height=\"\(rowHeight - 6)\">"
                + "<title>\(HTML.escape(label)): \(row.count)</title></rect>"
            body += "<text x=\"\(fmt(Double(labelWidth) + w + 6))\" y=\"\(y + 15)\">\(row.count)</text>"
        }
        let height = rows.count * rowHeight
        return "<svg class=\"bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" "
            + "viewBox=\"0 0 \(width) \(height)\" role=\"img\" aria-label=\"reports per version\">" + body + "</svg>"
    }

    /// Coordinates with at most two decimals, without a trailing ".0" for whole numbers.
    static func fmt(_ v: Double) -> String {
        // A stored count may be anything: NaN and infinities become 0, magnitudes are held
        // where Int can still print them whole.
        guard v.isFinite else { return "0" }
        let rounded = (v * 100).rounded() / 100
        if rounded == rounded.rounded() { return String(Int.clamping(rounded)) }
        return String(rounded)
    }
}
