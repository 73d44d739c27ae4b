import Crypto
import Foundation
import X509

/// A pin-validation failure report in the JSON format of RFC 7469 section 3 (HPKP) as TrustKit sends it.
public struct PinFailureReport: Sendable, Hashable, Encodable {
    /// When the failure happened, ISO 8601.
    public var dateTime: String
    /// The host the failing connection was for (RFC 7469 `hostname`).
    public var hostname: String
    /// The port the failing connection was for.
    public var port: Int
    /// The pattern the pins were configured for (`api.example.com`, `*.example.com`).
    public var notedHostname: String
    /// Whether that pattern covers subdomains.
    public var includeSubdomains: Bool
    /// Whether the pins were enforced (false for report-only).
    public var enforcePinning: Bool
    /// When the pin set stops being enforced, ISO 8601, if it does.
    public var effectiveExpirationDate: String?
    /// The verified chain, leaf first, as PEM; nil when nothing verified it (a pinning evaluator with
    /// `performDefaultValidation: false` whose pins matched no certificate), and the chain is then in
    /// ``servedCertificateChain``.
    public var validatedCertificateChain: [String]?
    /// The chain as the server presented it, leaf first, as PEM, when it was not verified; nil otherwise.
    public var servedCertificateChain: [String]?
    /// The configured pins as `pin-sha256="BASE64"`.
    public var knownPins: [String]

    enum CodingKeys: String, CodingKey {
        case dateTime = "date-time"
        case hostname
        case port
        case notedHostname = "noted-hostname"
        case includeSubdomains = "include-subdomains"
        case enforcePinning = "enforce-pinning"
        case effectiveExpirationDate = "effective-expiration-date"
        case validatedCertificateChain = "validated-certificate-chain"
        case servedCertificateChain = "served-certificate-chain"
        case knownPins = "known-pins"
    }

    /// A report for `mismatch` on `port`, configured under `pattern`.
    public init(mismatch: PinMismatch, port: Int, pattern: HostPattern?, at time: Date = Date()) {
        self.dateTime = time.formatted(.iso8601)
        self.hostname = mismatch.host
        self.port = port
        self.notedHostname = pattern?.description ?? mismatch.host
        self.includeSubdomains = pattern.map { $0.kind != .exact } ?? false
        self.enforcePinning = mismatch.enforced
        self.effectiveExpirationDate = mismatch.pinSetExpiration?.formatted(.iso8601)
        let pem = mismatch.verifiedCertificates.map { (try? $0.serializeAsPEM().pemString) ?? "" }
        if mismatch.chainIsVerified {
            self.validatedCertificateChain = pem
        } else {
            self.servedCertificateChain = pem
        }
        self.knownPins = mismatch.expectedPins.map { pin in
            let base64 = Data(pin.digest).base64EncodedString()
            return pin.kind == .publicKey ? "pin-sha256=\"\(base64)\"" : "cert-sha256=\"\(base64)\""
        }
    }

    /// What makes two reports duplicates: the same host, port, pins and chain.
    public var deduplicationKey: String {
        let chain = self.validatedCertificateChain ?? self.servedCertificateChain ?? []
        return ([self.hostname, String(self.port)] + self.knownPins + chain).joined(separator: "\n")
    }

    /// SHA-256 of ``deduplicationKey``: what a reporter remembers, 32 bytes whatever the chain's size.
    public var deduplicationDigest: [UInt8] {
        Array(SHA256.hash(data: Data(self.deduplicationKey.utf8)))
    }

    /// The JSON body.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
