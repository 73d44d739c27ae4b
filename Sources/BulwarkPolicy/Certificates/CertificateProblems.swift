import SwiftASN1
import X509
import _CryptoExtras

/// What is wrong with one certificate, in words a person can act on: a key that is too weak (type, size and the
/// minimum), a signature algorithm that is not accepted (by name), or bytes that are not a certificate.
///
/// The libraries underneath report these as values of their own error types ("incorrectParameterSize", an
/// unsupported-algorithm error carrying a source line): a refusal built from those tells nobody what to fix. The
/// facts are read from the certificate itself instead, from its DER when it cannot be parsed at all (swift-crypto
/// refuses to decode an RSA key under 2048 bits, and swift-certificates a SHA-1 ECDSA signature).
public enum CertificateProblems {
    /// The smallest RSA modulus accepted, in bits (CA/Browser Forum baseline requirements 6.1.5).
    public static let minimumRSABits = 2048

    /// The reasons `certificate`'s own key or signature is refused, if any. `checkSignature` is false for a
    /// self-issued certificate, whose signature is not part of any verification (a root is trusted by its key).
    public static func problems(of certificate: Certificate, checkSignature: Bool = true) -> [TrustFailureReason] {
        let subject = String(describing: certificate.subject)
        var reasons: [TrustFailureReason] = []
        if let rsa = _RSA.Signing.PublicKey(certificate.publicKey), rsa.keySizeInBits < Self.minimumRSABits {
            reasons.append(
                .weakKey(
                    certificate: subject,
                    keyType: "RSA",
                    bits: rsa.keySizeInBits,
                    minimumBits: Self.minimumRSABits
                )
            )
        }
        if checkSignature, let name = Self.refusedSignatureAlgorithmName(certificate.signatureAlgorithm) {
            reasons.append(.weakSignature(certificate: subject, algorithm: name))
        }
        return reasons
    }

    /// The name of `algorithm` when Bulwark refuses certificates signed with it (SHA-1), or nil.
    static func refusedSignatureAlgorithmName(_ algorithm: Certificate.SignatureAlgorithm) -> String? {
        algorithm == .sha1WithRSAEncryption ? "SHA-1 with RSA" : nil
    }

    /// Why the DER bytes `der` of a certificate the server presented could not be parsed: a weak or unsupported
    /// key, an unsupported signature algorithm, or bytes that are not a certificate. Never empty.
    public static func whyUnparsable(_ der: [UInt8]) -> [TrustFailureReason] {
        guard let fields = Self.fields(of: der) else {
            return [.untrustedChain(details: ["the certificate is not a well-formed X.509 certificate"])]
        }
        let subject = fields.subject.map { String(describing: $0) } ?? "(unreadable subject)"
        var reasons: [TrustFailureReason] = []
        if let key = fields.publicKey {
            if let problem = Self.keyProblem(key, subject: subject) { reasons.append(problem) }
        }
        if let algorithm = fields.signatureAlgorithm, !Self.acceptedSignatureAlgorithms.contains(algorithm) {
            reasons.append(.weakSignature(certificate: subject, algorithm: Self.signatureAlgorithmName(algorithm)))
        }
        if reasons.isEmpty {
            let why = fields.structuralProblem ?? "one of its fields is malformed"
            reasons.append(.untrustedChain(details: ["certificate \(subject) cannot be read: \(why)"]))
        }
        return reasons
    }

    /// ``whyUnparsable(_:)`` as sentences, for errors outside a handshake (a certificate file).
    public static func sentencesWhyUnparsable(_ der: [UInt8]) -> [String] {
        Self.whyUnparsable(der).map { reason in
            if reason.code == "untrusted_chain" { return reason.details.joined(separator: "; ") }
            return reason.description
        }
    }

