import Foundation
import ReportModel

/// The images of a report whose frames carry file addresses (Android tombstones, sanitizer
/// reports' `module+0xoffset`): each library is a `BinaryImage` at `loadAddress` 0 and
/// `vmAddress` 0, listed once per mapping path and build-id, so file address = the frame's
/// address with no special case in the symbolicator (ARCHITECTURE.md, "Address arithmetic").
struct FileAddressImages {
    private(set) var images: [BinaryImage] = []
    /// Image index by the report's bytes for path and build-id: this runs once per frame, and
    /// an image already seen is found without making strings.
    private var keys: [Key] = []
    private var index: [Key: Int] = [:]

    private struct Key: Hashable {
        var path: ArraySlice<UInt8>
        var buildID: ArraySlice<UInt8>
    }

    /// The image for the mapping `path` (`base.apk!libfoo.so` names a library stored inside an
    /// APK) and build-id, both ranges of `line`'s bytes; added the first time it is seen.
    mutating func image(
        path: Range<Int>, buildID: Range<Int>?, in line: TextLine, arch: Arch?,
        warnings: inout WarningLog, limits: inout LimitCounter
    ) throws(ReportParseError) -> Int {
        let key = Key(path: line.bytes[path], buildID: buildID.map { line.bytes[$0] } ?? [])
        if let known = index[key] { return known }
        let pathText = line.string(path)
        let file = pathText.split(separator: "!").last.map(String.init) ?? pathText
        let name = ReportText.basename(file)
        let id = BuildID.reported(buildID.map(line.string), image: name, lengths: .gnu, warnings: &warnings)
        try limits.add(images: 1)
        images.append(BinaryImage(name: name, path: pathText, id: id, arch: arch, loadAddress: 0, vmAddress: 0))
        index[key] = images.count - 1
        return images.count - 1
    }
}

extension TextLine {
    /// Index of the `(` that closes with the `)` at `range`'s last byte.
    func matchingOpen(_ range: Range<Int>) -> Int? {
        var depth = 0
        var index = range.upperBound
        while index > range.lowerBound {
            index -= 1
            if bytes[index] == UInt8(ascii: ")") { depth += 1 }
            if bytes[index] == UInt8(ascii: "(") {
                depth -= 1
                if depth == 0 { return index }
            }
        }
        return nil
    }

    /// The trailing parenthesised groups of `range`, last first, each without its parentheses,
    /// and what precedes them (trailing blanks removed).
    func trailingGroups(_ range: Range<Int>) -> (head: Range<Int>, groups: [Range<Int>]) {
        var end = range.upperBound
        var groups: [Range<Int>] = []
        while end > range.lowerBound, bytes[end - 1] == UInt8(ascii: ")"), let open = matchingOpen(range.lowerBound..<end) {
            groups.append(open + 1..<end - 1)
            end = open
            while end > range.lowerBound, TextLine.isBlank(bytes[end - 1]) { end -= 1 }
        }
        return (range.lowerBound..<end, groups)
    }

    func range(_ range: Range<Int>, hasPrefix literal: StaticString) -> Bool {
        range.count >= literal.utf8CodeUnitCount && matches(literal, at: range.lowerBound)
    }
}
