import Foundation
import X509

/// Something noteworthy about a trusted chain: each becomes a security event.
///
/// A struct wrapping a private enum, so that a new notice can be added without breaking users' exhaustive
/// `switch`es (see ``TrustFailureReason`` for why). Make a notice with the leading-dot factories, tell notices apart
/// by ``code`` and read their data through the accessors. Two notices are equal when they are the same notice with
/// the same data.
public struct TrustNotice: Hashable, Sendable, CustomStringConvertible {
    private enum Backing: Hashable, Sendable {
        case pinMatched(host: String, pin: Pin, subject: DistinguishedName)
        case reportOnlyPinViolation(PinMismatch)
        case pinSetExpired(host: String, expiration: String)
        case validationDisabled(host: String)
        case hostNotValidated(host: String)
        case defaultValidationSkipped(host: String)
        case revocationChecked(host: String, check: RevocationCheck)
        case revocationUnknown(host: String, certificate: String, why: String)
        case certificateTransparencyChecked(host: String, check: CertificateTransparencyCheck)
        case certificateTransparencyNotMet(host: String, detail: String)
    }

    private let backing: Backing

    private init(_ backing: Backing) {
        self.backing = backing
    }

    /// A configured pin was found on the verified chain, in the certificate with this subject. (The subject is
    /// kept as a name and only formatted when the notice is described: this notice is made in every pinned
    /// handshake, and formatting a name costs more than matching the pin.)
    public static func pinMatched(host: String, pin: Pin, subject: DistinguishedName) -> TrustNotice {
        TrustNotice(.pinMatched(host: host, pin: pin, subject: subject))
    }

    /// A report-only pin set did not match; the connection was allowed.
    public static func reportOnlyPinViolation(_ mismatch: PinMismatch) -> TrustNotice {
        TrustNotice(.reportOnlyPinViolation(mismatch))
    }

    /// The host's pin set has expired and was not enforced.
    public static func pinSetExpired(host: String, expiration: String) -> TrustNotice {
        TrustNotice(.pinSetExpired(host: host, expiration: expiration))
    }

    /// Certificate validation is disabled for this host (development only).
    public static func validationDisabled(host: String) -> TrustNotice {
        TrustNotice(.validationDisabled(host: host))
    }

    /// The host name was not checked against the certificate (`validateHost: false`).
    public static func hostNotValidated(host: String) -> TrustNotice {
        TrustNotice(.hostNotValidated(host: host))
    }

    /// The chain was not validated to trusted roots (`performDefaultValidation: false`): only the pins were checked.
    public static func defaultValidationSkipped(host: String) -> TrustNotice {
        TrustNotice(.defaultValidationSkipped(host: host))
    }

    /// A stable, bounded, value-free label of the notice: `pin_matched`, `report_only_pin_violation`,
    /// `pin_set_expired`, `validation_disabled`, `host_not_validated` or `default_validation_skipped`. A code, once
    /// published, keeps its meaning; new notices bring new codes.
    public var code: String {
        switch self.backing {
        case .pinMatched: return "pin_matched"
        case .reportOnlyPinViolation: return "report_only_pin_violation"
        case .pinSetExpired: return "pin_set_expired"
        case .validationDisabled: return "validation_disabled"
        case .hostNotValidated: return "host_not_validated"
        case .defaultValidationSkipped: return "default_validation_skipped"
        case .revocationChecked: return "revocation_checked"
        case .revocationUnknown: return "revocation_unknown"
        case .certificateTransparencyChecked: return "ct_checked"
        case .certificateTransparencyNotMet: return "ct_policy_not_met"
        }
    }

    /// A certificate of the chain was found not revoked; `check` says by which method, by whom, from where and
    /// until when.
    public static func revocationChecked(host: String, check: RevocationCheck) -> TrustNotice {
        TrustNotice(.revocationChecked(host: host, check: check))
    }

    /// The leaf's SCTs were checked against the Certificate Transparency policy.
    public static func certificateTransparencyChecked(host: String, check: CertificateTransparencyCheck) -> TrustNotice
    {
        TrustNotice(.certificateTransparencyChecked(host: host, check: check))
    }

    /// The leaf does not meet the Certificate Transparency policy and the connection went on (report-only, or a
    /// stale log list).
    public static func certificateTransparencyNotMet(host: String, detail: String) -> TrustNotice {
        TrustNotice(.certificateTransparencyNotMet(host: host, detail: detail))
    }

    /// What the Certificate Transparency check found, for `ct_checked`; `nil` for the other notices.
    public var certificateTransparency: CertificateTransparencyCheck? {
        if case .certificateTransparencyChecked(_, let check) = self.backing { return check }
        return nil
    }

    /// A certificate's revocation status could not be established and soft checking let the connection go on.
    public static func revocationUnknown(host: String, certificate: String, why: String) -> TrustNotice {
        TrustNotice(.revocationUnknown(host: host, certificate: certificate, why: why))
    }

    /// The same as ``code``: a bounded, value-free label.
    public var shortDescription: String { self.code }

    /// The host the notice is about.
    public var host: String {
        switch self.backing {
        case .pinMatched(let host, _, _), .pinSetExpired(let host, _), .validationDisabled(let host),
            .hostNotValidated(let host), .defaultValidationSkipped(let host),
            .revocationChecked(let host, _), .revocationUnknown(let host, _, _),
            .certificateTransparencyChecked(let host, _), .certificateTransparencyNotMet(let host, _):
            return host
        case .reportOnlyPinViolation(let mismatch):
            return mismatch.host
        }
    }

