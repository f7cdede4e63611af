extension StringProtocol {
    /// The text without leading and trailing white space, as Foundation's `trimmingCharacters`
    /// trims `.whitespacesAndNewlines` (or `.whitespaces` with `newlines: false`), without its
    /// bridging through NSString, which showed in the ingest endpoint's profile (perf under
    /// scripts/bench-serve.sh). Those sets are Unicode's White_Space property, and its space
    /// separators plus tab.
    public func trimmingWhitespace(newlines: Bool = true) -> String {
        func isBlank(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.value {
            case 0x20, 0x09: return true
            case 0x0a...0x0d: return newlines
            case 0..<0x80: return false
            default: return newlines ? scalar.properties.isWhitespace : scalar.properties.generalCategory == .spaceSeparator
            }
        }
        let scalars = Substring(self).unicodeScalars
        guard let first = scalars.firstIndex(where: { !isBlank($0) }), let last = scalars.lastIndex(where: { !isBlank($0) }) else {
            return ""
        }
        return String(Substring(scalars[first...last]))
    }
}
