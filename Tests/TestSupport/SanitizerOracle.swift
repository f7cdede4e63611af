import Foundation

/// What a sanitizer report's own `==N==ERROR:` line says, read with a regular expression (the
/// oracle for the parser): the error type, the message from the tool's name on, the address.
public func sanitizerErrorLine(_ text: String) throws -> (type: String, message: String, address: UInt64) {
    let regex = try NSRegularExpression(pattern: #"==\d+==ERROR: (\w+Sanitizer: ([\w-]+) on (?:unknown )?address 0x([0-9a-f]+)[^\n]*)"#)
    guard let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)), match.numberOfRanges == 4,
        let type = Range(match.range(at: 2), in: text), let message = Range(match.range(at: 1), in: text),
        let address = Range(match.range(at: 3), in: text), let value = UInt64(text[address], radix: 16)
    else { throw TestSupportError("no ==N==ERROR: …Sanitizer: line in the report") }
    return (String(text[type]), String(text[message]), value)
}
