/// Arithmetic on numbers that came from a report, a payload or a stored result. Swift traps on
/// integer overflow and on `Int(Double)` of NaN, infinity or anything out of range, and a trap
/// takes the whole process down: every such sum, product or conversion goes through these
/// (ARCHITECTURE.md, "Invariants", overflow-safe input; Tests/ModuleGraphTests/OverflowFitnessTests.swift
/// fails on a new unchecked one).
extension FixedWidthInteger {
    /// `self + other`, held at the type's bounds instead of trapping: for totals that are only
    /// shown (a page's "N samples"), where a clamped number is better than no page.
    @inlinable public func saturatingAdding(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }

    /// `self × other`, held at the type's bounds instead of trapping.
    @inlinable public func saturatingMultiplied(by other: Self) -> Self {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) == (other < 0) ? .max : .min
    }

    /// The integer nearest to `value`, held at the type's bounds; NaN is 0. For geometry and
    /// labels computed in `Double` from stored numbers.
    @inlinable public static func clamping(_ value: Double) -> Self {
        guard !value.isNaN else { return 0 }
        if value <= Double(Self.min) { return .min }
        // `Double(Self.max)` rounds up to 2^bitWidth (or 2^(bitWidth−1)), which is itself out of range.
        if value >= Double(Self.max) { return .max }
        return Self(value.rounded(.towardZero))
    }
}

extension Sequence where Element: FixedWidthInteger {
    /// The sum, or nil when it leaves the element type's range: for input that must be refused.
    @inlinable public func checkedSum() -> Element? {
        var total: Element = 0
        for value in self {
            let (sum, overflow) = total.addingReportingOverflow(value)
            if overflow { return nil }
            total = sum
        }
        return total
    }

    /// The sum, held at the type's bounds (see `saturatingAdding`).
    @inlinable public func saturatingSum() -> Element {
        reduce(into: 0) { $0 = $0.saturatingAdding($1) }  // overflow: saturating
    }
}
