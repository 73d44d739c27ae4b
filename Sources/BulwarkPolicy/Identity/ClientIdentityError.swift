import Foundation

/// An error raised while loading or checking a client identity (a certificate chain and its private key, for mutual
/// TLS).
///
/// The description names the certificate (its subject, when one was read) and what is wrong, in words a person can act
/// on; it never holds any byte of the key or of the passphrase. ``debugDescription`` adds the parser's own text, for
/// bug reports (key parsers never echo key material).
///
/// ```text
/// client identity "CN=device-42": the certificate expired on 2026-01-01 00:00:00 UTC
/// ```
public struct ClientIdentityError: Error, Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of problem was found; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// No certificate was found in the certificate input.
        public static let noCertificate = Code("no_certificate")
        /// The certificate input is not a readable PEM or DER certificate.
        public static let unreadableCertificate = Code("unreadable_certificate")
        /// The key input is not a private key the TLS library can read.
        public static let unreadableKey = Code("unreadable_key")
        /// The key is encrypted and no passphrase was given.
        public static let passphraseRequired = Code("passphrase_required")
        /// The encrypted key could not be decrypted with the passphrase given.
        public static let wrongPassphrase = Code("wrong_passphrase")
        /// The private key does not belong to the leaf certificate (their public keys differ).
        public static let keyMismatch = Code("key_mismatch")
        /// The key is of a type or size Bulwark does not accept (RSA under 2048 bits, a curve other than P-256 or
        /// P-384, …).
        public static let unsupportedKey = Code("unsupported_key")
        /// The leaf certificate's validity ended.
        public static let expired = Code("expired")
        /// The leaf certificate's validity has not started yet.
        public static let notYetValid = Code("not_yet_valid")
        /// The leaf certificate has no extended key usage `clientAuth`, so servers refuse it for client
        /// authentication.
        public static let missingClientAuth = Code("missing_client_auth")

        /// The code's stable label.
        public var description: String { self.name }
    }

    /// Which problem was found.
    public let code: Code
    /// The subject of the leaf certificate (RFC 4514 text), when a certificate was read.
    public let subject: String?
    /// What is wrong, in words.
    public let detail: String
    /// What the parser reported, verbatim, if anything: for ``debugDescription`` only.
    private let underlying: String?

    /// An error of `code` about the certificate with `subject`; `detail` says what is wrong, in words.
    package init(_ code: Code, subject: String?, detail: String, underlying: String? = nil) {
        self.code = code
        self.subject = subject
        self.detail = detail
        self.underlying = underlying
    }

    /// Equal when code, subject and detail are equal.
    public static func == (lhs: ClientIdentityError, rhs: ClientIdentityError) -> Bool {
        lhs.code == rhs.code && lhs.subject == rhs.subject && lhs.detail == rhs.detail
    }

    /// Hashes the code, subject and detail, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.code)
        hasher.combine(self.subject)
        hasher.combine(self.detail)
    }

    /// `client identity "SUBJECT": DETAIL`, or `client identity: DETAIL` before a certificate was read.
    public var description: String {
        guard let subject else { return "client identity: \(self.detail)" }
        return "client identity \"\(subject)\": \(self.detail)"
    }

    /// ``description``, and the parser's own text when there is one.
    public var debugDescription: String {
        guard let underlying else { return self.description }
        return self.description + "\n  underlying error: " + underlying
    }
}
