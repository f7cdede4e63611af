/// A CPU architecture as a report, a debug file or a user names it, resolved through one table.
///
/// The name is kept as it was given (`arm64 v8` from the SDK, `X86-64` from an IPS body, a
/// debug file's `arm64e`), because reports are evidence and JSON written before this type
/// existed must read back the same: an `Arch` encodes as that plain string. What the name
/// means is `cpu`, looked up in the single table below (Mach-O `cpu_type`/`cpu_subtype`, ELF
/// `e_machine`, and the names reports and Android ABIs use); nil for a name it does not know.
/// Two values are equal when their names are; compare `cpu` to ask whether they are the same
/// architecture.
public struct Arch: Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The architectures the table knows, by the canonical (Apple) name Stackline writes.
    public enum CPU: String, CaseIterable, Sendable {
        case i386, x86_64, x86_64h
        case arm, armv6, armv6m, armv7, armv7f, armv7s, armv7k, armv7m, armv7em
        case arm64, arm64e, arm64_32
        case ppc, ppc64
        case riscv64, s390x
    }

    /// The spelling as given: what JSON and the text views show.
    public let name: String
    /// What the table resolves `name` to; nil for an unknown name, which is still carried verbatim.
    public let cpu: CPU?

    /// `name` as written, resolved case-insensitively by its first word, so `arm64 v8` and
    /// `X86-64 (Native)` are arm64 and x86_64.
    public init(_ name: String) {
        self.name = name
        cpu = Self.resolve(name)
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// The canonical spelling of `cpu`.
    public init(_ cpu: CPU) {
        name = cpu.rawValue
        self.cpu = cpu
    }

    /// The name for a Mach-O `cpu_type`/`cpu_subtype` pair; `cpu-TYPE-SUBTYPE` when the table
    /// does not know it. The subtype's top byte holds capability bits and is ignored.
    public init(machOCPUType type: some BinaryInteger, subtype: some BinaryInteger) {
        let type = Int64(truncatingIfNeeded: type)
        let sub = Int64(truncatingIfNeeded: subtype) & 0x00ff_ffff
        let rows = Self.table.filter { $0.machO.map { Int64($0.type) } == type }
        if let row = rows.first(where: { $0.machO?.subtype.map(Int64.init) == sub }) ?? rows.first(where: { $0.machO?.subtype == nil }) {
            self.init(row.cpu)
        } else {
            self.init("cpu-\(type)-\(sub)")
        }
    }

    /// The name for an ELF `e_machine`; `elf-machine-N` when the table does not know it.
    public init(elfMachine machine: UInt16) {
        if let row = Self.table.first(where: { $0.elfMachine == machine }) {
            self.init(row.cpu)
        } else {
            self.init("elf-machine-\(machine)")
        }
    }

    /// `name` only when it is a canonical name exactly as written (the arch column of an Apple
    /// `Binary Images:` line, where a looser match would eat the last word of an image name).
    public init?(canonicalName name: some StringProtocol) {
        guard let cpu = CPU(rawValue: String(name)) else { return nil }
        self.init(cpu)
    }

    public var isKnown: Bool { cpu != nil }

    /// The canonical spelling when the table knows the name (`X86-64` becomes `x86_64`), else itself.
    public var canonical: Arch { cpu.map(Arch.init) ?? self }

    /// Same architecture: same `cpu` when both are known, else the same name.
    public func isSame(as other: Arch) -> Bool {
        if let cpu, let theirs = other.cpu { return cpu == theirs }
        return name == other.name
    }

    /// The ELF `e_machine` of this architecture; nil when the table has none.
    public var elfMachine: UInt16? { cpu.flatMap { Self.row[$0]?.elfMachine } }

    public var description: String { name }

    public static func == (a: Arch, b: Arch) -> Bool { a.name == b.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }

    /// Any string decodes: a name the table does not know is kept, never refused.
    public init(from decoder: Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }

    // MARK: The table

    /// One architecture: its Mach-O cpu type and subtype (nil subtype: any subtype no other row
    /// claims), its ELF machine, and the other names reports give it (lowercase).
    struct Row: Sendable {
        var cpu: CPU
        var machO: (type: Int32, subtype: Int32?)?
        var elfMachine: UInt16?
        var aliases: [String] = []
    }

    // <mach/machine.h>: CPU_ARCH_ABI64 and CPU_ARCH_ABI64_32 mark the 64-bit types.
    private static let abi64: Int32 = 0x0100_0000
    private static let abi64_32: Int32 = 0x0200_0000
    private static let cpuTypeX86: Int32 = 7
    private static let cpuTypeARM: Int32 = 12
    private static let cpuTypePowerPC: Int32 = 18

    /// The one table. The first row with an ELF machine is that machine's name, and a row with
    /// no Mach-O subtype answers every subtype of its type that no other row names.
    static let table: [Row] = [
        // EM_386; "x86" is Android's ABI name and KSCrash's cpu_arch, "X86" a .crash Code Type.
        Row(cpu: .i386, machO: (cpuTypeX86, nil), elfMachine: 3, aliases: ["x86"]),
        // EM_X86_64; "X86-64" is the .crash Code Type and the IPS cpuType.
        Row(cpu: .x86_64, machO: (cpuTypeX86 | abi64, nil), elfMachine: 62, aliases: ["x86-64", "amd64"]),
        Row(cpu: .x86_64h, machO: (cpuTypeX86 | abi64, 8), elfMachine: 62),  // CPU_SUBTYPE_X86_64_H
        // EM_ARM; CPU_SUBTYPE_ARM_V6, _V7, _V7F, _V7S, _V7K, _V6M, _V7M, _V7EM.
        Row(cpu: .arm, machO: (cpuTypeARM, nil), elfMachine: 40),
        Row(cpu: .armv6, machO: (cpuTypeARM, 6), elfMachine: 40),
        Row(cpu: .armv7, machO: (cpuTypeARM, 9), elfMachine: 40),
        Row(cpu: .armv7f, machO: (cpuTypeARM, 10), elfMachine: 40),
        Row(cpu: .armv7s, machO: (cpuTypeARM, 11), elfMachine: 40),
        Row(cpu: .armv7k, machO: (cpuTypeARM, 12), elfMachine: 40),
        Row(cpu: .armv6m, machO: (cpuTypeARM, 14), elfMachine: 40),
        Row(cpu: .armv7m, machO: (cpuTypeARM, 15), elfMachine: 40),
        Row(cpu: .armv7em, machO: (cpuTypeARM, 16), elfMachine: 40),
        // EM_AARCH64; "ARM-64" is the .crash Code Type and the IPS cpuType; CPU_SUBTYPE_ARM64E is 2.
        Row(cpu: .arm64, machO: (cpuTypeARM | abi64, nil), elfMachine: 183, aliases: ["arm-64", "aarch64"]),
        Row(cpu: .arm64e, machO: (cpuTypeARM | abi64, 2), elfMachine: 183, aliases: ["arm-64e"]),
        Row(cpu: .arm64_32, machO: (cpuTypeARM | abi64_32, nil), elfMachine: 183, aliases: ["arm-64_32"]),
        // EM_PPC, EM_PPC64; "powerpc" and "powerpc64" are LLVM's names.
        Row(cpu: .ppc, machO: (cpuTypePowerPC, nil), elfMachine: 20, aliases: ["powerpc"]),
        Row(cpu: .ppc64, machO: (cpuTypePowerPC | abi64, nil), elfMachine: 21, aliases: ["powerpc64"]),
        // EM_RISCV, EM_S390: no Mach-O.
        Row(cpu: .riscv64, machO: nil, elfMachine: 243),
        Row(cpu: .s390x, machO: nil, elfMachine: 22),
    ]

    static let row: [CPU: Row] = Dictionary(uniqueKeysWithValues: table.map { ($0.cpu, $0) })

    private static let byName: [String: CPU] = {
        var names: [String: CPU] = [:]
        for row in table {
            names[row.cpu.rawValue] = row.cpu
            for alias in row.aliases { names[alias] = row.cpu }
        }
        return names
    }()

    private static func resolve(_ name: String) -> CPU? {
        // ASCII-only lowercasing: architecture names are ASCII, and Foundation stays out of ReportModel.
        let word = name.utf8.drop { $0 == 0x20 || $0 == 0x09 }.prefix { $0 != 0x20 && $0 != 0x09 }
        let lower = String(decoding: word.map { (0x41...0x5a).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
        return byName[lower]
    }
}
