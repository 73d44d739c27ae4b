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
        case badSignature(what: String, signer: String)
        case weakSignature(what: String, algorithm: String)
        case notYetValid(what: String, thisUpdate: Date, evaluatedAt: Date)
        case stale(what: String, nextUpdate: Date, evaluatedAt: Date)
        case missingNextUpdate(what: String)
        case outOfScope(detail: String)
        case responderError(status: String)
        case noMatchingResponse(responder: String)
        case unauthorizedResponder(responder: String, issuer: String, detail: String)
        case nonceMismatch
        case unknownToResponder(responder: String)
        case issuerMismatch(certificateIssuer: String, issuer: String)
        case requestMismatch
        case deltaListsNotRead(namedBy: String)
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
        RevocationError(.badSignature(what: "revocation list", signer: issuer))
    }

    /// The signature of `what` (for example "OCSP response") does not verify with the key of `signer`.
    public static func badSignature(_ what: String, signer: String) -> RevocationError {
        RevocationError(.badSignature(what: what, signer: signer))
    }

    /// The signature algorithm is broken (SHA-1) or not supported.
    public static func weakSignature(algorithm: String) -> RevocationError {
        RevocationError(.weakSignature(what: "revocation list", algorithm: algorithm))
    }

    /// The signature algorithm of `what` is broken (SHA-1) or not supported.
    public static func weakSignature(_ what: String, algorithm: String) -> RevocationError {
        RevocationError(.weakSignature(what: what, algorithm: algorithm))
    }

    /// The list's `thisUpdate` lies in the future, beyond the allowed clock skew.
    public static func notYetValid(thisUpdate: Date, evaluatedAt: Date) -> RevocationError {
        RevocationError(.notYetValid(what: "revocation list", thisUpdate: thisUpdate, evaluatedAt: evaluatedAt))
    }

    /// The time `what` was issued for (`thisUpdate`, or an OCSP response's `producedAt`) lies in the future,
    /// beyond the allowed clock skew.
    public static func notYetValid(_ what: String, thisUpdate: Date, evaluatedAt: Date) -> RevocationError {
        RevocationError(.notYetValid(what: what, thisUpdate: thisUpdate, evaluatedAt: evaluatedAt))
    }

    /// The list's `nextUpdate` has passed, beyond the allowed clock skew: a newer list should exist.
    public static func stale(nextUpdate: Date, evaluatedAt: Date) -> RevocationError {
        RevocationError(.stale(what: "revocation list", nextUpdate: nextUpdate, evaluatedAt: evaluatedAt))
    }

    /// The `nextUpdate` of `what` has passed, beyond the allowed clock skew: newer information should exist.
    public static func stale(_ what: String, nextUpdate: Date, evaluatedAt: Date) -> RevocationError {
        RevocationError(.stale(what: what, nextUpdate: nextUpdate, evaluatedAt: evaluatedAt))
    }

    /// The list has no `nextUpdate`, so there is no telling whether it is current.
    public static let missingNextUpdate = RevocationError(.missingNextUpdate(what: "revocation list"))

    /// `what` has no `nextUpdate`, so there is no telling whether it is current.
    public static func missingNextUpdate(_ what: String) -> RevocationError {
        RevocationError(.missingNextUpdate(what: what))
    }

    /// The list does not cover the certificate (its issuing-distribution-point extension limits it to other
    /// certificates).
    public static func outOfScope(_ detail: String) -> RevocationError {
        RevocationError(.outOfScope(detail: detail))
    }

    /// The OCSP responder answered with an error status (`malformedRequest`, `internalError`, `tryLater`,
    /// `sigRequired` or `unauthorized`) instead of a certificate status.
    public static func responderError(status: String) -> RevocationError {
        RevocationError(.responderError(status: status))
    }

    /// The OCSP response holds no answer for the certificate that was asked about.
    public static func noMatchingResponse(responder: String) -> RevocationError {
        RevocationError(.noMatchingResponse(responder: responder))
    }

    /// The OCSP response is signed by someone who is neither the certificate's issuer nor a responder the issuer
    /// authorized (a certificate it signed with the extended key usage `OCSPSigning`, valid now).
    public static func unauthorizedResponder(responder: String, issuer: String, detail: String) -> RevocationError {
        RevocationError(.unauthorizedResponder(responder: responder, issuer: issuer, detail: detail))
    }

    /// The OCSP response carries a nonce other than the one the request sent: it may be a replayed answer.
    public static let nonceMismatch = RevocationError(.nonceMismatch)

    /// The OCSP responder answered `unknown`: it does not know the certificate.
    public static func unknownToResponder(responder: String) -> RevocationError {
        RevocationError(.unknownToResponder(responder: responder))
    }

    /// The certificate given as the issuer is not the one that issued the certificate (their names differ).
    public static func issuerMismatch(certificateIssuer: String, issuer: String) -> RevocationError {
        RevocationError(.issuerMismatch(certificateIssuer: certificateIssuer, issuer: issuer))
    }

    /// The OCSP request was made for another certificate than the one being checked.
    public static let requestMismatch = RevocationError(.requestMismatch)

    /// The list or the certificate (`namedBy`) names delta lists (a freshest-CRL extension), which Bulwark does not
    /// read: the complete list alone can show a certificate revoked, never good.
    public static func deltaListsNotRead(namedBy: String) -> RevocationError {
        RevocationError(.deltaListsNotRead(namedBy: namedBy))
    }

    /// A stable label of the failure: `malformed`, `too_large`, `unsupported`, `unknown_critical_extension`,
    /// `wrong_issuer`, `issuer_cannot_sign_lists`, `delta_crls_unsupported`, `bad_signature`, `weak_signature`, `not_yet_valid`, `stale`,
    /// `missing_next_update`, `out_of_scope`, and for OCSP `responder_error`, `no_matching_response`,
    /// `unauthorized_responder`, `nonce_mismatch`, `unknown_to_responder`, `issuer_mismatch` or `request_mismatch`.
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
        case .responderError: return "responder_error"
        case .noMatchingResponse: return "no_matching_response"
        case .unauthorizedResponder: return "unauthorized_responder"
        case .nonceMismatch: return "nonce_mismatch"
        case .unknownToResponder: return "unknown_to_responder"
        case .issuerMismatch: return "issuer_mismatch"
        case .requestMismatch: return "request_mismatch"
        case .deltaListsNotRead: return "delta_crls_unsupported"
        }
    }

    /// What went wrong, naming the certificate or the list, in words.
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
        case .badSignature(let what, let signer):
            return "the \(what)'s signature does not verify with the key of \"\(signer)\""
        case .weakSignature(let what, let algorithm):
            return "the \(what) is signed with \(algorithm), which is not accepted"
        case .notYetValid(let what, let thisUpdate, let evaluatedAt):
            return "the \(what) is not valid yet: it was issued for "
                + "\(thisUpdate.formatted(.iso8601)), after \(evaluatedAt.formatted(.iso8601))"
        case .stale(let what, let nextUpdate, let evaluatedAt):
            return "the \(what) is out of date: its next update was due "
                + "\(nextUpdate.formatted(.iso8601)), before \(evaluatedAt.formatted(.iso8601))"
        case .missingNextUpdate(let what):
            return "the \(what) has no next-update time, so its freshness cannot be judged"
        case .outOfScope(let detail):
            return "the revocation list does not cover this certificate: \(detail)"
        case .responderError(let status):
            return "the OCSP responder answered \"\(status)\" instead of a certificate status"
        case .noMatchingResponse(let responder):
            return "\(responder) sent no answer for the certificate that was asked about"
        case .unauthorizedResponder(let responder, let issuer, let detail):
            return "the OCSP response is signed by \"\(responder)\", which is neither the issuer \"\(issuer)\" "
                + "nor a responder it authorized: \(detail)"
        case .nonceMismatch:
            return "the OCSP response carries a nonce other than the one the request sent: it may be a replayed answer"
        case .unknownToResponder(let responder):
            return "\(responder) does not know the certificate (status unknown)"
        case .issuerMismatch(let certificateIssuer, let issuer):
            return "the certificate was issued by \"\(certificateIssuer)\", not by \"\(issuer)\", given as its issuer"
        case .requestMismatch:
            return "the OCSP request was made for another certificate than the one being checked"
        case .deltaListsNotRead(let namedBy):
            return "\(namedBy) names delta CRLs (a freshest CRL), which Bulwark does not read, so the complete list "
                + "alone cannot show that the certificate is not revoked"
        }
    }
}
