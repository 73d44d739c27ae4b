import SwiftASN1
import X509
import _CryptoExtras

/// The checks a web browser (CA/Browser Forum baseline requirements, Chrome, rustls-webpki) makes on a
/// server's chain beyond RFC 5280, which swift-certificates does not make on its own.
///
/// - The leaf must carry an extended key usage with `serverAuth` (not only `anyExtendedKeyUsage`), not marked
///   critical, must not be a CA, must not be allowed to sign certificates, must (when it has a key usage) allow
///   a TLS use of its key (digitalSignature, keyEncipherment or keyAgreement), and must carry an authority key
///   identifier.
/// - Intermediates must carry key identifiers, a non-empty subject, critical basic constraints, and, when they
///   restrict extended key usage, allow `serverAuth`. Name and policy constraints must be critical.
/// - Every certificate must have a positive serial number of at most 20 bytes, and RSA keys must be at least
///   2048 bits and a whole number of bytes. No certificate below the anchor may be signed with SHA-1 (the
///   anchor's own signature is never checked: it is trusted by name and key).
/// - The subject alternative name must be critical exactly when the subject is empty.
///
/// A chain of one certificate (a pinned or explicitly trusted leaf that is its own anchor) is only checked for
/// key strength: such a certificate was trusted by its exact identity, not by the rules of the web PKI.
struct WebPKIPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [
        .X509ExtensionID.extendedKeyUsage,
        .X509ExtensionID.subjectAlternativeName,
    ]

    /// Require `serverAuth` in the leaf's extended key usage.
    var requireServerAuth: Bool = true
    /// The most intermediates (not counting self-issued ones) a path may hold; `nil` for no limit.
    var maximumIntermediates: Int?
    /// Refuse any extended key usage in the anchor (CA/Browser Forum root profile); see `ValidationOptions`.
    var enforcesRootProfile: Bool = false
    /// What the leaf is for: `serverAuth` (as ``requireServerAuth`` says), `clientAuth` required, or any.
    var purpose: CertificatePurpose = .server

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        // By index, not `for certificate in chain`: the chain's iterator hands out whole copies of each
        // `Certificate` (two dozen references retained and released), and this runs for every candidate path of
        // every handshake. The per-certificate checks were run once per certificate (`ParsedExtensions.webPKI`).
        let count = chain.count
        if let maximumIntermediates, count > 2 {
            var intermediates = 0
            for index in 1..<(count - 1) where chain[index].issuer != chain[index].subject {
                intermediates += 1
            }
            let counted = intermediates
            if counted > maximumIntermediates {
                return .failsToMeetPolicy(
                    reason: "path with \(counted) intermediates exceeds the limit of \(maximumIntermediates)"
                )
            }
        }
        // The decoded extensions of each certificate, kept for the name-constraint rules only when a CA of the path
        // has name constraints (most have none, and the array would be built for nothing).
        var parsedChain: [ParsedExtensions] = []
        var leafExtensions: ParsedExtensions?
        for index in 0..<count {
            let isAnchor = index == count - 1
            let parsed = ParsedExtensions.of(chain, at: index)
            let verdicts = parsed.webPKI
            if let failure = verdicts.key
                ?? (isAnchor ? nil : verdicts.serial ?? Self.checkSignatureAlgorithm(chain[index].signatureAlgorithm))
            {
                return .failsToMeetPolicy(reason: "\(chain[index].subject): \(failure)")
            }
            guard count > 1 else { break }
            let failure: String?
            if index == 0 {
                switch self.purpose.backing {
                case .server:
                    failure =
                        self.requireServerAuth ? verdicts.leafRequiringServerAuth : verdicts.leafNotRequiringServerAuth
                case .client:
                    failure = verdicts.leafNotRequiringServerAuth ?? Self.checkClientLeaf(parsed)
                case .any:
                    failure = verdicts.leafNotRequiringServerAuth
                }
            } else if isAnchor {
                failure =
                    self.enforcesRootProfile
                    ? verdicts.anchorEnforcingRootProfile : verdicts.anchorNotEnforcingRootProfile
            } else if self.purpose != .server {
                // The cached verdict checks serverAuth last: without that failure, every other check passed.
                let others = verdicts.intermediate == Self.intermediateLacksServerAuth ? nil : verdicts.intermediate
                failure =
                    others
                    ?? (Self.intermediateAllows(self.purpose, parsed)
                        ? nil : "extended key usage does not allow \(self.purpose == .client ? "clientAuth" : "")")
            } else {
                failure = verdicts.intermediate
            }
            if let failure {
                return .failsToMeetPolicy(reason: "\(chain[index].subject): \(failure)")
            }
            if index == 0 {
                leafExtensions = parsed
            } else if parsedChain.isEmpty, (try? parsed.nameConstraints.get()) != nil, let leafExtensions {
                // The first CA with name constraints: the certificates before it, then every one from here on.
                parsedChain.reserveCapacity(count)
                parsedChain.append(leafExtensions)
                for earlier in 1..<index { parsedChain.append(ParsedExtensions.of(chain, at: earlier)) }
            }
            if !parsedChain.isEmpty { parsedChain.append(parsed) }
        }
        if count > 1, !parsedChain.isEmpty, let failure = NameConstraintChecks.check(chain, parsed: parsedChain) {
            return .failsToMeetPolicy(reason: failure)
        }
        return .meetsPolicy
    }

    /// Serial numbers (RFC 5280 4.1.2.2). Negative serials never get here: SwiftASN1 refuses them when parsing.
    /// Trust anchors are exempt: they are trusted by name and key (Starfield's G2 root has serial 0).
    static func checkSerial(_ certificate: Certificate) -> String? {
        let serial = certificate.serialNumber.bytes
        if serial.count > 20 { return "serial number longer than 20 bytes" }
        if serial.allSatisfy({ $0 == 0 }) { return "serial number is zero" }
        return nil
    }

    /// SHA-1 signatures are refused on every certificate whose signature is verified (all but the anchor): SHA-1
    /// collisions are practical, and the CA/Browser Forum has forbidden it since 2016. swift-certificates still
    /// verifies SHA-1 with RSA (it refuses SHA-1 with ECDSA when parsing).
    static func checkSignatureAlgorithm(_ certificate: Certificate) -> String? {
        Self.checkSignatureAlgorithm(certificate.signatureAlgorithm)
    }

    /// ``checkSignatureAlgorithm(_:)`` of a certificate signed with `algorithm`.
    static func checkSignatureAlgorithm(_ algorithm: Certificate.SignatureAlgorithm) -> String? {
        CertificateProblems.refusedSignatureAlgorithmName(algorithm).map { "signed with \($0), which is not accepted" }
    }

    static func checkKey(_ certificate: Certificate) -> String? {
        if let rsa = _RSA.Signing.PublicKey(certificate.publicKey) {
            let bits = rsa.keySizeInBits
            let minimum = CertificateProblems.minimumRSABits
            if bits < minimum { return "RSA \(bits)-bit key; the minimum is \(minimum) bits" }
            if bits % 8 != 0 { return "RSA modulus of \(bits) bits is not a whole number of bytes" }
        }
        return nil
    }

    static func checkLeaf(_ certificate: Certificate, _ parsed: ParsedExtensions, requireServerAuth: Bool) -> String? {
        let extensions = certificate.extensions
        if requireServerAuth {
            guard let ekuExtension = extensions[oid: .X509ExtensionID.extendedKeyUsage] else {
                return "no extended key usage (serverAuth is required)"
            }
            if ekuExtension.critical { return "extended key usage must not be critical in a server certificate" }
            guard let eku = try? parsed.extendedKeyUsage.get(), eku.contains(.serverAuth) else {
                return "extended key usage does not include serverAuth"
            }
            if eku.contains(.any) {
                return "anyExtendedKeyUsage is forbidden in a server certificate (CA/Browser Forum 7.1.2.7.10)"
            }
        }
        if let failure = Self.checkParsableExtensions(parsed) { return failure }
        if case .isCertificateAuthority = (try? parsed.basicConstraints.get()) ?? .notCertificateAuthority {
            return "a CA certificate cannot be a server certificate"
        }
        if let usage = try? parsed.keyUsage.get() {
            if usage.keyCertSign { return "a server certificate must not have the keyCertSign key usage" }
            // RFC 5280 4.2.1.3: the key may be used only as the extension says. A TLS server's key signs the
            // handshake or receives the key exchange; OpenSSL's sslserver purpose makes the same check.
            if !(usage.digitalSignature || usage.keyEncipherment || usage.keyAgreement) {
                return "a server certificate's key usage must allow digitalSignature, keyEncipherment or keyAgreement"
            }
        }
        if extensions[oid: .X509ExtensionID.nameConstraints] != nil {
            return "a server certificate must not carry name constraints"
        }
        guard let aki = try? parsed.authorityKeyIdentifier.get(), aki.keyIdentifier != nil else {
            return "missing authority key identifier"
        }
        return Self.checkSubjectAlternativeNameCriticality(certificate)
            ?? Self.checkSubjectAlternativeNameSyntax(parsed)
    }

    static func checkIntermediate(_ certificate: Certificate, _ parsed: ParsedExtensions) -> String? {
        if certificate.subject.isEmpty { return "a CA certificate must have a non-empty subject" }
        guard let aki = try? parsed.authorityKeyIdentifier.get(), aki.keyIdentifier != nil else {
            return "missing authority key identifier"
        }
        if (try? parsed.subjectKeyIdentifier.get()) == nil { return "missing subject key identifier" }
        if let basic = certificate.extensions[oid: .X509ExtensionID.basicConstraints], !basic.critical {
            return "basic constraints of a CA must be critical"
        }
        if let failure = Self.checkParsableExtensions(parsed) ?? Self.checkCertificateSigning(parsed) {
            return failure
        }
        if let failure = Self.checkConstraintsCriticality(certificate)
            ?? Self.checkSubjectAlternativeNameCriticality(certificate)
        {
            return failure
        }
        // Last, so that this failure means every other check passed (a client purpose checks the usage again).
        if let eku = try? parsed.extendedKeyUsage.get(), !eku.contains(.serverAuth) {
            return Self.intermediateLacksServerAuth
        }
        return nil
    }

    static let intermediateLacksServerAuth = "extended key usage does not allow serverAuth"

    /// Whether an intermediate's extended key usage (when it has one) allows `purpose` (or any usage).
    static func intermediateAllows(_ purpose: CertificatePurpose, _ parsed: ParsedExtensions) -> Bool {
        guard let eku = try? parsed.extendedKeyUsage.get() else { return true }
        switch purpose.backing {
        case .server: return eku.contains(.serverAuth) || eku.contains(.any)
        case .client: return eku.contains(.clientAuth) || eku.contains(.any)
        case .any: return true
        }
    }

    /// The leaf's check for a client: its extended key usage must list `clientAuth`.
    static func checkClientLeaf(_ parsed: ParsedExtensions) -> String? {
        guard let eku = try? parsed.extendedKeyUsage.get() else {
            return "no extended key usage (clientAuth is required)"
        }
        return eku.contains(.clientAuth) ? nil : "extended key usage does not include clientAuth"
    }

    static func checkAnchor(
        _ certificate: Certificate,
        _ parsed: ParsedExtensions,
        enforcesRootProfile: Bool
    ) -> String? {
        let extensions = certificate.extensions
        if certificate.subject.isEmpty { return "a CA certificate must have a non-empty subject" }
        if (try? parsed.subjectKeyIdentifier.get()) == nil { return "missing subject key identifier" }
        if let basic = extensions[oid: .X509ExtensionID.basicConstraints], !basic.critical {
            return "basic constraints of a CA must be critical"
        }
        if let failure = Self.checkCertificateSigning(parsed) { return failure }
        if certificate.issuer != certificate.subject, (try? parsed.authorityKeyIdentifier.get()) == nil {
            return "a cross-signed root must carry an authority key identifier"
        }
        if let aki = try? parsed.authorityKeyIdentifier.get() {
            if aki.authorityCertIssuer != nil || aki.authorityCertSerialNumber != nil {
                return "authority key identifier of a root must hold only a key identifier"
            }
            guard let keyID = aki.keyIdentifier else {
                return "authority key identifier without a key identifier"
            }
            if let ski = try? parsed.subjectKeyIdentifier.get(), ski.keyIdentifier != keyID,
                certificate.issuer == certificate.subject
            {
                return "self-signed root's authority key identifier differs from its subject key identifier"
            }
        }
        if extensions[oid: .X509ExtensionID.extendedKeyUsage] != nil {
            guard let eku = try? parsed.extendedKeyUsage.get(), eku.contains(.serverAuth) || eku.contains(.any) else {
                return "the root's extended key usage does not allow serverAuth"
            }
            if enforcesRootProfile {
                return "a root CA must not carry an extended key usage (CA/Browser Forum 7.1.2.1)"
            }
        }
        return Self.checkConstraintsCriticality(certificate)
    }

    /// A CA whose key usage is present must be allowed to sign certificates (RFC 5280 4.2.1.3).
    static func checkCertificateSigning(_ parsed: ParsedExtensions) -> String? {
        if let usage = try? parsed.keyUsage.get(), !usage.keyCertSign {
            return "a CA's key usage must include keyCertSign"
        }
        return nil
    }

    /// Extensions whose contents Bulwark reads must parse; an authority information access must not be empty.
    /// The failure names the extension, not the decoder's error value.
    static func checkParsableExtensions(_ parsed: ParsedExtensions) -> String? {
        func malformed(_ name: String, _ decode: () throws -> Void) -> String? {
            (try? decode()) == nil ? "malformed \(name) extension" : nil
        }
        if let access = try? parsed.authorityInformationAccess.get(), access.isEmpty {
            return "authority information access holds no access description"
        }
        return malformed("authority information access") { _ = try parsed.authorityInformationAccess.get() }
            ?? malformed("key usage") { _ = try parsed.keyUsage.get() }
            ?? malformed("basic constraints") { _ = try parsed.basicConstraints.get() }
            ?? malformed("extended key usage") { _ = try parsed.extendedKeyUsage.get() }
            ?? malformed("subject key identifier") { _ = try parsed.subjectKeyIdentifier.get() }
            ?? malformed("authority key identifier") { _ = try parsed.authorityKeyIdentifier.get() }
            ?? malformed("name constraints") { _ = try parsed.nameConstraints.get() }
            ?? malformed("subject alternative name") { _ = try parsed.subjectAlternativeNames.get() }
    }

    /// DNS names in the SAN must use the preferred name syntax (letters, digits, hyphens; a leading `*.`).
    static func checkSubjectAlternativeNameSyntax(_ parsed: ParsedExtensions) -> String? {
        guard let names = try? parsed.subjectAlternativeNames.get() else { return nil }
        for case .dnsName(let name) in names where !Self.hasPreferredNameSyntax(name) {
            return "subject alternative name \"\(name)\" is not a valid DNS name"
        }
        return nil
    }

    /// Whether `name` is one or more non-empty labels of letters, digits and hyphens, separated by dots, after an
    /// optional leading `*.`. One pass over the bytes (this runs for every name of every leaf, every handshake).
    static func hasPreferredNameSyntax(_ name: String) -> Bool {
        var bytes = name.utf8[...]
        if bytes.first == UInt8(ascii: "*") {
            // A leading `*` label: it must be followed by a dot and at least one more label.
            bytes = bytes.dropFirst()
            guard bytes.first == UInt8(ascii: ".") else { return false }
            bytes = bytes.dropFirst()
        }
        var labelLength = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "."):
                guard labelLength > 0 else { return false }
                labelLength = 0
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                labelLength += 1
            default:
                return false
            }
        }
        return labelLength > 0
    }

    static func checkConstraintsCriticality(_ certificate: Certificate) -> String? {
        let extensions = certificate.extensions
        if let constraints = extensions[oid: .X509ExtensionID.nameConstraints], !constraints.critical {
            return "name constraints must be critical"
        }
        if let constraints = extensions[oid: .X509ExtensionID.policyConstraints], !constraints.critical {
            return "policy constraints must be critical"
        }
        return nil
    }

    static func checkSubjectAlternativeNameCriticality(_ certificate: Certificate) -> String? {
        guard let san = certificate.extensions[oid: .X509ExtensionID.subjectAlternativeName] else { return nil }
        if certificate.subject.isEmpty && !san.critical {
            return "subject alternative name must be critical when the subject is empty"
        }
        if !certificate.subject.isEmpty && san.critical {
            return "subject alternative name must not be critical when the subject is non-empty"
        }
        return nil
    }
}

extension ASN1ObjectIdentifier.X509ExtensionID {
    static let policyConstraints: ASN1ObjectIdentifier = [2, 5, 29, 36]
}
