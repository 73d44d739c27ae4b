extension SecurityEvent {
    /// The name of one of an event's ``SecurityEvent/details``. Compare with the static members.
    ///
    /// Every key Bulwark writes is a static member here, and ``all`` lists them: a monitor can rely on the set, and
    /// a misspelt key does not compile. ``code`` is the key's stable text (`connections_closed`), the name that logs
    /// and the tamper-evident log write.
    public struct DetailKey: Hashable, Sendable, Comparable, CustomStringConvertible {
        /// The key's stable text, in `snake_case`: what the tamper-evident log and log monitors write.
        public let code: String

        private init(_ code: String) { self.code = code }

        /// A key with any code, for tests of what sinks do with unusual text; events carry only the static members.
        package init(code: String) { self.code = code }

        // URLs (paths redacted by ``SecurityEvent/redactingURLPaths(placeholder:)``).

        /// The URL a redirect left, or a credential was carried from (text; no query, fragment or user information).
        public static let from = DetailKey("from")
        /// The URL a redirect went to, or would have gone to (text; empty when a refused `Location` gave none).
        public static let to = DetailKey("to")
        /// The URL a request was refused for, or had its credentials withheld from (text).
        public static let target = DetailKey("target")
        /// A `Location` as the server sent it, when it could not be resolved to a URL (text).
        public static let location = DetailKey("location")

        // Redirects and requests.

        /// The redirect's HTTP status code (number).
        public static let status = DetailKey("status")
        /// The method the next hop of a redirect was sent with (text).
        public static let method = DetailKey("method")
        /// Why a redirect was refused, the same bounded label as ``SecurityEvent/reason`` (text).
        public static let reason = DetailKey("reason")
        /// The lower-case names of the credential headers that were removed or withheld (list).
        public static let headers = DetailKey("headers")
        /// The URL's scheme (text).
        public static let scheme = DetailKey("scheme")
        /// The allowlist pattern that matched the host, as written (text).
        public static let pattern = DetailKey("pattern")
        /// The URL's port (number).
        public static let port = DetailKey("port")
        /// Which servers read an ambiguous path differently, a ``CredentialScope/PathAmbiguity`` label (text).
        public static let ambiguity = DetailKey("ambiguity")

        // Trust.

        /// The chain the server presented, one `sha256/…: subject` entry per certificate, leaf first (lines).
        public static let presented = DetailKey("presented")
        /// The verified chain, one `sha256/…: subject` entry per certificate, leaf first (lines).
        public static let verified = DetailKey("verified")
        /// Whether the trust decision was reused from the client's cache (flag).
        public static let cached = DetailKey("cached")

        // Revocation.

        /// The subject of the certificate a revocation check was about (text).
        public static let certificate = DetailKey("certificate")
        /// The serial number of that certificate, in hexadecimal (text).
        public static let serialNumber = DetailKey("serial_number")
        /// The SHA-256 of a certificate's DER, in lower-case hexadecimal (text): the client certificate sent.
        public static let fingerprint = DetailKey("fingerprint")
        /// How its status was established: `CRL` or `OCSP` (text).
        public static let revocationMethod = DetailKey("revocation_method")
        /// Who said so: the CRL's issuer or the OCSP responder (text).
        public static let source = DetailKey("source")
        /// The distribution point or responder the answer came from, or `a loaded list` (text).
        public static let fetchedFrom = DetailKey("fetched_from")
        /// The status: `good` or `revoked` (text).
        public static let revocationStatus = DetailKey("revocation_status")
        /// Until when the answer holds, ISO 8601 (text).
        public static let nextUpdate = DetailKey("next_update")
        /// When the certificate was revoked, ISO 8601 (text).
        public static let revokedAt = DetailKey("revoked_at")
        /// Why it was revoked, an RFC 5280 reason name (text).
        public static let revocationReason = DetailKey("revocation_reason")

        // Certificate Transparency.

        /// How many of the leaf's SCTs counted toward the policy (text, a number).
        public static let sctsCounted = DetailKey("scts_counted")
        /// How many SCTs the leaf carries (text, a number).
        public static let sctsFound = DetailKey("scts_found")
        /// The distinct operators of the counted SCTs' logs, comma-separated (text).
        public static let logOperators = DetailKey("log_operators")
        /// `met` or `not_met` (text).
        public static let ctVerdict = DetailKey("ct_verdict")

        // Sign-out.

        /// How many credentials a sign-out removed (number).
        public static let credentials = DetailKey("credentials")
        /// How many cookies a sign-out removed (number).
        public static let cookies = DetailKey("cookies")
        /// How many pooled connections a sign-out closed (number).
        public static let connectionsClosed = DetailKey("connections_closed")
        /// How many session-bound client identities a sign-out removed (number).
        public static let clientIdentities = DetailKey("client_identities")

        // Policy updates.

        /// The version of a policy bundle (number).
        public static let version = DetailKey("version")
        /// The last day a policy bundle is valid, `YYYY-MM-DD` (text).
        public static let expires = DetailKey("expires")
        /// The public keys (base64, with their names) whose signatures of a policy bundle verified (list).
        public static let signers = DetailKey("signers")

        // Secrets.

        /// The size of a secret whose memory could not be locked, in bytes (number).
        public static let bytes = DetailKey("bytes")
        /// How many memory locks have failed in this process so far (number).
        public static let failures = DetailKey("failures")

        // Event delivery.

        /// How many events a queued monitor dropped because its queue was full (number).
        public static let dropped = DetailKey("dropped")
        /// How many events a queued monitor holds at most (number).
        public static let capacity = DetailKey("capacity")

        // Proxies.

        /// The proxy a connection went through, `host:port` (text).
        public static let proxy = DetailKey("proxy")
        /// The authentication schemes a proxy offered (`Basic`, `Digest`, …; list).
        public static let schemes = DetailKey("schemes")

        /// Every key, in the order of the declarations above.
        public static let all: [DetailKey] = [
            .from, .to, .target, .location, .status, .method, .reason, .headers, .scheme, .pattern, .port, .ambiguity,
            .presented, .verified, .cached, .certificate, .serialNumber, .fingerprint, .revocationMethod, .source,
            .fetchedFrom,
            .revocationStatus, .nextUpdate, .revokedAt, .revocationReason, .credentials, .cookies, .connectionsClosed,
            .clientIdentities, .version, .expires, .signers, .bytes, .failures, .dropped,
            .capacity, .proxy, .schemes, .sctsCounted, .sctsFound, .logOperators, .ctVerdict,
        ]

        /// Keys order by their ``code``.
        public static func < (lhs: DetailKey, rhs: DetailKey) -> Bool { lhs.code < rhs.code }

        /// The ``code``.
        public var description: String { self.code }
    }
}
