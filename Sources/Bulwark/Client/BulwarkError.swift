import BulwarkPolicy

/// Why a request failed.
///
/// Compare ``code`` with the static members of ``Code``. The description names the host and says what went wrong in
/// words (the TLS version the server offered and the minimum, the key or signature algorithm that was refused);
/// it never contains a query string, userinfo or header value, so it is safe to log, and never a Swift type name,
/// a source path or a library's error number. Those, when a library reported the failure, are in
/// ``debugDescription``, for bug reports.
///
/// Two errors are equal when their codes are equal, whatever their hosts and details (as AsyncHTTPClient's
/// `HTTPClientError`): `==` and `Set`s of errors compare kinds of failure.
/// Each error records where in Bulwark it was made (``file`` and ``line``), for bug reports; that place never
/// appears in ``description`` or ``debugDescription``.
public struct BulwarkError: Error, Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure. `description` is a bounded label fit for metrics.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The URL could not be parsed or uses something Bulwark does not send (userinfo, an unknown scheme).
        public static let invalidURL = Code("invalid_url")
        /// A plain `http://` request while the configuration does not allow plain HTTP.
        public static let plainHTTPNotAllowed = Code("plain_http_not_allowed")
        /// The server's certificate chain was refused by the trust policy; see ``BulwarkError/trustRefusal``.
        public static let trustRefused = Code("trust_refused")
        /// The TLS handshake failed for a reason other than trust (protocol version, cipher, garbage bytes).
        public static let tlsHandshakeFailed = Code("tls_handshake_failed")
        /// The server refused the client certificate, or required one and got none: it ended the connection with a
        /// TLS alert about the client's certificate (`bad_certificate`, `unknown_ca`, `certificate_required`,
        /// `certificate_expired`, …), named in the description with the host, or it answered with nginx's page for a
        /// refused client certificate (400 "No required SSL certificate was sent" or "The SSL certificate error"),
        /// which nginx sends instead of an alert. See ``BulwarkClient/Configuration/clientIdentities``.
        public static let clientCertificateRejected = Code("client_certificate_rejected")
        /// The request's host (or scheme or port) is not in the client's allowlist; nothing was resolved or
        /// connected.
        public static let hostNotAllowed = Code("host_not_allowed")
        /// The TCP connection could not be established.
        public static let connectFailed = Code("connect_failed")
        /// The TCP connection was not established within the connect timeout.
        public static let connectTimeout = Code("connect_timeout")
        /// The TLS handshake did not finish within its timeout.
        public static let tlsHandshakeTimeout = Code("tls_handshake_timeout")
        /// The server sent nothing for longer than the idle read timeout.
        public static let readTimeout = Code("read_timeout")
        /// The request's deadline passed.
        public static let deadlineExceeded = Code("deadline_exceeded")
        /// The task running the request was cancelled.
        public static let cancelled = Code("cancelled")
        /// The server closed the connection before the response was complete.
        public static let remoteConnectionClosed = Code("remote_connection_closed")
        /// The response body is larger than the caller's limit.
        public static let bodyTooLarge = Code("body_too_large")
        /// The compressed response inflates beyond the configured ratio (a decompression bomb).
        public static let decompressionLimitExceeded = Code("decompression_limit_exceeded")
        /// The server's response could not be parsed.
        public static let invalidResponse = Code("invalid_response")
        /// The request cannot be sent as it is (a line break in a field's value, a field name or a method that is not
        /// a token, a target with bytes a request line cannot carry): refused before any of it is sent.
        public static let invalidRequest = Code("invalid_request")
        /// The request body could not be sent.
        public static let requestBodyFailed = Code("request_body_failed")
        /// The client was shut down.
        public static let clientShutdown = Code("client_shutdown")
        /// The redirect policy refused a redirect; see ``BulwarkError/redirectRefusal`` and ``BulwarkError/redirects``.
        public static let redirectRefused = Code("redirect_refused")
        /// The client's ``/BulwarkPolicy/CredentialStore`` refuses requests outside every credential scope
        /// (``/BulwarkPolicy/CredentialStore/OutOfScopeRequests/refuse``), and this one was; nothing was resolved or
        /// connected.
        public static let outOfCredentialScope = Code("out_of_credential_scope")
        /// A credential refresh provider failed for a request in its scope; nothing was sent.
        public static let credentialRefreshFailed = Code("credential_refresh_failed")
        /// The client's configuration holds an option it cannot use (an empty cipher suite list, a resolve override
        /// that is not an IP address); the description names it. Every request of the client fails so, and nothing
        /// is resolved or connected.
        public static let invalidConfiguration = Code("invalid_configuration")
        /// The proxy answered the tunnel request with something that is not a proxy protocol, sent bytes after
        /// granting the tunnel and before the TLS handshake, or closed the connection during the proxy handshake, or
        /// an HTTPS proxy's TLS ended with an alert about a client certificate (the proxy's, never read as the
        /// origin's); the description names the proxy (`host:port`).
        public static let proxyHandshakeFailed = Code("proxy_handshake_failed")
        /// The proxy refused the tunnel: an HTTP status other than 2xx (named in the description, with the proxy), or
        /// a SOCKS5 reply other than success (in words: "host unreachable", "connection not allowed by ruleset").
        public static let proxyRefused = Code("proxy_refused")
        /// The proxy requires authentication (HTTP 407, or a SOCKS5 proxy accepting only username/password) and no
        /// proxy credentials are configured.
        public static let proxyAuthRequired = Code("proxy_auth_required")
        /// The proxy refused the configured credentials (HTTP 407 after Basic credentials were sent, or a SOCKS5
        /// username/password failure).
        public static let proxyAuthFailed = Code("proxy_auth_failed")
        /// The proxy requires an authentication scheme Bulwark does not speak (Digest, NTLM, Negotiate), named in the
        /// description; only Basic is sent.
        public static let proxyAuthSchemeUnsupported = Code("proxy_auth_scheme_unsupported")
        /// An HTTPS proxy's certificate was refused by the proxy's own trust evaluator: the description names the proxy
        /// (`host:port`) and why, ``trustRefusal`` holds the refusal (for the proxy's host). Nothing was sent to the
        /// proxy, and the origin was never contacted.
        public static let proxyUntrusted = Code("proxy_untrusted")

        /// The code's label, such as `trust_refused`: bounded and stable, fit for metrics and logs.
        public var description: String { self.name }
    }

    /// The kind of failure: compare it with the static members of ``Code``.
    public let code: Code
    /// The host the request was for, when known.
    public let host: String?
    /// The trust refusal, for ``Code/trustRefused`` (the origin's), and for ``Code/proxyUntrusted`` (the HTTPS
    /// proxy's: its ``/BulwarkPolicy/TrustRefusal/host`` is the proxy's host).
    public let trustRefusal: TrustRefusal?
    /// The redirect refusal, for ``Code/redirectRefused``: the reason, and the redacted from and to URLs.
    public let redirectRefusal: RedirectRefusal?
    /// The redirects of the request up to the refusal, for ``Code/redirectRefused`` (the refused hop is the last).
    public let redirects: [RedirectRecord]
    let detail: String?
    /// Whether the server is known not to have processed the request: HTTP/2 refused its stream (REFUSED_STREAM, or a
    /// GOAWAY naming an earlier stream), or NIOHTTP2 did not open it after the server's GOAWAY. Such a request may be
    /// sent again whatever its method (RFC 9113 section 8.7). Not compared by `==`.
    let unprocessed: Bool
    /// What the library underneath reported, verbatim: for ``debugDescription`` only.
    private let underlying: String?
    /// The file in Bulwark where the error was made, as `#fileID` gives it (`Bulwark/BulwarkClient.swift`), for bug
    /// reports. Never part of ``description`` or ``debugDescription``.
    public let file: String
    /// The line in ``file`` where the error was made, for bug reports. Never part of ``description`` or
    /// ``debugDescription``.
    public let line: UInt

    init(
        _ code: Code,
        host: String?,
        detail: String? = nil,
        underlying: String? = nil,
        trustRefusal: TrustRefusal? = nil,
        redirectRefusal: RedirectRefusal? = nil,
        redirects: [RedirectRecord] = [],
        unprocessed: Bool = false,
        file: String = #fileID,
        line: UInt = #line
    ) {
        self.code = code
        self.host = host
        self.detail = detail
        self.unprocessed = unprocessed
        self.underlying = underlying
        self.trustRefusal = trustRefusal
        self.redirectRefusal = redirectRefusal
        self.redirects = redirects
        self.file = file
        self.line = line
    }

    static func trustRefused(
        _ refusal: TrustRefusal,
        underlying: String? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) -> BulwarkError {
        BulwarkError(
            .trustRefused,
            host: refusal.host,
            underlying: underlying,
            trustRefusal: refusal,
            file: file,
            line: line
        )
    }

    static func redirectRefused(
        _ refusal: RedirectRefusal,
        host: String?,
        redirects: [RedirectRecord],
        file: String = #fileID,
        line: UInt = #line
    ) -> BulwarkError {
        BulwarkError(
            .redirectRefused,
            host: host,
            redirectRefusal: refusal,
            redirects: redirects,
            file: file,
            line: line
        )
    }

    /// Whether two errors have the same ``code``; their hosts, details and places of creation are not compared.
    public static func == (lhs: BulwarkError, rhs: BulwarkError) -> Bool {
        lhs.code == rhs.code
    }

    /// Hashes the ``code`` only, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.code)
    }

    /// A bounded, value-free label (`trust_refused`, `read_timeout`, …) for metrics.
    public var shortDescription: String { self.code.description }

    /// The code, the host and what went wrong, in words a person can act on: no query string, user information,
    /// header value, Swift type name, source path or library error number.
    public var description: String {
        var text = "\(self.code)"
        if let host { text += " (\(host))" }
        if let trustRefusal, self.code == .trustRefused { return text + ": " + String(describing: trustRefusal) }
        if let redirectRefusal { return text + ": " + String(describing: redirectRefusal) }
        if let detail { text += ": \(detail)" }
        return text
    }

    /// The description, then what the library underneath reported (its error values, numbers and source
    /// locations), for bug reports. Not for people: log ``description``.
    public var debugDescription: String {
        guard let underlying else { return self.description }
        return self.description + "\n  underlying error: " + underlying
    }
}
