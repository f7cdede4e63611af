/// A key of `DenseIDs`: a few integers, spread over 64 bits by `mixed`.
protocol DenseIDKey: Equatable {
    var mixed: UInt64 { get }
}

extension DenseIDKey {
    /// splitmix64's finalizer: every input bit reaches every output bit, so the low bits a
    /// table slot is taken from are well spread.
    static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Numbers keys 0, 1, 2, … in the order they first come: the symcache builder's function and
/// caller records, stored once each. An open-addressing table over the keys' own integers,
/// instead of a `Dictionary`: the builder asks once per segment, and SipHash over each key's
/// fields was a large part of its sweep (`make bench`, symcache build).
struct DenseIDs<Key: DenseIDKey> {
    /// Each slot's id plus one; 0 for an empty slot. Kept at most half full.
    private var slots = [UInt32](repeating: 0, count: 1 << 10)
    private var keys: [Key] = []

    var count: Int { keys.count }

    /// `key`'s id, and whether it was new (it then got the next id).
    mutating func insert(_ key: Key) -> (id: UInt32, isNew: Bool) {
        if keys.count * 2 >= slots.count { grow() }
        let mask = slots.count - 1
        var i = Int(truncatingIfNeeded: key.mixed) & mask
        while true {
            let slot = slots[i]
            if slot == 0 {
                let id = UInt32(truncatingIfNeeded: keys.count)
                keys.append(key)
                slots[i] = id &+ 1
                return (id, true)
            }
            if keys[Int(slot - 1)] == key { return (slot - 1, false) }
            i = (i + 1) & mask
        }
    }

    private mutating func grow() {
        var bigger = [UInt32](repeating: 0, count: slots.count * 2)
        let mask = bigger.count - 1
        for (id, key) in keys.enumerated() {
            var i = Int(truncatingIfNeeded: key.mixed) & mask
            while bigger[i] != 0 { i = (i + 1) & mask }
            bigger[i] = UInt32(truncatingIfNeeded: id) &+ 1
        }
        slots = bigger
    }
}
