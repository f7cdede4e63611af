import ReportModel

/// The answer of `POST /api/v1/symbols/missing`.
public struct MissingSymbolsAnswer: Codable, Sendable {
    /// One item that is not a build id.
    public struct Invalid: Codable, Sendable {
        public var buildId: String
        public var error: String

        public init(buildId: String, error: String) {
            self.buildId = buildId
            self.error = error
        }
    }

    /// Build ids (normalised, each once, in request order) of which the store wants a file:
    /// it has none, or the offer has more debug information, or fills the empty executable role.
    /// A bare id is missing when the store holds nothing for it.
    public var missing: [BuildID]
    public var invalid: [Invalid]

    public init(missing: [BuildID], invalid: [Invalid]) {
        self.missing = missing
        self.invalid = invalid
    }
}
