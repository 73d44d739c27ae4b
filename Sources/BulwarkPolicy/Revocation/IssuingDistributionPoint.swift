import SwiftASN1
import X509

/// The issuing-distribution-point extension of a revocation list (RFC 5280, section 5.2.5): which certificates the
/// list covers. Indirect lists and lists that cover only some reasons are refused when parsed.
struct IssuingDistributionPoint: Hashable, Sendable {
    /// The list's distribution-point URIs, when it names them.
    var uris: [String] = []
    /// Whether it names its distribution point in a form other than URIs.
    var namesOtherThanURIs = false
    var onlyUserCertificates = false
    var onlyCACertificates = false
    var onlyAttributeCertificates = false

    /// A list without the extension: it covers every certificate of its issuer.
    static let everything = IssuingDistributionPoint()

    init() {}

    init(derEncoded bytes: [UInt8]) throws {
        let root = try DER.parse(bytes)
        try DER.sequence(root, identifier: .sequence) { nodes in
            while let node = nodes.next() {
                guard node.identifier.tagClass == .contextSpecific else {
                    throw RevocationError.malformed("revocation list", detail: "the distribution point has a bad field")
                }
                switch node.identifier.tagNumber {
                case 0:
                    try DER.explicitlyTagged(node, tagNumber: 0, tagClass: .contextSpecific) { name in
                        try self.readName(name)
                    }
                case 1: self.onlyUserCertificates = try Self.flag(node, tag: 1)
                case 2: self.onlyCACertificates = try Self.flag(node, tag: 2)
                case 3:
                    throw RevocationError.unsupported("revocation list", feature: "limited to some revocation reasons")
                case 4:
                    if try Self.flag(node, tag: 4) {
                        throw RevocationError.unsupported("revocation list", feature: "an indirect CRL")
                    }
                case 5: self.onlyAttributeCertificates = try Self.flag(node, tag: 5)
                default:
                    throw RevocationError.malformed("revocation list", detail: "the distribution point has a bad field")
                }
            }
        }
        let limits = [self.onlyUserCertificates, self.onlyCACertificates, self.onlyAttributeCertificates]
        guard limits.filter({ $0 }).count <= 1 else {
            throw RevocationError.malformed("revocation list", detail: "the distribution point sets two 'only' limits")
        }
    }

    private mutating func readName(_ name: ASN1Node) throws {
        // DistributionPointName: fullName [0] GeneralNames, or nameRelativeToCRLIssuer [1].
        guard name.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) else {
            self.namesOtherThanURIs = true
            return
        }
        guard case .constructed(let names) = name.content else {
            throw RevocationError.malformed("revocation list", detail: "the distribution point name is not a list")
        }
        for node in names {
            if case .uniformResourceIdentifier(let uri) = try GeneralName(derEncoded: node) {
                self.uris.append(uri)
            } else {
                self.namesOtherThanURIs = true
            }
        }
    }

    private static func flag(_ node: ASN1Node, tag: UInt) throws -> Bool {
        let value = try Bool(
            derEncoded: node,
            withIdentifier: ASN1Identifier(tagWithNumber: tag, tagClass: .contextSpecific)
        )
        // DER: a DEFAULT FALSE field is left out rather than encoded as FALSE.
        guard value else {
            throw RevocationError.malformed("revocation list", detail: "a default value is encoded")
        }
        return value
    }
}

/// The URIs of a certificate's CRL distribution points (RFC 5280, section 4.2.1.13).
enum CRLDistributionPoints {
    static let oid: ASN1ObjectIdentifier = [2, 5, 29, 31]

    /// The full-name URIs of every distribution point of `certificate` that covers every reason, in order; empty
    /// without the extension. A point limited to some reasons (its `reasons` field) or served by another issuer (its
    /// `cRLIssuer` field) is left out: its list cannot say that the certificate is not revoked for any reason.
    static func uris(of certificate: Certificate) throws -> [String] {
        guard let item = certificate.extensions[oid: Self.oid] else { return [] }
        let root = try DER.parse(item.value)
        var uris: [String] = []
        try DER.sequence(root, identifier: .sequence) { points in
            while let point = points.next() {
                try DER.sequence(point, identifier: .sequence) { fields in
                    var found: [String] = []
                    var complete = true
                    while let field = fields.next() {
                        if field.identifier.tagClass == .contextSpecific, field.identifier.tagNumber != 0 {
                            complete = false
                        }
                        guard field.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific),
                            case .constructed(let inner) = field.content
                        else { continue }
                        for name in inner
                        where name.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
                            guard case .constructed(let generalNames) = name.content else { continue }
                            for node in generalNames {
                                if case .uniformResourceIdentifier(let uri) = try GeneralName(derEncoded: node) {
                                    found.append(uri)
                                }
                            }
                        }
                    }
                    if complete { uris += found }
                }
            }
        }
        return uris
    }
}
