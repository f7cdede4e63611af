import Foundation
import TestSupport
import Testing

/// `stackline symbols add` of `.tar` archives through the real binary: GNU tar's and Python's
/// tarfile module are the oracles that write them (every format: GNU, ustar, pax), and the
/// store must hold exactly the ids llvm-dwarfdump and readelf read from the files put in. The
/// hostile ones get the zip rules: refused whole, nothing stored, nothing left in TMPDIR.
@Suite struct TarStoreInputTests {
    typealias Scene = HostileStoreInputTests.Scene

    func fixture() throws -> ElfFixture { try sharedElfFixtures.get().named("c-gcc-pie") }

    /// The Mach-O sample dSYM's UUIDs plus the ELF fixture's build-id, from the oracles.
    func expectedIDs() throws -> Set<String> {
        Set(try MachOFixtures.uuids(MachOFixtures.dSYMDWARF).values).union([try #require(try readelfBuildID(try fixture().unstripped))])
    }

    /// Writes a tar with Python's tarfile: each spec is `type:name:source-or-target`, type one
    /// of file, dir, symlink, hardlink, chr, fifo.
    func makeTar(_ path: String, format: String = "GNU_FORMAT", _ specs: [String]) throws {
        let script = """
            import io, sys, tarfile
            out, fmt = sys.argv[1], getattr(tarfile, sys.argv[2])
            with tarfile.open(out, "w", format=fmt) as t:
                for spec in sys.argv[3:]:
                    kind, name, arg = spec.split(":", 2)
                    info = tarfile.TarInfo(name)
                    if kind == "file":
                        data = open(arg, "rb").read()
                        info.size = len(data)
                        t.addfile(info, io.BytesIO(data))
                        continue
                    info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
                                 "chr": tarfile.CHRTYPE, "fifo": tarfile.FIFOTYPE}[kind]
                    info.linkname = arg
                    t.addfile(info)
            """
        try runChecked("python3", ["-c", script, path, format] + specs)
    }

    @Test(arguments: ["gnu", "ustar", "pax"])
    func tarOfABundleAndAnELFFileIsUnpackedAndStored(format: String) throws {
        let scene = try Scene("tar-\(format)")
        defer { scene.root.remove() }
        // A folder deep enough that the dSYM's DWARF path passes 100 bytes: each format's long-name way.
        let deep = "build/" + String(repeating: "nested-folder/", count: 6)
        let staging = scene.file("staging")
        try FileManager.default.createDirectory(atPath: staging + "/" + deep, withIntermediateDirectories: true)
        try runChecked("cp", ["-R", MachOFixtures.dSYM, staging + "/" + deep])
        try runChecked("cp", [try fixture().unstripped, staging + "/build/app.debug"])
        let tar = scene.file("symbols.tar")
        try runChecked("tar", ["--format=\(format)", "-cf", tar, "-C", staging, "build"])
        // The oracle lists the long name whole.
        let listed = try runChecked("tar", ["-tf", tar]).stdout
        #expect(listed.contains(deep + "Sample.dSYM/Contents/Resources/DWARF/Sample"), "\(listed)")

        let out = try scene.add([tar])
        #expect(out.succeeded, "\(out.summary)")
        try scene.expectContained(out)
        #expect(scene.storedIDs == (try expectedIDs()))
        #expect(out.stdout.split(separator: "\n").filter { $0.hasPrefix("stored ") }.count == 3, "\(out.stdout)")
        // Each format's long name arrived whole: the sidecars record where the file came from.
        let script = "import glob, json, sys; print('\\n'.join(json.load(open(f))['source'] for f in glob.glob(sys.argv[1] + '/.build-id/*/*.json')))"
        let sources = try runChecked("python3", ["-c", script, scene.store]).stdout
        #expect(sources.contains("symbols.tar/" + deep + "Sample.dSYM/Contents/Resources/DWARF/Sample\n"), "\(sources)")
    }

    @Test(arguments: [
        ("symlink:Sample.dSYM/Contents/Resources/DWARF/Sample:/etc/passwd", "is a symbolic link"),
        ("hardlink:other.debug:good.debug", "is a hard link"),
        ("chr:null:", "is a character device"),
        ("fifo:pipe:", "is a FIFO"),
    ])
    func linkAndSpecialEntriesRefuseTheWholeTar(entry: String, why: String) throws {
        let scene = try Scene("tar-special")
        defer { scene.root.remove() }
        let tar = scene.file("hostile.tar")
        try makeTar(tar, ["file:good.debug:\(try fixture().unstripped)", entry])
        let name = entry.split(separator: ":")[1]
        try scene.expectRefusal(try scene.add([tar]), "hostile.tar: cannot unpack archive: entry '\(name)' \(why)")
    }

    @Test(arguments: ["../../escape.debug", "a/../../escape.debug", "/tmp/escape.debug"])
    func tarSlipEntryIsRefusedWhole(entry: String) throws {
        let scene = try Scene("tar-slip")
        defer { scene.root.remove() }
        let tar = scene.file("slip.tar")
        let source = try fixture().unstripped
        // A pax archive: the name travels in a pax record, the way past ustar's 100 bytes.
        try makeTar(tar, format: "PAX_FORMAT", ["file:good.debug:\(source)", "file:\(entry):\(source)"])
        #expect(try runChecked("tar", ["-tf", tar]).stdout.contains(entry))
        let why = entry.hasPrefix("/") ? "has an absolute path" : "climbs out of the archive with '..'"
        try scene.expectRefusal(try scene.add([tar]), "entry '\(entry)' \(why)")
        #expect(!FileManager.default.fileExists(atPath: scene.root.path + "/escape.debug"))
    }

    @Test func tarOverTheCapIsRefusedBeforeAnythingIsWritten() throws {
        let scene = try Scene("tar-cap")
        defer { scene.root.remove() }
        let tar = scene.file("big.tar")
        try makeTar(tar, ["file:good.debug:\(try fixture().unstripped)"])
        let size = try #require(FileManager.default.attributesOfItem(atPath: try fixture().unstripped)[.size] as? Int)
        try scene.expectRefusal(
            try scene.add([tar], environment: ["STACKLINE_UNZIP_MAX_BYTES": "\(size - 1)"]),
            "it would unpack to \(size) bytes, more than STACKLINE_UNZIP_MAX_BYTES=\(size - 1)")
    }

    /// Headers that lie: a size past the end of the file, a broken checksum.
    @Test func corruptHeadersAreRefused() throws {
        let scene = try Scene("tar-corrupt")
        defer { scene.root.remove() }
        let tar = scene.file("good.tar")
        try makeTar(tar, format: "USTAR_FORMAT", ["file:good.debug:\(try fixture().unstripped)"])
        var bytes = try #require(FileManager.default.contents(atPath: tar))

        // Size field (offset 124, 12 octal digits) claims 8 GiB; the checksum is fixed up so only the size lies.
        var lying = bytes
        lying.replaceSubrange(124..<136, with: Array("77777777777\u{0}".utf8))
        Self.fixChecksum(&lying)
        let liar = scene.file("liar.tar")
        FileManager.default.createFile(atPath: liar, contents: lying)
        #expect(try runProcess("tar", ["-tf", liar]).succeeded == false, "GNU tar should refuse it too")
        try scene.expectRefusal(try scene.add([liar]), "header at byte 0 declares 8589934591 bytes, past the end of the file")

        bytes[0] ^= 0x20  // the name changes, the checksum does not
        let broken = scene.file("broken.tar")
        FileManager.default.createFile(atPath: broken, contents: bytes)
        try scene.expectRefusal(try scene.add([broken]), "header at byte 0 has a bad checksum")
    }

    @Test func zipInsideATarIsNotUnpacked() throws {
        let scene = try Scene("tar-nested")
        defer { scene.root.remove() }
        let zip = scene.file("inner.zip")
        try runChecked("zip", ["-qj", zip, try fixture().unstripped])
        let tar = scene.file("outer.tar")
        try makeTar(tar, ["file:deeper/inner.zip:\(zip)"])
        try scene.expectRefusal(try scene.add([tar]), "nested archive inner.zip inside outer.tar is not unpacked; unzip it first")
    }

    /// The POSIX header checksum: the byte sum with the checksum field read as blanks.
    static func fixChecksum(_ header: inout Data) {
        header.replaceSubrange(148..<156, with: Array(repeating: UInt8(ascii: " "), count: 8))
        let sum = header.prefix(512).reduce(0) { $0 + Int($1) }
        header.replaceSubrange(148..<156, with: Array(String(format: "%06o\u{0} ", sum).utf8))
    }
}
