import Foundation

/// Why a certificate's revocation status could not be established from a revocation list or response.
///
/// A struct over a private enum, so that new failures can be added without breaking a `switch` of users. Tell
/// failures apart by ``code``; ``description`` says in words what was wrong.
public struct RevocationError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Backing: Hashable, Sendable {
        case malformed(what: String, detail: String)
        case tooLarge(what: String, size: Int, limit: Int)
        case unsupported(what: String, feature: String)
        case unknownCriticalExtension(what: String, oid: String)
        case wrongIssuer(listIssuer: String, certificateIssuer: String)
        case issuerCannotSignLists(issuer: String)
        case badSignature(issuer: String)
        case weakSignature(algorithm: String)
        case notYetValid(thisUpdate: Date, evaluatedAt: Date)
        case stale(nextUpdate: Date, evaluatedAt: Date)
        case missingNextUpdate
        case outOfScope(detail: String)
    }

    private let backing: Backing

    private init(_ backing: Backing) {
        self.backing = backing
    }

    /// The bytes are not a valid DER encoding of what they should be; `detail` says where they went wrong.
    public static func malformed(_ what: String, detail: String) -> RevocationError {
        RevocationError(.malformed(what: what, detail: detail))
    }

    /// The input is larger than the limit set for it.
    public static func tooLarge(_ what: String, size: Int, limit: Int) -> RevocationError {
        RevocationError(.tooLarge(what: what, size: size, limit: limit))
    }

    /// The input uses a feature Bulwark does not support (a delta CRL, an indirect CRL, a CRL partitioned by
    /// reason), so it cannot be relied on.
    public static func unsupported(_ what: String, feature: String) -> RevocationError {
        RevocationError(.unsupported(what: what, feature: feature))
    }

    /// The input carries a critical extension Bulwark does not understand, so it must not be used (RFC 5280).
    public static func unknownCriticalExtension(_ what: String, oid: String) -> RevocationError {
        RevocationError(.unknownCriticalExtension(what: what, oid: oid))
    }

    /// The list was issued by someone other than the certificate's issuer.
    public static func wrongIssuer(listIssuer: String, certificateIssuer: String) -> RevocationError {
        RevocationError(.wrongIssuer(listIssuer: listIssuer, certificateIssuer: certificateIssuer))
    }

    /// The issuer's key usage does not allow it to sign revocation lists (`cRLSign`).
    public static func issuerCannotSignLists(issuer: String) -> RevocationError {
        RevocationError(.issuerCannotSignLists(issuer: issuer))
    }

    /// The signature does not verify with the issuer's public key.
    public static func badSignature(issuer: String) -> RevocationError {
        RevocationError(.badSignature(issuer: issuer))
    }

    /// The signature algorithm is broken (SHA-1) or not supported.
    public static func weakSignature(algorithm: String) -> RevocationError {
        RevocationError(.weakSignature(algorithm: algorithm))
    }

    /// The list's `thisUpdate` lies in the future, beyond the allowed clock skew.
    public static func notYetValid(thisUpdate: Date, evaluatedAt: Date) -> RevocationError {
        RevocationError(.notYetValid(thisUpdate: thisUpdate, evaluatedAt: evaluatedAt))
    }

    /// The list's `nextUpdate` has passed, beyond the allowed clock skew: a newer list should exist.
    public static func stale(nextUpdate: Date, evaluatedAt: Date) -> RevocationError {
        RevocationError(.stale(nextUpdate: nextUpdate, evaluatedAt: evaluatedAt))
    }

    /// The list has no `nextUpdate`, so there is no telling whether it is current.
    public static let missingNextUpdate = RevocationError(.missingNextUpdate)

    /// The list does not cover the certificate (its issuing-distribution-point extension limits it to other
    /// certificates).
    public static func outOfScope(_ detail: String) -> RevocationError {
        RevocationError(.outOfScope(detail: detail))
    }

    /// A stable label of the failure: `malformed`, `too_large`, `unsupported`, `unknown_critical_extension`,
    /// `wrong_issuer`, `issuer_cannot_sign_lists`, `bad_signature`, `weak_signature`, `not_yet_valid`, `stale`,
    /// `missing_next_update` or `out_of_scope`.
    public var code: String {
        switch self.backing {
        case .malformed: return "malformed"
        case .tooLarge: return "too_large"
        case .unsupported: return "unsupported"
        case .unknownCriticalExtension: return "unknown_critical_extension"
        case .wrongIssuer: return "wrong_issuer"
        case .issuerCannotSignLists: return "issuer_cannot_sign_lists"
        case .badSignature: return "bad_signature"
        case .weakSignature: return "weak_signature"
        case .notYetValid: return "not_yet_valid"
        case .stale: return "stale"
        case .missingNextUpdate: return "missing_next_update"
        case .outOfScope: return "out_of_scope"
        }
    }

    public var description: String {
        switch self.backing {
        case .malformed(let what, let detail):
            return "the \(what) is malformed: \(detail)"
        case .tooLarge(let what, let size, let limit):
            return "the \(what) is \(size) bytes, more than the limit of \(limit) bytes"
        case .unsupported(let what, let feature):
            return "the \(what) is \(feature), which Bulwark does not support"
        case .unknownCriticalExtension(let what, let oid):
            return "the \(what) carries a critical extension Bulwark does not understand (\(oid))"
        case .wrongIssuer(let listIssuer, let certificateIssuer):
            return "the revocation list was issued by \"\(listIssuer)\", not by the certificate's issuer "
                + "\"\(certificateIssuer)\""
        case .issuerCannotSignLists(let issuer):
            return "\"\(issuer)\" may not sign revocation lists: its key usage lacks cRLSign"
        case .badSignature(let issuer):
            return "the revocation list's signature does not verify with the key of \"\(issuer)\""
        case .weakSignature(let algorithm):
            return "the revocation list is signed with \(algorithm), which is not accepted"
        case .notYetValid(let thisUpdate, let evaluatedAt):
            return "the revocation list is not valid yet: it was issued for "
                + "\(thisUpdate.formatted(.iso8601)), after \(evaluatedAt.formatted(.iso8601))"
        case .stale(let nextUpdate, let evaluatedAt):
            return "the revocation list is out of date: its next update was due "
                + "\(nextUpdate.formatted(.iso8601)), before \(evaluatedAt.formatted(.iso8601))"
        case .missingNextUpdate:
            return "the revocation list has no next-update time, so its freshness cannot be judged"
        case .outOfScope(let detail):
            return "the revocation list does not cover this certificate: \(detail)"
        }
    }
}
