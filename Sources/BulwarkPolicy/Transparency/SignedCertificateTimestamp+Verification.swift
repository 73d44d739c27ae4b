import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

extension SignedCertificateTimestamp {
    /// What checking one SCT found.
    public enum Verdict: Hashable, Sendable {
        /// The log's key verified the signature.
        case verified
        /// No log of the list has this log ID.
        case unknownLog
        /// The log is known and its key did not verify the signature (or it uses an algorithm logs do not use).
        case badSignature
        /// Not v1: its layout is unknown.
        case unknownVersion
    }

    /// Checks the signature with the key of `log` (a DER SubjectPublicKeyInfo, P-256 ECDSA or RSA), over the
    /// precertificate entry rebuilt from `certificate` (the SCT list removed from its TBSCertificate) and the SHA-256
    /// of `issuer`'s key.
    func isSigned(
        forTBSCertificate tbs: [UInt8],
        issuerKeyHash: [UInt8],
        logKey: [UInt8]
    ) -> Bool {
        // The log ID is not signed: the key must be the one it names, whatever the caller looked up.
        guard self.version == 0, self.hashAlgorithm == 4, Array(SHA256.hash(data: logKey)) == self.logID else {
            return false
        }
        let data = self.signedData(tbsCertificate: tbs, issuerKeyHash: issuerKeyHash)
        switch self.signatureAlgorithm {
        case 3:
            guard let key = try? P256.Signing.PublicKey(derRepresentation: logKey),
                let signature = try? P256.Signing.ECDSASignature(derRepresentation: self.signature)
            else { return false }
            return key.isValidSignature(signature, for: SHA256.hash(data: data))
        case 1:
            guard let key = try? _RSA.Signing.PublicKey(derRepresentation: logKey), key.keySizeInBits >= 2048 else {
                return false
            }
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: self.signature),
                for: SHA256.hash(data: data),
                padding: .insecurePKCS1v1_5
            )
        default:
            return false
        }
    }

    /// The TBSCertificate of `certificate` without its SCT list extension: what the log signed, as the
    /// precertificate's TBSCertificate without its poison extension (RFC 6962 3.2).
    ///
    /// - Throws: ``CertificateTransparencyError`` when the TBSCertificate cannot be taken apart.
    public static func precertificateTBS(of certificate: Certificate) throws(CertificateTransparencyError) -> [UInt8] {
        do {
            let tbs = try DER.parse(certificate.tbsCertificateBytes)
            guard case .constructed(let fields) = tbs.content else { throw Failure() }
            var body: [UInt8] = []
            let extensionsTag = ASN1Identifier(tagWithNumber: 3, tagClass: .contextSpecific)
            for field in fields {
                guard field.identifier == extensionsTag else {
                    body += field.encodedBytes
                    continue
                }
                guard case .constructed(let wrapped) = field.content,
                    let sequence = wrapped.first(where: { _ in true }),
                    case .constructed(let items) = sequence.content
                else { throw Failure() }
                var kept: [UInt8] = []
                var removed = false
                for item in items {
                    guard case .constructed(let parts) = item.content, let first = parts.first(where: { _ in true })
                    else { throw Failure() }
                    if try ASN1ObjectIdentifier(derEncoded: first) == Self.listExtensionOID {
                        removed = true
                    } else {
                        kept += item.encodedBytes
                    }
                }
                guard removed else { throw Failure() }
                // With the SCT list gone, no extension may be left (the precertificate had only its poison): the
                // field is left out then, as certificate-transparency-go rebuilds it (X.509 allows no empty list).
                guard !kept.isEmpty else { continue }
                let inner = Self.derHeader(0x30, length: kept.count) + kept
                body += Self.derHeader(0xA3, length: inner.count) + inner
            }
            return Self.derHeader(0x30, length: body.count) + body
        } catch {
            throw .malformedList("the certificate's TBSCertificate cannot be rebuilt without its SCT list")
        }
    }

    private struct Failure: Error {}

    static func derHeader(_ identifier: UInt8, length: Int) -> [UInt8] {
        if length < 0x80 { return [identifier, UInt8(length)] }
        var octets: [UInt8] = []
        var rest = length
        while rest > 0 {
            octets.insert(UInt8(truncatingIfNeeded: rest), at: 0)
            rest >>= 8
        }
        return [identifier, 0x80 | UInt8(octets.count)] + octets
    }
}
