import Foundation
import X509

/// What the revocation check of one certificate of a verified chain found, and where the answer came from: the
/// data of a `revocation_checked` event and of a `certificate_revoked` refusal.
public struct RevocationCheck: Hashable, Sendable, CustomStringConvertible {
    /// Where an answer came from.
    public struct Origin: Hashable, Sendable, CustomStringConvertible {
        private let text: String

        /// A list the application loaded into the ``RevocationStore``.
        public static let loadedList = Origin(text: "a loaded list")

        /// A CRL distribution point or an OCSP responder, by URL.
        public static func url(_ url: String) -> Origin {
            Origin(text: url.count > 120 ? String(url.prefix(100)) + "…" : url)
        }

        /// Where the answer came from, in words.
        public var description: String { self.text }
    }

    /// The certificate checked, kept unformatted until a description needs it: a warm check costs less than
    /// formatting its subject and serial number, and most checks are never described.
    private enum Checked: Hashable, Sendable {
        case text(certificate: String, serialNumber: String)
        case name(DistinguishedName, Certificate.SerialNumber)
    }

    private let checked: Checked

    /// The subject of the certificate checked.
    public var certificate: String {
        switch self.checked {
        case .text(let certificate, _): certificate
        case .name(let subject, _): String(describing: subject)
        }
    }

    /// Its serial number, in hexadecimal.
    public var serialNumber: String {
        switch self.checked {
        case .text(_, let serialNumber): serialNumber
        case .name(_, let serialNumber): String(describing: serialNumber)
        }
    }
    /// The answer: good or revoked, by whom, valid until when.
    public let status: RevocationStatus
    /// Where the answer came from.
    public let origin: Origin
    /// Whether the answer was reused from the store instead of fetched for this check.
    public let cached: Bool

    /// The check of one certificate: its subject and serial number, the answer, where it came from, and whether it
    /// was reused.
    public init(certificate: String, serialNumber: String, status: RevocationStatus, origin: Origin, cached: Bool) {
        self.checked = .text(certificate: certificate, serialNumber: serialNumber)
        self.status = status
        self.origin = origin
        self.cached = cached
    }

    /// The check of `certificate`, whose subject and serial number are formatted only when asked for.
    init(of certificate: Certificate, status: RevocationStatus, origin: Origin, cached: Bool) {
        self.checked = .name(certificate.subject, certificate.serialNumber)
        self.status = status
        self.origin = origin
        self.cached = cached
    }

    /// `CRL` or `OCSP`.
    public var method: RevocationStatus.Method { self.status.method }

    /// The certificate, its serial number, the answer, the method and its source.
    public var description: String {
        let cached = self.cached ? ", cached" : ""
        return "\(self.certificate) (serial \(self.serialNumber)): \(self.status) [\(self.method) from "
            + "\(self.origin)\(cached)]"
    }
}
