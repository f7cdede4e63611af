/// What a facet counts reports by (`facets KEY`, `?key=`): an attribute a report has at most one
/// value of. Written as in a search expression, aliases included.
public struct FacetKey: Sendable, Equatable, CustomStringConvertible {
    public let field: Field

    /// The keys an error lists.
    public static let names = ["os_version", "device_model", "version", "app", "kind", "namespace", "meta.KEY"]

    public init(_ text: String) throws(FacetKeyError) {
        if text.hasPrefix("meta.") {
            let key = text.dropFirst("meta.".count)
            guard Field.isMetaKey(key) else { throw FacetKeyError(key: text) }
            field = .meta(String(key))
            return
        }
        switch Field.byName[text] {
        case let field? where [.osVersion, .deviceModel, .version, .app, .kind, .namespace].contains(field): self.field = field
        default: throw FacetKeyError(key: text)
        }
    }

    public var description: String { field.description }
}

public struct FacetKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var key: String

    public init(key: String) { self.key = key }

    public var description: String {
        // The key is quoted only when it is short and printable; it came from input.
        let shown = key.utf8.count <= ReportQuery.Limits.maxMetaKeyLength + 5 && !key.unicodeScalars.contains(where: QueryParser.isControl)
            ? " '\(key)'" : ""
        return "facet key\(shown) is not one of \(FacetKey.names.joined(separator: ", ")) (meta.KEY: 1 to 64 letters, digits, '_', '.' or '-')"
    }
}
