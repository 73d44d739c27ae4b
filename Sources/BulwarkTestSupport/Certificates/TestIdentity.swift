import X509

/// A certificate with its private key, generated in process for tests, benchmarks and the demo.
public struct TestIdentity: Sendable {
    /// The certificate.
    public let certificate: Certificate
    /// The certificate's private key.
    public let privateKey: Certificate.PrivateKey

    /// A certificate and its key.
    public init(certificate: Certificate, privateKey: Certificate.PrivateKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// The certificate as PEM.
    public var certificatePEM: String {
        (try? self.certificate.serializeAsPEM().pemString) ?? ""
    }

    /// The private key as PEM (PKCS#8 or SEC 1, as swift-certificates writes it).
    public var privateKeyPEM: String {
        (try? self.privateKey.serializeAsPEM().pemString) ?? ""
    }
}
