/// Why a certificate was revoked: the CRL reason code of RFC 5280, section 5.3.1.
public struct RevocationReason: Hashable, Sendable, CustomStringConvertible {
    /// The code as it stands in the list (0 to 10, 7 unused).
    public let rawValue: Int

    /// Wraps a reason code; `nil` for a value RFC 5280 does not define.
    public init?(rawValue: Int) {
        guard (0...10).contains(rawValue), rawValue != 7 else { return nil }
        self.rawValue = rawValue
    }

    private init(_ rawValue: Int) { self.rawValue = rawValue }

    /// No reason given.
    public static let unspecified = RevocationReason(0)
    /// The certificate's private key was compromised.
    public static let keyCompromise = RevocationReason(1)
    /// The issuing CA's key was compromised.
    public static let caCompromise = RevocationReason(2)
    /// The subject's name or other information changed.
    public static let affiliationChanged = RevocationReason(3)
    /// The certificate was replaced.
    public static let superseded = RevocationReason(4)
    /// The certificate is no longer needed.
    public static let cessationOfOperation = RevocationReason(5)
    /// The certificate is on hold (it may be released later).
    public static let certificateHold = RevocationReason(6)
    /// A delta CRL's instruction to take an entry off the list.
    public static let removeFromCRL = RevocationReason(8)
    /// A privilege granted by the certificate was withdrawn.
    public static let privilegeWithdrawn = RevocationReason(9)
    /// The attribute authority was compromised.
    public static let aaCompromise = RevocationReason(10)

    /// The reason in words: `key compromise`, `CA compromise`, `superseded`, …
    public var description: String {
        switch self.rawValue {
        case 0: return "unspecified"
        case 1: return "key compromise"
        case 2: return "CA compromise"
        case 3: return "affiliation changed"
        case 4: return "superseded"
        case 5: return "cessation of operation"
        case 6: return "certificate hold"
        case 8: return "remove from CRL"
        case 9: return "privilege withdrawn"
        default: return "AA compromise"
        }
    }
}
