import Foundation

/// The pins configured for a host, with TrustKit's rules: at least two pins when enforcing (a primary and a
/// backup, so that a key rotation does not lock users out), an optional expiration date after which the pins are
/// no longer enforced, and a report-only mode.
public struct PinSet: Hashable, Sendable {
    /// What happens when the verified chain matches none of the pins.
    public enum Enforcement: Hashable, Sendable {
        /// The connection is refused.
        case enforce
        /// The connection proceeds and a report-only violation notice is raised.
        case reportOnly
    }

    /// The pins, in the order they were given, without duplicates.
    public let pins: [Pin]
    /// After this date the pins are not enforced (the chain must still pass default validation).
    public let expiration: Date?
    /// Whether a mismatch refuses the connection or is only reported.
    public let enforcement: Enforcement
    /// Whether fewer than two keys were accepted for an enforcing set (`allowSinglePin`). The rule counts keys: a
    /// certificate pin and the SPKI pin of the same certificate name one key, which a pinning evaluator finds out
    /// when it sees the certificate, and refuses unless this is set.
    public let allowsSinglePin: Bool

    /// Creates a pin set.
    ///
    /// - Parameters:
    ///   - pins: The pins. Duplicates are removed.
    ///   - expiration: When the pins stop being enforced; `nil` for never.
    ///   - enforcement: `.enforce` (default) or `.reportOnly`.
    ///   - allowSinglePin: Accept fewer than two distinct pins (or keys) while enforcing. TrustKit refuses that
    ///     because a lost or rotated key then locks every user out; opt out only when you control rotation.
    /// - Throws: ``PinError`` with `.emptyPinSet` or `.tooFewPins`.
    public init(
        _ pins: [Pin],
        expiration: Date? = nil,
        enforcement: Enforcement = .enforce,
        allowSinglePin: Bool = false
    ) throws(PinError) {
        var seen = Set<Pin>()
        let unique = pins.filter { seen.insert($0).inserted }
        guard !unique.isEmpty else {
            throw PinError(.emptyPinSet, input: "[]", detail: "a pin set needs at least one pin")
        }
        if unique.count < 2 && enforcement == .enforce && !allowSinglePin {
            throw PinError(
                .tooFewPins,
                input: unique.map(\.description).joined(separator: ", "),
                detail: "an enforcing pin set needs a backup pin (at least 2 distinct pins); "
                    + "pass allowSinglePin: true to opt out"
            )
        }
        self.pins = unique
        self.expiration = expiration
        self.enforcement = enforcement
        self.allowsSinglePin = allowSinglePin
    }

    /// Creates a pin set from pin texts (see ``Pin``).
    public init(
        _ pins: [String],
        expiration: Date? = nil,
        enforcement: Enforcement = .enforce,
        allowSinglePin: Bool = false
    ) throws(PinError) {
        var parsed: [Pin] = []
        for text in pins { parsed.append(try Pin(text)) }
        try self.init(parsed, expiration: expiration, enforcement: enforcement, allowSinglePin: allowSinglePin)
    }

    /// Whether the pins are past their expiration at `time`.
    public func isExpired(at time: Date) -> Bool {
        guard let expiration else { return false }
        return time >= expiration
    }
}
