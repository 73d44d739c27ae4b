import Foundation
import X509

/// What a revocation source said about one certificate.
public struct RevocationStatus: Hashable, Sendable, CustomStringConvertible {
    /// How the status was learnt: from a certificate revocation list or from an OCSP responder.
    public struct Method: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) { self.name = name }

        /// A certificate revocation list (RFC 5280).
        public static let crl = Method("CRL")
        /// An OCSP response (RFC 6960).
        public static let ocsp = Method("OCSP")

        /// `CRL` or `OCSP`.
        public var description: String { self.name }
    }

    private enum Backing: Hashable, Sendable {
        case good
        case revoked(CertificateRevocationList.Entry)
    }

    /// Who said it, kept unformatted when it is a list's issuer: formatting a distinguished name costs more than a
    /// warm revocation check, and most statuses are never described.
    private enum Source: Hashable, Sendable {
        case text(String)
        case name(DistinguishedName)
    }

    private let backing: Backing
    private let sourceName: Source

    /// Who said it: the revocation list's issuer or the OCSP responder.
    public var source: String {
        switch self.sourceName {
        case .text(let text): text
        case .name(let name): String(describing: name)
        }
    }
    /// How it was said: by a revocation list or an OCSP response.
    public let method: Method
    /// When the information was current (the list's or the response's `thisUpdate`), when known.
    public let thisUpdate: Date?
    /// When newer information will be available at the latest (`nextUpdate`), when known.
    public let nextUpdate: Date?

    private init(_ backing: Backing, source: Source, method: Method, thisUpdate: Date?, nextUpdate: Date?) {
        self.backing = backing
        self.sourceName = source
        self.method = method
        self.thisUpdate = thisUpdate
        self.nextUpdate = nextUpdate
    }

    /// The certificate is not revoked, according to the revocation list of `issuer`.
    public static func good(issuer: String) -> RevocationStatus {
        RevocationStatus(.good, source: .text(issuer), method: .crl, thisUpdate: nil, nextUpdate: nil)
    }

    /// The certificate is revoked, as `entry` of the revocation list of `issuer` records.
    public static func revoked(_ entry: CertificateRevocationList.Entry, issuer: String) -> RevocationStatus {
        RevocationStatus(.revoked(entry), source: .text(issuer), method: .crl, thisUpdate: nil, nextUpdate: nil)
    }

    /// The certificate is not revoked, according to `source` (a list's issuer or an OCSP responder), by `method`,
    /// with information current from `thisUpdate` until `nextUpdate`.
    public static func good(
        source: String,
        method: Method,
        thisUpdate: Date?,
        nextUpdate: Date?
    ) -> RevocationStatus {
        RevocationStatus(.good, source: .text(source), method: method, thisUpdate: thisUpdate, nextUpdate: nextUpdate)
    }

    /// The certificate is revoked, as `entry` records, according to `source` (a list's issuer or an OCSP
    /// responder), by `method`, with information current from `thisUpdate` until `nextUpdate`.
    public static func revoked(
        _ entry: CertificateRevocationList.Entry,
        source: String,
        method: Method,
        thisUpdate: Date?,
        nextUpdate: Date?
    ) -> RevocationStatus {
        RevocationStatus(
            .revoked(entry),
            source: .text(source),
            method: method,
            thisUpdate: thisUpdate,
            nextUpdate: nextUpdate
        )
    }

    /// The answer of a revocation list issued by `issuer`: good, or revoked as `entry` records.
    static func listAnswer(
        _ entry: CertificateRevocationList.Entry?,
        issuer: DistinguishedName,
        thisUpdate: Date,
        nextUpdate: Date
    ) -> RevocationStatus {
        RevocationStatus(
            entry.map(Backing.revoked) ?? .good,
            source: .name(issuer),
            method: .crl,
            thisUpdate: thisUpdate,
            nextUpdate: nextUpdate
        )
    }

    /// Whether the certificate is revoked.
    public var isRevoked: Bool { self.revocation != nil }

    /// The revocation, when the certificate is revoked.
    public var revocation: CertificateRevocationList.Entry? {
        if case .revoked(let entry) = self.backing { return entry }
        return nil
    }

    /// `good` or `revoked`.
    public var code: String { self.isRevoked ? "revoked" : "good" }

    /// `not revoked (according to SOURCE)`, or `revoked on DATE by SOURCE` with the reason when one was given.
    public var description: String {
        let by = self.method == .ocsp ? ", by OCSP" : ""
        guard let entry = self.revocation else { return "not revoked (according to \(self.source)\(by))" }
        let reason = entry.reason.map { ", reason: \($0)" } ?? ""
        return "revoked on \(entry.revocationDate.formatted(.iso8601)) by \(self.source)\(reason)\(by)"
    }
}
