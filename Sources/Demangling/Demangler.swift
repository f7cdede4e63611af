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

        /// Whether this family's names demangle differently in the two styles: only Swift's do,
        /// so a name of any other family (or none) is its full form in both.
        public var stylesDiffer: Bool { self == .swift }
    }

    /// Which demangler `demangle` hands `name` to, nil when it returns it as it is: decided by
    /// the name's prefix alone, so a name the demangler rejects still depends on it.
    public static func family(of name: String) -> Family? {
        mangling(of: name)?.family
    }

    /// `family(of:)` of the name whose UTF-8 bytes are `name`, without making a `String`: the
    /// symcache asks it of every name a lookup prints in the simplified style.
    public static func family(ofUTF8 name: UnsafeRawBufferPointer) -> Family? {
        mangling(ofUTF8: name)?.family
    }

    public static func demangle(_ name: String, style: Style = .full) -> String {
        guard let mangling = mangling(of: name) else { return name }
        return demangle(name, mangling, style: style)
    }

    private static func demangle(_ name: String, _ mangling: (family: Family, machO: Bool), style: Style) -> String {
        let mangled = mangling.machO ? String(name.dropFirst()) : name
        switch (mangling.family, style) {
        case (.swift, .full): return call(mangled) { stackline_swift_demangle($0, strlen($0)) } ?? name
        case (.swift, .simplified): return call(mangled) { stackline_swift_backtrace_demangle($0, strlen($0)) } ?? name
        case (.cxx, _): return call(mangled) { stackline_cxx_demangle($0) } ?? name
        }
    }

    /// Which demangler takes `name`, and whether it carries Mach-O's extra leading underscore.
    /// Read from its first bytes: this runs for every symbol of a library (`make bench`,
    /// symcache build), where comparing `String` prefixes showed.
    private static func mangling(of name: String) -> (family: Family, machO: Bool)? {
        var name = name
        return name.withUTF8 { mangling(ofUTF8: UnsafeRawBufferPointer($0)) }
    }

    private static func mangling(ofUTF8 b: UnsafeRawBufferPointer) -> (family: Family, machO: Bool)? {
        guard b.count >= 2 else { return nil }
        func at(_ i: Int, _ c: Unicode.Scalar) -> Bool { i < b.count && b[i] == UInt8(ascii: c) }
        func swiftVersion(_ i: Int) -> Bool { at(i, "s") || at(i, "S") || at(i, "e") }
        switch b[0] {
        case UInt8(ascii: "$"):
            return swiftVersion(1) ? (.swift, false) : nil
        case UInt8(ascii: "@"):
            return b.starts(with: "@__swiftmacro_".utf8) ? (.swift, false) : nil
        case UInt8(ascii: "_"):
            if at(1, "$") && swiftVersion(2) { return (.swift, true) }
            if at(1, "T") && at(2, "0") { return (.swift, false) }
            if at(1, "Z") { return (.cxx, false) }
            if at(1, "_") && at(2, "Z") { return (.cxx, true) }
            return nil
        default:
            return nil
        }
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
