import BulwarkPolicy
import Crypto
import Foundation
import SwiftASN1
import X509

/// Issues certificates in process: roots, intermediates and leaves, each with the knobs needed to produce the
/// broken certificates that trust evaluation must refuse.
public enum CertificateFactory {
    /// Validity relative to a reference time.
    public enum Validity: Sendable, Hashable {
        /// From one hour before `now` to 30 days after.
        case current
        /// Ended one day before `now`.
        case expired
        /// Starts one day after `now`.
        case notYetValid
        /// Exact bounds.
        case between(Date, Date)

        func bounds(now: Date) -> (Date, Date) {
            switch self {
            case .current: return (now - 3600, now + 30 * 86_400)
            case .expired: return (now - 30 * 86_400, now - 86_400)
            case .notYetValid: return (now + 86_400, now + 30 * 86_400)
            case .between(let start, let end): return (start, end)
            }
        }
    }

    /// A self-signed CA certificate. `extendedKeyUsage` adds that extension, which publicly-trusted roots must
    /// not carry but some private and interception CAs (mitmproxy's) do.
    public static func makeRoot(
        commonName: String = "Bulwark Test Root CA",
        key: TestKeyAlgorithm = .p256,
        validity: Validity = .current,
        extendedKeyUsage: [ExtendedKeyUsage.Usage] = [],
        now: Date = Date()
    ) throws -> TestIdentity {
        let privateKey = try key.makePrivateKey()
        let name = try DistinguishedName {
            CommonName(commonName)
            OrganizationName("Bulwark Tests")
        }
        let (notBefore, notAfter) = validity.bounds(now: now)
        let skid = SubjectKeyIdentifier(hash: privateKey.publicKey)
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            skid
            if !extendedKeyUsage.isEmpty {
                try ExtendedKeyUsage(extendedKeyUsage)
            }
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Self.makeSerialNumber(),
            publicKey: privateKey.publicKey,
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: name,
            subject: name,
            signatureAlgorithm: Self.signatureAlgorithm(for: privateKey),
            extensions: extensions,
            issuerPrivateKey: privateKey
        )
        return TestIdentity(certificate: certificate, privateKey: privateKey)
    }

    /// A CA certificate signed by `issuer`. With `isCA: false` it claims `CA:false` (a broken intermediate).
    public static func issueIntermediate(
        from issuer: TestIdentity,
        commonName: String = "Bulwark Test Intermediate CA",
        key: TestKeyAlgorithm = .p256,
        isCA: Bool = true,
        validity: Validity = .current,
        now: Date = Date()
    ) throws -> TestIdentity {
        let privateKey = try key.makePrivateKey()
        let (notBefore, notAfter) = validity.bounds(now: now)
        let extensions = try Certificate.Extensions {
            if isCA {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            } else {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
            }
            SubjectKeyIdentifier(hash: privateKey.publicKey)
            try Self.authorityKeyIdentifier(of: issuer.certificate)
        }
        return try Self.sign(
            subject: try DistinguishedName {
                CommonName(commonName)
                OrganizationName("Bulwark Tests")
            },
            publicKey: privateKey.publicKey,
            privateKey: privateKey,
            notBefore: notBefore,
            notAfter: notAfter,
            extensions: extensions,
            issuer: issuer
        )
    }

    /// A server certificate signed by `issuer`, or self-signed when `issuer` is nil.
    ///
    /// - Parameters:
    ///   - dnsNames: DNS subject alternative names (wildcards such as `*.example.com` allowed).
    ///   - ipAddresses: IP subject alternative names, as text (`127.0.0.1`, `::1`).
    ///   - extendedKeyUsage: `[.serverAuth]` by default; `[.clientAuth]` makes a wrong-EKU leaf; empty omits the
    ///     extension.
    public static func issueLeaf(
        from issuer: TestIdentity?,
        commonName: String = "localhost",
        dnsNames: [String] = ["localhost"],
        ipAddresses: [String] = [],
        extendedKeyUsage: [ExtendedKeyUsage.Usage] = [.serverAuth],
        key: TestKeyAlgorithm = .p256,
        validity: Validity = .current,
        now: Date = Date()
    ) throws -> TestIdentity {
        let privateKey = try key.makePrivateKey()
        let (notBefore, notAfter) = validity.bounds(now: now)
        var names: [GeneralName] = dnsNames.map { .dnsName($0) }
        for address in ipAddresses {
            names.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(try Self.ipBytes(address)))))
        }
        let subject = try DistinguishedName { CommonName(commonName) }
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true, keyEncipherment: true))
            if !extendedKeyUsage.isEmpty {
                try ExtendedKeyUsage(extendedKeyUsage)
            }
            if !names.isEmpty {
                SubjectAlternativeNames(names)
            }
            SubjectKeyIdentifier(hash: privateKey.publicKey)
            if let issuer {
                try Self.authorityKeyIdentifier(of: issuer.certificate)
            } else {
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: privateKey.publicKey).keyIdentifier)
            }
        }
        return try Self.sign(
            subject: subject,
            publicKey: privateKey.publicKey,
            privateKey: privateKey,
            notBefore: notBefore,
            notAfter: notAfter,
            extensions: extensions,
            issuer: issuer
        )
    }

    static func sign(
        subject: DistinguishedName,
        publicKey: Certificate.PublicKey,
        privateKey: Certificate.PrivateKey,
        notBefore: Date,
        notAfter: Date,
        extensions: Certificate.Extensions,
        issuer: TestIdentity?
    ) throws -> TestIdentity {
        let signer = issuer?.privateKey ?? privateKey
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Self.makeSerialNumber(),
            publicKey: publicKey,
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: issuer?.certificate.subject ?? subject,
            subject: subject,
            signatureAlgorithm: Self.signatureAlgorithm(for: signer),
            extensions: extensions,
            issuerPrivateKey: signer
        )
        return TestIdentity(certificate: certificate, privateKey: privateKey)
    }

    /// A random positive serial number of 16 bytes. (`Certificate.SerialNumber()` may set the top bit, which
    /// makes the DER INTEGER negative: RFC 5280 forbids that and Bulwark refuses such certificates.)
    public static func makeSerialNumber() -> Certificate.SerialNumber {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
        bytes[0] = (bytes[0] & 0x7F) | 0x01
        return Certificate.SerialNumber(bytes: bytes)
    }

    static func authorityKeyIdentifier(of issuer: Certificate) throws -> AuthorityKeyIdentifier {
        let keyID =
            try issuer.extensions.subjectKeyIdentifier?.keyIdentifier
            ?? SubjectKeyIdentifier(hash: issuer.publicKey).keyIdentifier
        return AuthorityKeyIdentifier(keyIdentifier: keyID)
    }

    static func signatureAlgorithm(for key: Certificate.PrivateKey) -> Certificate.SignatureAlgorithm {
        let supported = key.supportedSignatureAlgorithms
        for preferred in [Certificate.SignatureAlgorithm.ecdsaWithSHA384, .ecdsaWithSHA256, .sha256WithRSAEncryption]
        where supported.contains(preferred) {
            return preferred
        }
        return supported[0]
    }

    static func ipBytes(_ text: String) throws -> [UInt8] {
        if let address = IPAddress(text) { return address.bytes }
        throw CertificateFactoryError(message: "\"\(text)\" is not an IP address")
    }
}

/// A request the certificate factory cannot carry out.
public struct CertificateFactoryError: Error, CustomStringConvertible {
    /// What cannot be done.
    public let message: String
    /// The ``message``.
    public var description: String { self.message }
}
