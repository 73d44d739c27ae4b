import Crypto
import SwiftASN1
import X509

/// Identifies a certificate to an OCSP responder (RFC 6960 `CertID`): SHA-1 hashes of the issuer's name and key
/// (the profile of RFC 5019, which every responder understands) and the certificate's serial number.
public struct OCSPCertificateID: Hashable, Sendable {
    /// The hash algorithm of the two hashes (SHA-1 for the identifiers Bulwark makes); parameters are not kept, so
    /// SHA-1 with NULL parameters and SHA-1 without parameters compare equal.
    let hashAlgorithm: ASN1ObjectIdentifier
    /// The hash of the DER encoding of the issuer's name.
    public let issuerNameHash: [UInt8]
    /// The hash of the issuer's public key (the contents of its `subjectPublicKey` BIT STRING).
    public let issuerKeyHash: [UInt8]
    /// The certificate's serial number.
    public let serialNumber: Certificate.SerialNumber

    /// The identifier of `certificate`, issued by `issuer`.
    ///
    /// - Throws: ``RevocationError`` `issuer_mismatch` when `issuer` is not the certificate's issuer (by name).
    public init(certificate: Certificate, issuer: Certificate) throws(RevocationError) {
        guard certificate.issuer == issuer.subject else {
            throw .issuerMismatch(
                certificateIssuer: String(describing: certificate.issuer),
                issuer: String(describing: issuer.subject)
            )
        }
        var name = DER.Serializer()
        do {
            try name.serialize(issuer.subject)
        } catch {
            throw .malformed("issuer's name", detail: "it cannot be encoded")
        }
        self.hashAlgorithm = Self.sha1
        self.issuerNameHash = Array(Insecure.SHA1.hash(data: name.serializedBytes))
        self.issuerKeyHash = Self.keyHash(of: issuer)
        self.serialNumber = certificate.serialNumber
    }

    init(
        hashAlgorithm: ASN1ObjectIdentifier,
        issuerNameHash: [UInt8],
        issuerKeyHash: [UInt8],
        serialNumber: Certificate.SerialNumber
    ) {
        self.hashAlgorithm = hashAlgorithm
        self.issuerNameHash = issuerNameHash
        self.issuerKeyHash = issuerKeyHash
        self.serialNumber = serialNumber
    }

    /// id-sha1 (1.3.14.3.2.26).
    static let sha1: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]

    /// The SHA-1 hash of a certificate's public key: of the contents of its `subjectPublicKey` BIT STRING, without
    /// tag, length and unused-bits byte (RFC 6960, `KeyHash` and `issuerKeyHash`).
    static func keyHash(of certificate: Certificate) -> [UInt8] {
        Array(Insecure.SHA1.hash(data: certificate.publicKey.subjectPublicKeyInfoBytes))
    }
}

// MARK: - DER

extension OCSPCertificateID {
    /// Reads a `CertID`. The hash algorithm's parameters must be absent or NULL.
    init(derEncoded nodes: inout ASN1NodeCollection.Iterator) throws {
        guard let node = nodes.next() else {
            throw RevocationError.malformed("OCSP response", detail: "a certificate identifier is missing")
        }
        self = try DER.sequence(node, identifier: .sequence) { nodes in
            let algorithm = try AlgorithmIdentifierReader(derEncoded: &nodes)
            guard algorithm.parameters == nil || algorithm.parameters == [0x05, 0x00] else {
                throw RevocationError.malformed(
                    "OCSP response",
                    detail: "a certificate identifier's hash algorithm has parameters"
                )
            }
            let nameHash = try ASN1OctetString(derEncoded: &nodes)
            let keyHash = try ASN1OctetString(derEncoded: &nodes)
            let serial = try ArraySlice<UInt8>(derEncoded: &nodes)
            return OCSPCertificateID(
                hashAlgorithm: algorithm.oid,
                issuerNameHash: Array(nameHash.bytes),
                issuerKeyHash: Array(keyHash.bytes),
                serialNumber: Certificate.SerialNumber(bytes: serial)
            )
        }
    }

    /// Writes the `CertID`, with the hash algorithm's parameters NULL (as OpenSSL and RFC 5019 responders expect).
    func serialize(into coder: inout DER.Serializer) throws {
        try coder.appendConstructedNode(identifier: .sequence) { coder in
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.serialize(self.hashAlgorithm)
                try coder.serialize(ASN1Null())
            }
            try coder.serialize(ASN1OctetString(contentBytes: ArraySlice(self.issuerNameHash)))
            try coder.serialize(ASN1OctetString(contentBytes: ArraySlice(self.issuerKeyHash)))
            try coder.serialize(self.serialNumber.bytes)
        }
    }
}
