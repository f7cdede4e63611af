import Foundation
import PackagePlugin

/// Compiles `docs/openapi.yaml` into the Server module (`OpenAPIDocument.yaml`), so the document
/// `stackline serve` serves at `/api/v1/openapi.yaml` is the one in the repository, byte for
/// byte, with no resource bundle to install beside the binary. Rebuilt when the file changes.
@main
struct EmbedOpenAPI: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let input = context.package.directoryURL.appending(path: "docs/openapi.yaml")
        let output = context.pluginWorkDirectoryURL.appending(path: "OpenAPIDocument.swift")
        // A raw string with a long delimiter: the YAML needs no escaping (it must not contain `"""####`).
        let quotes = String(repeating: "\"", count: 3)
        let script = """
            set -e
            { printf '/// docs/openapi.yaml, embedded at build time (EmbedOpenAPI plugin).\\nenum OpenAPIDocument {\\n    static let yaml = ####\(quotes)\\n'
              cat "$1"
              printf '\\n'  # a multi-line literal drops the newline before its closing quotes
              printf '\(quotes)####\\n}\\n'; } > "$2"
            """
        return [
            .buildCommand(
                displayName: "Embed docs/openapi.yaml",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "embed-openapi", input.path, output.path],
                inputFiles: [input],
                outputFiles: [output])
        ]
    }
}