    /// The pin that matched, for `pin_matched`; `nil` for the other notices.
    public var pin: Pin? {
        if case .pinMatched(_, let pin, _) = self.backing { return pin }
        return nil
    }

    /// The subject of the certificate that carries the matched pin, for `pin_matched`; `nil` for the other notices.
    public var subject: DistinguishedName? {
        if case .pinMatched(_, _, let subject) = self.backing { return subject }
        return nil
    }

    /// The details of the violation (verified chain, expected pins), for `report_only_pin_violation`; `nil` for the
    /// other notices.
    public var pinMismatch: PinMismatch? {
        if case .reportOnlyPinViolation(let mismatch) = self.backing { return mismatch }
        return nil
    }

    /// The check that found a certificate good, for `revocation_checked`; `nil` for the other notices.
    public var revocationCheck: RevocationCheck? {
        if case .revocationChecked(_, let check) = self.backing { return check }
        return nil
    }

    /// Which certificate's revocation status is unknown, and why, for `revocation_unknown`; `nil` for the other
    /// notices.
    public var unknownRevocation: (certificate: String, reason: String)? {
        if case .revocationUnknown(_, let certificate, let why) = self.backing { return (certificate, why) }
        return nil
    }

    /// When the pin set expired, as an ISO 8601 date, for `pin_set_expired`; `nil` for the other notices.
    public var expiration: String? {
        if case .pinSetExpired(_, let expiration) = self.backing { return expiration }
        return nil
    }

    /// What happened, in words; the notices of options that weaken validation begin with `WARNING:`.
    public var description: String {
        switch self.backing {
        case .pinMatched(let host, let pin, let subject):
            return "pin \(pin) matched \(subject) on the verified chain for \(host)"
        case .reportOnlyPinViolation(let mismatch):
            return mismatch.message(title: "Report-only pin violation (connection allowed):")
        case .pinSetExpired(let host, let expiration):
            return "the pin set for \(host) expired at \(expiration) and is not enforced"
        case .validationDisabled(let host):
            return "WARNING: certificate validation is disabled for \(host); any server can impersonate it"
        case .hostNotValidated(let host):
            return "WARNING: the certificate was not checked against the name \(host) (validateHost: false); "
                + "a valid certificate for any name is accepted"
        case .defaultValidationSkipped(let host):
            return "WARNING: the chain for \(host) was not validated to trusted roots "
                + "(performDefaultValidation: false); only the pins were checked"
        case .revocationChecked(let host, let check):
            let until = check.status.nextUpdate.map { " until \($0.formatted(.iso8601))" } ?? ""
            let cached = check.cached ? ", cached" : ""
            return "certificate \(check.certificate) of the chain for \(host) is not revoked, according to "
                + "\(check.status.source) (\(check.method) from \(check.origin)\(cached))\(until)"
        case .revocationUnknown(let host, let certificate, let why):
            return "the revocation status of certificate \(certificate) of the chain for \(host) is unknown (\(why)); "
                + "the connection went on (soft revocation checking)"
        case .certificateTransparencyChecked(let host, let check):
            return "\(check) for \(host)"
        case .certificateTransparencyNotMet(let host, let detail):
            return "the certificate for \(host) does not meet the Certificate Transparency policy (\(detail)); the "
                + "connection went on (not enforced)"
        }
    }
}

extension TrustNotice {
    /// The kind of the security event that reports this notice.
    package var eventKind: SecurityEvent.Kind {
        switch self.backing {
        case .pinMatched: return .pinMatched
        case .reportOnlyPinViolation: return .reportOnlyViolation
        case .pinSetExpired: return .pinSetExpired
        case .validationDisabled, .hostNotValidated, .defaultValidationSkipped: return .insecureOptionUsed
        case .revocationChecked: return .revocationChecked
        case .revocationUnknown: return .revocationUnknown
        case .certificateTransparencyChecked: return .certificateTransparencyChecked
        case .certificateTransparencyNotMet: return .certificateTransparencyNotMet
        }
    }

    /// The details of the event that reports this notice: for `revocation_checked`, the method (`CRL` or `OCSP`),
    /// the source, where the answer came from, whether it was cached, the status and its `nextUpdate`; for
    /// `revocation_unknown`, the certificate and why.
    package var eventDetails: SecurityEvent.Details {
        switch self.backing {
        case .revocationChecked(_, let check):
            var details: SecurityEvent.Details = [
                .certificate: .text(check.certificate),
                .serialNumber: .text(check.serialNumber),
                .revocationMethod: .text(check.method.description),
                .source: .text(check.status.source),
                .fetchedFrom: .text(check.origin.description),
                .cached: .flag(check.cached),
                .revocationStatus: .text(check.status.code),
            ]
            if let nextUpdate = check.status.nextUpdate { details[.nextUpdate] = .text(nextUpdate.formatted(.iso8601)) }
            return details
        case .revocationUnknown(_, let certificate, _):
            return [.certificate: .text(certificate)]
        case .certificateTransparencyChecked(_, let check):
            return [
                .sctsCounted: .text("\(check.counted)"),
                .sctsFound: .text("\(check.entries.count)"),
                .logOperators: .text(check.operators.joined(separator: ", ")),
                .ctVerdict: .text(check.isCompliant ? "met" : "not_met"),
            ]
        default:
            return [:]
        }
    }
}
