import Foundation

/// What a revocation source said about one certificate.
public struct RevocationStatus: Hashable, Sendable, CustomStringConvertible {
    private enum Backing: Hashable, Sendable {
        case good
        case revoked(CertificateRevocationList.Entry)
    }

    private let backing: Backing

    /// Who said it: the revocation list's issuer (or, later, the OCSP responder).
    public let source: String

    private init(_ backing: Backing, source: String) {
        self.backing = backing
        self.source = source
    }

    /// The certificate is not revoked.
    public static func good(issuer: String) -> RevocationStatus {
        RevocationStatus(.good, source: issuer)
    }

    /// The certificate is revoked, as `entry` records.
    public static func revoked(_ entry: CertificateRevocationList.Entry, issuer: String) -> RevocationStatus {
        RevocationStatus(.revoked(entry), source: issuer)
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

    public var description: String {
        guard let entry = self.revocation else { return "not revoked (according to \(self.source))" }
        let reason = entry.reason.map { ", reason: \($0)" } ?? ""
        return "revoked on \(entry.revocationDate.formatted(.iso8601)) by \(self.source)\(reason)"
    }
}
