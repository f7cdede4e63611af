import Foundation

/// Where the job database lives: `--db`, else `STACKLINE_DB`, else `./data/stackline.sqlite`.
public enum DatabaseLocation {
    public static let defaultPath = "data/stackline.sqlite"

    public static func resolve(option: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let option, !option.isEmpty { return option }
        if let env = environment["STACKLINE_DB"], !env.isEmpty { return env }
        return defaultPath
    }
}
