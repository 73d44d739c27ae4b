import Crypto
import Foundation
import SwiftASN1
import X509

/// Builds DER OCSP responses (RFC 6960) for tests, including ones no responder should send (wrong nonces, unknown
/// critical extensions, missing `nextUpdate`, SHA-1 signature identifiers), signed with a P-256 key.
///
/// The certificate identifiers are computed here, independently of Bulwark's `OCSPCertificateID`: SHA-1 of the
/// DER of the issuer's name and of the contents of its `subjectPublicKey` BIT STRING.
public struct OCSPResponseBuilder: Sendable {
    /// How the response names its signer.
    public enum ResponderID: Sendable {
        /// `byName`: a subject name.
        case byName(DistinguishedName)
        /// `byKey`: the SHA-1 hash of a public key.
        case byKey([UInt8])

        /// Names `certificate` by its subject.
        public static func name(of certificate: Certificate) -> ResponderID { .byName(certificate.subject) }

        /// Names `certificate` by the SHA-1 hash of its public key.
        public static func key(of certificate: Certificate) -> ResponderID {
            .byKey(OCSPResponseBuilder.keyHash(of: certificate))
        }
    }

    /// The status of one certificate.
    public enum CertificateStatus: Sendable {
        /// Not revoked.
        case good
        /// Revoked at the date, with the RFC 5280 reason code when not nil.
        case revoked(Date, reason: Int?)
        /// The responder does not know the certificate.
        case unknown
    }

    /// One answer (`SingleResponse`).
    public struct Single: Sendable {
        /// The hash of the issuer's DER name.
        public var issuerNameHash: [UInt8]
        /// The hash of the issuer's public key bits.
        public var issuerKeyHash: [UInt8]
        /// The certificate's serial number.
        public var serialNumber: Certificate.SerialNumber
        /// The hash algorithm of the identifier (SHA-1 by default).
        public var hashAlgorithm: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
        /// The certificate's status.
        public var status: CertificateStatus
        /// When the status was known to be correct.
        public var thisUpdate: Date
        /// When newer information is due; nil leaves the field out.
        public var nextUpdate: Date?
        /// The single response's extensions, as given.
        public var extensions: [Certificate.Extension] = []

        /// An answer about `certificate`, issued by `issuer`.
        public init(
            certificate: Certificate,
            issuer: Certificate,
            status: CertificateStatus,
            thisUpdate: Date,
            nextUpdate: Date?
        ) throws {
            self.issuerNameHash = try OCSPResponseBuilder.nameHash(of: issuer)
            self.issuerKeyHash = OCSPResponseBuilder.keyHash(of: issuer)
            self.serialNumber = certificate.serialNumber
            self.status = status
            self.thisUpdate = thisUpdate
            self.nextUpdate = nextUpdate
        }
    }

    /// The response status: 0 successful, 1 malformedRequest, 2 internalError, 3 tryLater, 5 sigRequired,
    /// 6 unauthorized. Any but 0 makes a response without a body.
    public var responseStatus: Int = 0
    /// The response type (id-pkix-ocsp-basic by default).
    public var responseType: ASN1ObjectIdentifier = [1, 3, 6, 1, 5, 5, 7, 48, 1, 1]
    /// How the response names its signer.
    public var responderID: ResponderID
    /// When the response was signed.
    public var producedAt: Date
    /// The answers, one per certificate.
    public var responses: [Single]
    /// The nonce to echo (in a nonce extension), or nil for none.
    public var nonce: [UInt8]?
    /// More response extensions, as given.
    public var extensions: [Certificate.Extension] = []
    /// The certificates sent along (a delegated responder's).
    public var certificates: [Certificate] = []
    /// The signature algorithm's object identifier (ecdsa-with-SHA256 by default); the signature is always made
    /// with SHA-256 and P-256, so another identifier makes a response that does not verify or is refused.
    public var algorithm: ASN1ObjectIdentifier = [1, 2, 840, 10045, 4, 3, 2]