    /// The signature algorithms swift-certificates verifies and Bulwark accepts.
    static let acceptedSignatureAlgorithms: Set<ASN1ObjectIdentifier> = [
        [1, 2, 840, 10045, 4, 3, 2], [1, 2, 840, 10045, 4, 3, 3], [1, 2, 840, 10045, 4, 3, 4],  // ECDSA SHA-2
        [1, 2, 840, 113549, 1, 1, 11], [1, 2, 840, 113549, 1, 1, 12], [1, 2, 840, 113549, 1, 1, 13],  // RSA SHA-2
        [1, 3, 101, 112],  // Ed25519
    ]

    /// Signature algorithms by name, for the message.
    static func signatureAlgorithmName(_ oid: ASN1ObjectIdentifier) -> String {
        let names: [ASN1ObjectIdentifier: String] = [
            [1, 2, 840, 113549, 1, 1, 2]: "MD2 with RSA",
            [1, 2, 840, 113549, 1, 1, 4]: "MD5 with RSA",
            [1, 2, 840, 113549, 1, 1, 5]: "SHA-1 with RSA",
            [1, 2, 840, 113549, 1, 1, 14]: "SHA-224 with RSA",
            [1, 2, 840, 113549, 1, 1, 10]: "RSASSA-PSS",
            [1, 2, 840, 10045, 4, 1]: "ECDSA with SHA-1",
            [1, 2, 840, 10045, 4, 3, 1]: "ECDSA with SHA-224",
            [1, 2, 840, 10040, 4, 3]: "DSA with SHA-1",
            [2, 16, 840, 1, 101, 3, 4, 3, 2]: "DSA with SHA-256",
            [1, 3, 101, 113]: "Ed448",
        ]
        return names[oid] ?? "the signature algorithm \(oid)"
    }

    /// What is wrong with a public key swift-certificates could not decode, or nil if nothing is found.
    static func keyProblem(
        _ key: (algorithm: ASN1ObjectIdentifier, parameter: ASN1ObjectIdentifier?, bits: [UInt8]),
        subject: String
    ) -> TrustFailureReason? {
        switch key.algorithm {
        case [1, 2, 840, 113549, 1, 1, 1]:  // rsaEncryption
            guard let bits = Self.rsaModulusBits(key.bits) else {
                return .untrustedChain(details: ["certificate \(subject) has an RSA key that cannot be read"])
            }
            if bits < Self.minimumRSABits {
                return .weakKey(certificate: subject, keyType: "RSA", bits: bits, minimumBits: Self.minimumRSABits)
            }
            return nil
        case [1, 2, 840, 10045, 2, 1]:  // id-ecPublicKey
            let curves: [ASN1ObjectIdentifier: String] = [
                [1, 2, 840, 10045, 3, 1, 1]: "P-192",
                [1, 3, 132, 0, 33]: "P-224",
                [1, 3, 132, 0, 10]: "secp256k1",
                [1, 3, 36, 3, 3, 2, 8, 1, 1, 7]: "brainpoolP256r1",
            ]
            let accepted: Set<ASN1ObjectIdentifier> = [
                [1, 2, 840, 10045, 3, 1, 7], [1, 3, 132, 0, 34], [1, 3, 132, 0, 35],  // P-256, P-384, P-521
            ]
            guard let curve = key.parameter else {
                return .untrustedChain(details: [
                    "certificate \(subject) has an elliptic-curve key with explicit curve parameters instead of a "
                        + "named curve, which is not accepted"
                ])
            }
            guard !accepted.contains(curve) else { return nil }
            let name = curves[curve] ?? "the curve \(curve)"
            return .untrustedChain(details: [
                "certificate \(subject) has an elliptic-curve key on \(name), which is not accepted "
                    + "(P-256, P-384 and P-521 are)"
            ])
        case [1, 2, 840, 10040, 4, 1]:  // id-dsa
            return .untrustedChain(details: ["certificate \(subject) has a DSA key, which is not accepted"])
        default:
            return nil
        }
    }

