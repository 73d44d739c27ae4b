import Foundation
import X509

/// What a person needs to see of a certificate: names, validity, and its two pins.
///
/// Used in trust failure messages (the OkHttp `sha256/… : subject` lines), the chain dumps of `bulwark inspect`
/// and the output of `bulwark pin`.
public struct CertificateSummary: Sendable, Hashable, CustomStringConvertible {
    /// The subject distinguished name, RFC 4514 text.
    public var subject: String
    /// The issuer distinguished name, RFC 4514 text.
    public var issuer: String
    /// The start of the validity period.
    public var notValidBefore: Date
    /// The end of the validity period.
    public var notValidAfter: Date
    /// Subject alternative names as `DNS:…`, `IP:…` text.
    public var subjectAlternativeNames: [String]
    /// The `sha256/` pin of the DER SubjectPublicKeyInfo.
    public var publicKeyPin: Pin
    /// The SHA-256 of the DER certificate.
    public var certificatePin: Pin

    /// The summary of `certificate`.
    public init(_ certificate: Certificate) {
        self.subject = String(describing: certificate.subject)
        self.issuer = String(describing: certificate.issuer)
        self.notValidBefore = certificate.notValidBefore
        self.notValidAfter = certificate.notValidAfter
        self.subjectAlternativeNames = certificate.subjectAlternativeNameStrings
        self.publicKeyPin = Pin.publicKey(of: certificate)
        self.certificatePin = Pin.certificate(of: certificate)
    }

    /// `sha256/BASE64: subject`, the line OkHttp prints for each certificate of a chain.
    public var pinLine: String {
        "\(self.publicKeyPin): \(self.subject)"
    }

    /// The ``pinLine``: `sha256/…: subject`.
    public var description: String { self.pinLine }
}
