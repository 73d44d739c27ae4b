import X509

/// The extensions Bulwark's checks read, decoded once per certificate (and the certificate's public-key pin): the web PKI checks, the name-constraint
/// checks and the host name check read them on every handshake, and swift-certificates decodes an extension again
/// on every access (a DER parse each time).
///
/// Each value is the outcome of the matching `Certificate.Extensions` property, error included, so
/// `try? parsed.keyUsage.get()` means exactly what `try? certificate.extensions.keyUsage` means.
///
/// ``of(_:)`` reuses the decoding of a certificate seen before (see ``ParsedExtensionsCache``): the values are a
/// pure function of the certificate's bytes, and every check that reads them still runs on every handshake.
final class ParsedExtensions: Sendable {
    let authorityInformationAccess: Result<AuthorityInformationAccess?, any Error>
    let keyUsage: Result<KeyUsage?, any Error>
    let basicConstraints: Result<BasicConstraints?, any Error>
    let extendedKeyUsage: Result<ExtendedKeyUsage?, any Error>
    let subjectKeyIdentifier: Result<SubjectKeyIdentifier?, any Error>
    let authorityKeyIdentifier: Result<AuthorityKeyIdentifier?, any Error>
    let nameConstraints: Result<NameConstraints?, any Error>
    let subjectAlternativeNames: Result<SubjectAlternativeNames?, any Error>
    /// ``Pin/publicKey(of:)`` of the certificate: the SubjectPublicKeyInfo is part of the `TBSCertificate` this
    /// is remembered by, and a pinning evaluator hashes the key of every certificate on every handshake.
    let publicKeyPin: Pin
    /// What ``WebPKIPolicy`` finds wrong with the certificate in each place of a path, without the subject prefix
    /// (nil: nothing). Each check reads only the `TBSCertificate` this is remembered by (names, key, serial
    /// number, extensions), so its verdict is as much a pure function of those bytes as the decoded values are;
    /// a path still runs every check on every handshake, reading the verdicts from here.
    let webPKI: WebPKIVerdicts
    /// Hosts, exactly as ``ServerIdentity/check(leafOf:host:parsed:)`` was given them, for which this certificate
    /// as a leaf passed the host check (at most ``matchedHostLimit``, the oldest forgotten first). The check reads
    /// only the host and the subject alternative names decoded here, so its success is a pure function of the
    /// host and these bytes; a failure is never remembered and is found again on every handshake.
    private let matchedHosts = LockedValue<[String]>([])
    static let matchedHostLimit = 4

    /// ``WebPKIPolicy``'s per-certificate verdicts (see ``ParsedExtensions/webPKI``).
    struct WebPKIVerdicts: Sendable {
        /// ``WebPKIPolicy/checkKey(_:)``: any place in a path.
        var key: String?
        /// ``WebPKIPolicy/checkSerial(_:)``: every place but the anchor.
        var serial: String?
        /// The leaf's checks with `serverAuth` required, and without.
        var leafRequiringServerAuth: String?
        var leafNotRequiringServerAuth: String?
        /// An intermediate's checks.
        var intermediate: String?
        /// The anchor's checks with the root profile enforced, and without.
        var anchorEnforcingRootProfile: String?
        var anchorNotEnforcingRootProfile: String?
    }

    /// Decodes every extension above (an absent one is `nil`, found by a scan of the extension list), and runs
    /// ``WebPKIPolicy``'s checks of the certificate once.
    convenience init(_ certificate: Certificate) {
        let decoded = ParsedExtensions(decoding: certificate, webPKI: WebPKIVerdicts())
        let verdicts = WebPKIVerdicts(
            key: WebPKIPolicy.checkKey(certificate),
            serial: WebPKIPolicy.checkSerial(certificate),
            leafRequiringServerAuth: WebPKIPolicy.checkLeaf(certificate, decoded, requireServerAuth: true),
            leafNotRequiringServerAuth: WebPKIPolicy.checkLeaf(certificate, decoded, requireServerAuth: false),
            intermediate: WebPKIPolicy.checkIntermediate(certificate, decoded),
            anchorEnforcingRootProfile: WebPKIPolicy.checkAnchor(certificate, decoded, enforcesRootProfile: true),
            anchorNotEnforcingRootProfile: WebPKIPolicy.checkAnchor(certificate, decoded, enforcesRootProfile: false)
        )
        self.init(copying: decoded, webPKI: verdicts)
    }

    private init(decoding certificate: Certificate, webPKI: WebPKIVerdicts) {
        self.publicKeyPin = Pin.publicKey(of: certificate)
        let extensions = certificate.extensions
        self.authorityInformationAccess = Result { try extensions.authorityInformationAccess }
        self.keyUsage = Result { try extensions.keyUsage }
        self.basicConstraints = Result { try extensions.basicConstraints }
        self.extendedKeyUsage = Result { try extensions.extendedKeyUsage }
        self.subjectKeyIdentifier = Result { try extensions.subjectKeyIdentifier }
        self.authorityKeyIdentifier = Result { try extensions.authorityKeyIdentifier }
        self.nameConstraints = Result { try extensions.nameConstraints }
        self.subjectAlternativeNames = Result { try extensions.subjectAlternativeNames }
        self.webPKI = webPKI
    }

    private init(copying other: ParsedExtensions, webPKI: WebPKIVerdicts) {
        self.publicKeyPin = other.publicKeyPin
        self.authorityInformationAccess = other.authorityInformationAccess
        self.keyUsage = other.keyUsage
        self.basicConstraints = other.basicConstraints
        self.extendedKeyUsage = other.extendedKeyUsage
        self.subjectKeyIdentifier = other.subjectKeyIdentifier
        self.authorityKeyIdentifier = other.authorityKeyIdentifier
        self.nameConstraints = other.nameConstraints
        self.subjectAlternativeNames = other.subjectAlternativeNames
        self.webPKI = webPKI
    }

    /// Whether ``ServerIdentity`` found this certificate valid for exactly `host` before.
    func hostMatched(_ host: String) -> Bool {
        self.matchedHosts.withLock { $0.contains(host) }
    }

    /// Remembers that this certificate as a leaf is valid for exactly `host` (only a success may be remembered).
    func rememberMatchedHost(_ host: String) {
        self.matchedHosts.withLock { hosts in
            guard !hosts.contains(host) else { return }
            if hosts.count >= Self.matchedHostLimit { hosts.removeFirst() }
            hosts.append(host)
        }
    }

    /// The decoded extensions of `certificate`, from ``ParsedExtensionsCache/shared`` when the same certificate
    /// was decoded before.
    static func of(_ certificate: Certificate) -> ParsedExtensions {
        ParsedExtensionsCache.shared.extensions(of: certificate)
    }

    /// ``of(_:)`` of `certificates[index]`, without copying the certificate out of the collection unless its
    /// extensions must be decoded.
    static func of<Certificates: RandomAccessCollection<Certificate>>(
        _ certificates: Certificates,
        at index: Certificates.Index
    ) -> ParsedExtensions {
        ParsedExtensionsCache.shared.extensions(tbsCertificateBytes: certificates[index].tbsCertificateBytes) {
            certificates[index]
        }
    }
}
