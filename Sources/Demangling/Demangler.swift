import CDemangle
#if canImport(Glibc)
import Glibc
#endif

/// Demangles Swift names with the Swift runtime's own demangler and C++ names with the
/// C++ ABI's; anything else (C, Objective-C `-[Class sel]`) is returned as it is.
public enum Demangler {
    /// How much of a Swift name to show. C++ names are the same in both.
    public enum Style: String, Sendable, CaseIterable {
        /// Module-qualified with full signature (`main.crash(Swift.Int) -> ()`), as `swift-demangle --no-sugar`.
        case full
        /// What the Swift runtime's backtracer prints (`crash(_:)`).
        case simplified
    }

    /// The demangler a name goes to: its demangled forms change when that library changes.
    public enum Family: Sendable, CaseIterable {
        /// The Swift runtime's (`swift_demangle`, `_swift_backtrace_demangle`: libswiftCore).
        case swift
        /// The C++ ABI's (`__cxa_demangle`: libstdc++ or libc++abi).
        case cxx
    }

    /// Which demangler `demangle` hands `name` to, nil when it returns it as it is: decided by
    /// the name's prefix alone, so a name the demangler rejects still depends on it.
    public static func family(of name: String) -> Family? {
        // Every mangling starts with one of these bytes; a C name is ruled out without the
        // prefix comparisons, for each of a library's symbols (`make bench`, symcache build).
        guard let first = name.utf8.first, first == UInt8(ascii: "$") || first == UInt8(ascii: "_") || first == UInt8(ascii: "@") else {
            return nil
        }
        if swiftMangled(name) != nil { return .swift }
        if cxxMangled(name) != nil { return .cxx }
        return nil
    }

    public static func demangle(_ name: String, style: Style = .full) -> String {
        if let swift = swiftMangled(name) {
            switch style {
            case .full: return call(swift) { stackline_swift_demangle($0, strlen($0)) } ?? name
            case .simplified: return call(swift) { stackline_swift_backtrace_demangle($0, strlen($0)) } ?? name
            }
        }
        if let cxx = cxxMangled(name) {
            return call(cxx) { stackline_cxx_demangle($0) } ?? name
        }
        return name
    }

    /// The Swift mangling, minus Mach-O's extra leading underscore.
    private static func swiftMangled(_ name: String) -> String? {
        for prefix in ["$s", "$S", "$e", "_T0", "@__swiftmacro_"] where name.hasPrefix(prefix) { return name }
        for prefix in ["_$s", "_$S", "_$e"] where name.hasPrefix(prefix) { return String(name.dropFirst()) }
        return nil
    }

    /// The Itanium mangling, minus Mach-O's extra leading underscore.
    private static func cxxMangled(_ name: String) -> String? {
        if name.hasPrefix("__Z") { return String(name.dropFirst()) }
        if name.hasPrefix("_Z") { return name }
        return nil
    }

    private static func call(_ name: String, _ fn: (UnsafePointer<CChar>) -> UnsafeMutablePointer<CChar>?) -> String? {
        name.withCString { cName in
            guard let out = fn(cName) else { return nil }
            defer { free(out) }
            return String(cString: out)
        }
    }
}

/// Demangled names already computed: a crash batch repeats the same few hundred functions,
/// and demangling costs more than the lookup itself. Bounded, cleared when full.
public final class DemangledNames {
    public let style: Demangler.Style
    private var names: [String: String] = [:]
    private let limit: Int

    public init(style: Demangler.Style, limit: Int = 200_000) {
        self.style = style
        self.limit = limit
    }

    public func demangle(_ name: String) -> String {
        if let hit = names[name] { return hit }
        if names.count >= limit { names.removeAll(keepingCapacity: true) }
        let out = Demangler.demangle(name, style: style)
        names[name] = out
        return out
    }
}
