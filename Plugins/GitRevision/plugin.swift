import Foundation
import PackagePlugin

/// Writes `GitRevision.swift` (`let gitRevision = "abc1234"`) before every build of the target
/// that uses it, from `git rev-parse --short HEAD` in the package, or "unknown" outside a git
/// checkout. Runs git from the system: nothing is fetched, and the file is only rewritten when
/// the revision changed, so an unchanged checkout recompiles nothing.
@main
struct GitRevision: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        let script = """
            set -e
            mkdir -p "$2"
            rev=$(git -C "$1" rev-parse --short HEAD 2>/dev/null) || rev=unknown
            [ -n "$rev" ] || rev=unknown
            printf '/// The git revision this binary was built from (GitRevision plugin).\\nlet gitRevision = "%s"\\n' "$rev" > "$2/GitRevision.swift.new"
            if cmp -s "$2/GitRevision.swift.new" "$2/GitRevision.swift"; then rm "$2/GitRevision.swift.new"; else mv "$2/GitRevision.swift.new" "$2/GitRevision.swift"; fi
            """
        return [
            .prebuildCommand(
                displayName: "Git revision for --version",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "git-revision", context.package.directoryURL.path, output.path],
                outputFilesDirectory: output)
        ]
    }
}
