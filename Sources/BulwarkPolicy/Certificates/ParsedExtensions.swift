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

    /// Decodes every extension above (an absent one is `nil`, found by a scan of the extension list).
    init(_ certificate: Certificate) {
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
    }

    /// The decoded extensions of `certificate`, from ``ParsedExtensionsCache/shared`` when the same certificate
    /// was decoded before.
    static func of(_ certificate: Certificate) -> ParsedExtensions {
        ParsedExtensionsCache.shared.extensions(of: certificate)
    }
}
