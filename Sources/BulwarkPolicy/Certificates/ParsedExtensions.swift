import X509

/// A certificate's extensions, each parsed at most once (on first use) while one path is checked: the web PKI checks
/// read most of them several times, and swift-certificates parses an extension again on every access.
///
/// Each value is the outcome of the matching `Certificate.Extensions` property, error included, so
/// `try? parsed.keyUsage.get()` means exactly what `try? certificate.extensions.keyUsage` means.
struct ParsedExtensions {
    let extensions: Certificate.Extensions

    init(_ certificate: Certificate) {
        self.extensions = certificate.extensions
    }

    private(set) lazy var authorityInformationAccess = Result { try self.extensions.authorityInformationAccess }
    private(set) lazy var keyUsage = Result { try self.extensions.keyUsage }
    private(set) lazy var basicConstraints = Result { try self.extensions.basicConstraints }
    private(set) lazy var extendedKeyUsage = Result { try self.extensions.extendedKeyUsage }
    private(set) lazy var subjectKeyIdentifier = Result { try self.extensions.subjectKeyIdentifier }
    private(set) lazy var authorityKeyIdentifier = Result { try self.extensions.authorityKeyIdentifier }
    private(set) lazy var nameConstraints = Result { try self.extensions.nameConstraints }
    private(set) lazy var subjectAlternativeNames = Result { try self.extensions.subjectAlternativeNames }
}
