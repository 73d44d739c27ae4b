import Foundation
import SwiftASN1
import X509

/// One answer of an OCSP response (RFC 6960 `SingleResponse`): the status of one certificate and the time span for
/// which it holds.
public struct OCSPSingleResponse: Hashable, Sendable {
    /// What the responder says about the certificate: `good`, `revoked` (when and why) or `unknown`.
    public struct CertificateStatus: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: Hashable, Sendable {
            case good
            case revoked(time: Date, reason: RevocationReason?)
            case unknown
        }

        private let backing: Backing

        private init(_ backing: Backing) { self.backing = backing }

        /// The certificate is not revoked.
        public static let good = CertificateStatus(.good)
        /// The responder does not know the certificate.
        public static let unknown = CertificateStatus(.unknown)

        /// The certificate was revoked at `time`, for `reason` when the responder says.
        public static func revoked(at time: Date, reason: RevocationReason?) -> CertificateStatus {
            CertificateStatus(.revoked(time: time, reason: reason))
        }

        /// `good`, `revoked` or `unknown`.
        public var code: String {
            switch self.backing {
            case .good: return "good"
            case .revoked: return "revoked"
            case .unknown: return "unknown"
            }
        }

        /// When the certificate was revoked, if it was.
        public var revocationTime: Date? {
            if case .revoked(let time, _) = self.backing { return time }
            return nil
        }

        /// Why the certificate was revoked, if it was and the responder says.
        public var reason: RevocationReason? {
            if case .revoked(_, let reason) = self.backing { return reason }
            return nil
        }

        /// `good`, `revoked` with its time and reason, or `unknown`.
        public var description: String {
            switch self.backing {
            case .good: return "good"
            case .unknown: return "unknown"
            case .revoked(let time, let reason):
                return "revoked on \(time.formatted(.iso8601))" + (reason.map { " (\($0))" } ?? "")
            }
        }
    }

    /// The certificate the answer is about.
    public let certificateID: OCSPCertificateID
    /// Its status.
    public let certificateStatus: CertificateStatus
    /// When the status was known to be correct.
    public let thisUpdate: Date
    /// When newer information will be available; nil when the responder does not say.
    public let nextUpdate: Date?
}

// MARK: - DER

extension OCSPSingleResponse {
    /// Object identifiers of the single-response extensions Bulwark recognizes (and ignores).
    private static let known: Set<ASN1ObjectIdentifier> = [
        [1, 3, 6, 1, 5, 5, 7, 48, 1, 3],  // id-pkix-ocsp-crl (CRL references)
        [1, 3, 6, 1, 5, 5, 7, 48, 1, 6],  // id-pkix-ocsp-archive-cutoff
        [2, 5, 29, 21],  // reason code
        [2, 5, 29, 24],  // invalidity date
    ]

    /// Reads a `SingleResponse`; an unknown critical extension throws.
    init(derEncoded node: ASN1Node) throws {
        self = try DER.sequence(node, identifier: .sequence) { nodes in
            let identifier = try OCSPCertificateID(derEncoded: &nodes)
            guard let statusNode = nodes.next() else {
                throw RevocationError.malformed("OCSP response", detail: "a certificate status is missing")
            }
            let status = try Self.readStatus(statusNode)
            let thisUpdate = CertificateRevocationList.date(try GeneralizedTime(derEncoded: &nodes))
            let nextUpdate = try DER.optionalExplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) {
                CertificateRevocationList.date(try GeneralizedTime(derEncoded: $0))
            }
            let extensions =
                try DER.optionalExplicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) { node in
                    try DER.sequence(of: Certificate.Extension.self, identifier: .sequence, rootNode: node)
                } ?? []
            guard nodes.next() == nil else {
                throw RevocationError.malformed("OCSP response", detail: "unexpected data after a single response")
            }
            try OCSPResponse.checkExtensions(extensions, known: Self.known, what: "OCSP single response")
            return OCSPSingleResponse(
                certificateID: identifier,
                certificateStatus: status,
                thisUpdate: thisUpdate,
                nextUpdate: nextUpdate
            )
        }
    }

    /// `CertStatus ::= CHOICE { good [0] IMPLICIT NULL, revoked [1] IMPLICIT RevokedInfo, unknown [2] IMPLICIT
    /// NULL }`, `RevokedInfo ::= SEQUENCE { revocationTime GeneralizedTime, revocationReason [0] EXPLICIT
    /// CRLReason OPTIONAL }`.
    private static func readStatus(_ node: ASN1Node) throws -> CertificateStatus {
        let good = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
        let revoked = ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)
        let unknown = ASN1Identifier(tagWithNumber: 2, tagClass: .contextSpecific)
        switch node.identifier {
        case good:
            _ = try ASN1Null(derEncoded: node, withIdentifier: good)
            return .good
        case unknown:
            _ = try ASN1Null(derEncoded: node, withIdentifier: unknown)
            return .unknown
        case revoked:
            return try DER.sequence(node, identifier: revoked) { nodes in
                let time = CertificateRevocationList.date(try GeneralizedTime(derEncoded: &nodes))
                let reason = try DER.optionalExplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) {
                    try Self.readReason($0)
                }
                guard nodes.next() == nil else {
                    throw RevocationError.malformed("OCSP response", detail: "unexpected data after a revocation")
                }
                return .revoked(at: time, reason: reason)
            }
        default:
            throw RevocationError.malformed(
                "OCSP response",
                detail: "a certificate status is not good, revoked or unknown"
            )
        }
    }

    private static func readReason(_ node: ASN1Node) throws -> RevocationReason {
        guard node.identifier == .enumerated, case .primitive(let content) = node.content, content.count == 1,
            let reason = RevocationReason(rawValue: Int(content[content.startIndex]))
        else {
            throw RevocationError.malformed("OCSP response", detail: "a revocation reason is not a known value")
        }
        return reason
    }
}