    /// A successful response from `responder` with the given answers, produced at `producedAt`.
    public init(responder: ResponderID, producedAt: Date, responses: [Single]) {
        self.responderID = responder
        self.producedAt = producedAt
        self.responses = responses
    }

    /// The DER bytes of the response, signed with `key`.
    public func der(signedWith key: P256.Signing.PrivateKey) throws -> [UInt8] {
        var coder = DER.Serializer()
        try coder.appendConstructedNode(identifier: .sequence) { coder in
            try self.responseStatus.serialize(into: &coder, withIdentifier: .enumerated)
            guard self.responseStatus == 0 else { return }
            let basic = try self.basicResponse(signedWith: key)
            try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    try coder.serialize(self.responseType)
                    try coder.serialize(ASN1OctetString(contentBytes: ArraySlice(basic)))
                }
            }
        }
        return coder.serializedBytes
    }

    /// A response that is only a status (no body): `malformedRequest` (1), `internalError` (2), `tryLater` (3),
    /// `sigRequired` (5), `unauthorized` (6).
    public static func failure(_ status: Int) -> [UInt8] {
        [0x30, 0x03, 0x0A, 0x01, UInt8(status)]
    }

    private func basicResponse(signedWith key: P256.Signing.PrivateKey) throws -> [UInt8] {
        var data = DER.Serializer()
        try data.appendConstructedNode(identifier: .sequence) { coder in
            switch self.responderID {
            case .byName(let name):
                try coder.serialize(explicitlyTaggedWithTagNumber: 1, tagClass: .contextSpecific) { coder in
                    try coder.serialize(name)
                }
            case .byKey(let hash):
                try coder.serialize(explicitlyTaggedWithTagNumber: 2, tagClass: .contextSpecific) { coder in
                    try coder.serialize(ASN1OctetString(contentBytes: ArraySlice(hash)))
                }
            }
            try coder.serialize(Self.generalizedTime(self.producedAt))
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                for single in self.responses { try Self.serialize(single, into: &coder) }
            }
            var extensions = self.extensions
            if let nonce = self.nonce {
                var value = DER.Serializer()
                try value.serialize(ASN1OctetString(contentBytes: ArraySlice(nonce)))
                extensions.insert(
                    Certificate.Extension(
                        oid: [1, 3, 6, 1, 5, 5, 7, 48, 1, 2],
                        critical: false,
                        value: ArraySlice(value.serializedBytes)
                    ),
                    at: 0
                )
            }
            if !extensions.isEmpty {
                try coder.serialize(explicitlyTaggedWithTagNumber: 1, tagClass: .contextSpecific) { coder in
                    try coder.appendConstructedNode(identifier: .sequence) { coder in
                        for item in extensions { try coder.serialize(item) }
                    }
                }
            }
        }
        let signed = data.serializedBytes
        let signature = try key.signature(for: signed).derRepresentation
        var basic = DER.Serializer()
        try basic.appendConstructedNode(identifier: .sequence) { coder in
            coder.serializeRawBytes(signed)
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.serialize(self.algorithm)
            }
            try coder.serialize(ASN1BitString(bytes: ArraySlice(signature)))
            if !self.certificates.isEmpty {
                try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                    try coder.appendConstructedNode(identifier: .sequence) { coder in
                        for certificate in self.certificates { try coder.serialize(certificate) }
                    }
                }
            }
        }
        return basic.serializedBytes
    }

    private static func serialize(_ single: Single, into coder: inout DER.Serializer) throws {
        try coder.appendConstructedNode(identifier: .sequence) { coder in
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    try coder.serialize(single.hashAlgorithm)
                    try coder.serialize(ASN1Null())
                }
                try coder.serialize(ASN1OctetString(contentBytes: ArraySlice(single.issuerNameHash)))
                try coder.serialize(ASN1OctetString(contentBytes: ArraySlice(single.issuerKeyHash)))
                try coder.serialize(single.serialNumber.bytes)
            }
            switch single.status {
            case .good:
                try ASN1Null().serialize(
                    into: &coder,
                    withIdentifier: .init(tagWithNumber: 0, tagClass: .contextSpecific)
                )
            case .unknown:
                try ASN1Null().serialize(
                    into: &coder,
                    withIdentifier: .init(tagWithNumber: 2, tagClass: .contextSpecific)
                )
            case .revoked(let time, let reason):
                try coder.appendConstructedNode(identifier: .init(tagWithNumber: 1, tagClass: .contextSpecific)) {
                    coder in
                    try coder.serialize(Self.generalizedTime(time))
                    if let reason {
                        try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                            try reason.serialize(into: &coder, withIdentifier: .enumerated)
                        }
                    }
                }
            }
            try coder.serialize(Self.generalizedTime(single.thisUpdate))
            if let nextUpdate = single.nextUpdate {
                try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                    try coder.serialize(Self.generalizedTime(nextUpdate))
                }
            }
            if !single.extensions.isEmpty {
                try coder.serialize(explicitlyTaggedWithTagNumber: 1, tagClass: .contextSpecific) { coder in
                    try coder.appendConstructedNode(identifier: .sequence) { coder in
                        for item in single.extensions { try coder.serialize(item) }
                    }
                }
            }
        }
    }

    /// A delegated OCSP responder's certificate for `key`, issued by `issuer` (signed with `issuerKey`), with the
    /// extended key usage OCSPSigning unless `ocspSigning` is false.
    public static func responderCertificate(
        name: String = "Bulwark OCSP Responder",
        key: P256.Signing.PrivateKey,
        issuer: Certificate,
        issuerKey: P256.Signing.PrivateKey,
        ocspSigning: Bool = true,
        notValidBefore: Date,
        notValidAfter: Date
    ) throws -> Certificate {
        var extensions = Certificate.Extensions()
        try extensions.append(Certificate.Extension(BasicConstraints.notCertificateAuthority, critical: true))
        let usage = try ExtendedKeyUsage(ocspSigning ? [.ocspSigning] : [.serverAuth])
        try extensions.append(Certificate.Extension(usage, critical: false))
        return try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: notValidBefore,
            notValidAfter: notValidAfter,
            issuer: issuer.subject,
            subject: try DistinguishedName { CommonName(name) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: .init(issuerKey)
        )
    }

    /// SHA-1 of the DER encoding of `certificate`'s subject name.
    public static func nameHash(of certificate: Certificate) throws -> [UInt8] {
        var coder = DER.Serializer()
        try coder.serialize(certificate.subject)
        return Array(Insecure.SHA1.hash(data: coder.serializedBytes))
    }

    /// SHA-1 of the contents of `certificate`'s `subjectPublicKey` BIT STRING, read here from the certificate's own
    /// DER encoding.
    public static func keyHash(of certificate: Certificate) -> [UInt8] {
        var coder = DER.Serializer()
        guard (try? coder.serialize(certificate)) != nil,
            let bits = try? Self.subjectPublicKeyBits(coder.serializedBytes)
        else { return [] }
        return Array(Insecure.SHA1.hash(data: bits))
    }

    /// Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version, serial, signature, issuer, validity,
    /// subject, subjectPublicKeyInfo SEQUENCE { algorithm, subjectPublicKey BIT STRING }, ... }, ... }.
    private static func subjectPublicKeyBits(_ der: [UInt8]) throws -> [UInt8] {
        let certificate = Self.children(try DER.parse(der))
        var fields = Self.children(certificate[0])
        if fields[0].identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            fields.removeFirst()
        }
        // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo.
        let info = Self.children(fields[5])
        return Array(try ASN1BitString(derEncoded: info[1]).bytes)
    }

    private static func children(_ node: ASN1Node) -> [ASN1Node] {
        guard case .constructed(let nodes) = node.content else { return [] }
        return Array(nodes)
    }

    private static func generalizedTime(_ date: Date) throws -> GeneralizedTime {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return try GeneralizedTime(
            year: parts.year!,
            month: parts.month!,
            day: parts.day!,
            hours: parts.hour!,
            minutes: parts.minute!,
            seconds: parts.second!,
            fractionalSeconds: 0
        )
    }
}
