import DebugInfo
import Demangling
import ReportModel

/// One inline level of a resolved address, innermost first.
public struct ResolvedFrame: Encodable, Sendable, Hashable {
    /// Demangled name.
    public var function: String?
    /// Raw linkage name.
    public var symbol: String?
    /// Distance from the function start; on the outermost level only.
    public var offset: UInt64?
    public var file: String?
    public var line: Int?
    public var column: Int?
    /// True for every level but the outermost.
    public var inlined: Bool
    /// Only a symbol table covered the address.
    public var noLineInfo: Bool

    enum CodingKeys: String, CodingKey { case function, symbol, offset, file, line, column, inlined }

    public init(
        function: String?, symbol: String?, offset: UInt64?, file: String?, line: Int?, column: Int?, inlined: Bool,
        noLineInfo: Bool
    ) {
        self.function = function
        self.symbol = symbol
        self.offset = offset
        self.file = file
        self.line = line
        self.column = column
        self.inlined = inlined
        self.noLineInfo = noLineInfo
    }
}

/// Resolves file addresses (or runtime addresses plus a load address) for one debug file,
/// from its symcache or from the file itself: the answers are the same.
public struct AddressResolver {
    public let source: LookupSource
    public let names: DemangledNames

    public init(source: LookupSource, names: DemangledNames = DemangledNames(style: .full)) {
        self.source = source
        self.names = names
    }

    public init(file: DebugFile, names: DemangledNames = DemangledNames(style: .full)) {
        self.init(source: .debugFile(file), names: names)
    }

    /// The file address for a runtime `address` in an image whose lowest mapping is `loadAddress`.
    /// `preferredBase` is the image's own base (`__TEXT.vmaddr`, first `PT_LOAD` page);
    /// defaults to the debug file's.
    public func fileAddress(runtime address: UInt64, loadAddress: UInt64, preferredBase: UInt64? = nil) -> UInt64 {
        Address.fileAddress(runtime: address, loadAddress: loadAddress, preferredBase: preferredBase ?? source.preferredBase)
    }

    /// Resolves `address`. For a return address, the lookup happens at `address - 1`, inside the
    /// call instruction, and the offset is measured from there too, as the Swift runtime's
    /// backtracer does: the frame then names the call, not whatever follows it.
    public func resolve(_ address: UInt64, kind: FrameKind = .pc) -> [ResolvedFrame] {
        let lookup = Address.lookupAddress(address, kind: kind)
        switch source {
        case .debugFile(let file):
            let frames = file.frames(at: lookup)
            return frames.enumerated().map { i, f in
                Self.resolved(f, function: f.symbol.map(names.demangle), lookup: lookup, outermost: i == frames.count - 1)
            }
        case .symcache(let cache):
            // The symcache holds the full names demangled already, and derives the simplified
            // ones once per symcache (`SymbolCache.simplifiedName`). Read from the
            // mapped records straight into the answer, making the one name asked for: through
            // `frames(at:)` both names became strings, and each level was copied twice more.
            let style = names.style
            var levels: [ResolvedFrame] = []
            cache.visitFrames(at: lookup) { f in
                if levels.isEmpty { levels.reserveCapacity(f.count) }
                let source = SourceFrame(
                    symbol: f.symbol?.string, file: f.file?.string, line: f.line, column: f.column,
                    functionStart: f.functionStart, fromSymbolTableOnly: f.fromSymbolTableOnly)
                levels.append(Self.resolved(source, function: f.name(style)?.string, lookup: lookup, outermost: f.isOutermost))
            }
            return levels
        }
    }

    private static func resolved(_ f: SourceFrame, function: String?, lookup: UInt64, outermost: Bool) -> ResolvedFrame {
        ResolvedFrame(
            function: function, symbol: f.symbol,
            offset: outermost ? f.functionStart.map { lookup &- $0 } : nil,
            file: f.file, line: f.file == nil && f.line == 0 ? nil : f.line,
            column: f.file == nil && f.column == 0 ? nil : f.column,
            inlined: !outermost, noLineInfo: f.fromSymbolTableOnly)
    }
}
