/// What `stackline --version` prints.
enum StacklineVersion {
    /// The release this source tree is; raised when a release is cut.
    static let number = "0.11.0"

    /// `0.11.0 (abc1234)`: the release and the git revision the binary was built from.
    static var description: String { "\(number) (\(gitRevision))" }
}
