import JSONFormat

extension JSONBytes {
    /// An address as a JSON string, spelled as `Address.description` spells it (`"0x1f0"`).
    @inlinable
    public mutating func address(_ address: Address) { hex(address.value) }
}