    /// The size in bits of the modulus of an RSAPublicKey (RFC 8017 A.1.1) held in a SubjectPublicKeyInfo's
    /// bit string.
    static func rsaModulusBits(_ bits: [UInt8]) -> Int? {
        guard let node = try? DER.parse(bits), case .constructed(let children) = node.content,
            let modulus = children.first(where: { _ in true }), modulus.identifier == .integer,
            case .primitive(var bytes) = modulus.content
        else { return nil }
        while let first = bytes.first, first == 0 { bytes = bytes.dropFirst() }
        guard let first = bytes.first else { return 0 }
        return bytes.count * 8 - first.leadingZeroBitCount
    }

    /// The few fields of a certificate needed to say what is wrong with it, read from DER without checking
    /// anything else; nil when the bytes are not a SEQUENCE of a to-be-signed certificate and an algorithm.
    static func fields(
        of der: [UInt8]
    ) -> (
        subject: DistinguishedName?,
        publicKey: (algorithm: ASN1ObjectIdentifier, parameter: ASN1ObjectIdentifier?, bits: [UInt8])?,
        signatureAlgorithm: ASN1ObjectIdentifier?,
        structuralProblem: String?
    )? {
        guard let root = try? DER.parse(der), case .constructed(let top) = root.content else { return nil }
        let parts = Array(top)
        guard parts.count == 3, case .constructed(let tbsNodes) = parts[0].content else { return nil }
        let signatureAlgorithm = Self.firstObjectIdentifier(in: parts[1])
        var tbs = Array(tbsNodes)
        if tbs.first?.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) { tbs.removeFirst() }
        // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo, …
        guard tbs.count >= 6 else {
            return (nil, nil, signatureAlgorithm, "it lacks fields a certificate must have")
        }
        let subject = try? DistinguishedName(derEncoded: tbs[4])
        var publicKey: (ASN1ObjectIdentifier, ASN1ObjectIdentifier?, [UInt8])?
        if case .constructed(let spki) = tbs[5].content {
            let spkiParts = Array(spki)
            if spkiParts.count == 2, case .constructed(let algorithmParts) = spkiParts[0].content,
                let algorithm = Self.firstObjectIdentifier(in: spkiParts[0]),
                let bitString = try? ASN1BitString(derEncoded: spkiParts[1])
            {
                let parameter = Array(algorithmParts).dropFirst().first.flatMap {
                    try? ASN1ObjectIdentifier(derEncoded: $0)
                }
                publicKey = (algorithm, parameter, Array(bitString.bytes))
            }
        }
        return (subject, publicKey, signatureAlgorithm, Self.structuralProblem(tbs))
    }

    /// The malformations RFC 5280 names that swift-certificates refuses when parsing: a negative serial number
    /// (4.1.2.2) and an extension present twice (4.2).
    private static func structuralProblem(_ tbs: [ASN1Node]) -> String? {
        if case .primitive(let serial) = tbs[0].content, let first = serial.first, first & 0x80 != 0 {
            return "its serial number is negative"
        }
        let extensionsTag = ASN1Identifier(tagWithNumber: 3, tagClass: .contextSpecific)
        guard let wrapper = tbs.dropFirst(6).first(where: { $0.identifier == extensionsTag }),
            case .constructed(let wrapped) = wrapper.content, let list = wrapped.first(where: { _ in true }),
            case .constructed(let extensions) = list.content
        else { return nil }
        var seen: Set<ASN1ObjectIdentifier> = []
        for node in extensions {
            guard let oid = Self.firstObjectIdentifier(in: node) else { continue }
            if !seen.insert(oid).inserted { return "it holds the extension \(oid) twice" }
        }
        return nil
    }

    /// The OBJECT IDENTIFIER that opens an AlgorithmIdentifier SEQUENCE.
    private static func firstObjectIdentifier(in node: ASN1Node) -> ASN1ObjectIdentifier? {
        guard case .constructed(let children) = node.content, let first = children.first(where: { _ in true }) else {
            return nil
        }
        return try? ASN1ObjectIdentifier(derEncoded: first)
    }
}
