import Foundation

/// Where the service database lives: `--db`, else `variable` (`STACKLINE_DB`, which the entry
/// point read), else `./data/stackline.sqlite`.
public enum DatabaseLocation {
    public static let defaultPath = "data/stackline.sqlite"

    public static func resolve(option: String?, variable: String?) -> String {
        if let option, !option.isEmpty { return option }
        if let variable, !variable.isEmpty { return variable }
        return defaultPath
    }
}
