import Foundation

/// Something security-relevant that happened: a trust decision, a refused redirect, a stripped credential.
///
/// Events carry host names, pins, reasons and URLs without query strings, never a credential, cookie or header
/// value. ``shortDescription`` is bounded and value-free, fit for metric labels.
///
/// URLs keep their paths by default. A path can hold a secret too (a reset token, a signed link): for sinks outside
/// the process, wrap the monitor in ``PathRedactingEventMonitor``, or call ``redactingURLPaths(placeholder:)``, which
/// replace the path of every URL an event carries.
public struct SecurityEvent: Sendable, CustomStringConvertible {
    /// What happened. Compare with the static members.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The stable label: `trust_evaluated`, `pin_failed`, …
        public let name: String
        private init(_ name: String) { self.name = name }

        /// A chain was trusted for a host.
        public static let trustEvaluated = Kind("trust_evaluated")
        /// A chain was refused; `reason` is the first failure's label.
        public static let trustRefused = Kind("trust_refused")
        /// A pinned key or certificate was found on the verified chain.
        public static let pinMatched = Kind("pin_matched")
        /// No pin matched and the pin set is enforced.
        public static let pinFailed = Kind("pin_failed")
        /// The host's pin set has expired and was not enforced.
        public static let pinSetExpired = Kind("pin_set_expired")
        /// A report-only pin set did not match; the connection proceeded.
        public static let reportOnlyViolation = Kind("report_only_violation")
        /// A redirect hop was followed.
        public static let redirectFollowed = Kind("redirect_followed")
        /// A redirect hop was refused.
        public static let redirectRefused = Kind("redirect_refused")
        /// A request was refused because its host is not in the allowlist.
        public static let requestRefusedByAllowlist = Kind("request_refused_by_allowlist")
        /// Credentials were removed from a request (origin change, out-of-scope URL).
        public static let credentialStripped = Kind("credential_stripped")
        /// A request outside the scope of every credential was refused (``CredentialStore/OutOfScopeRequests/refuse``).
        public static let requestRefusedOutOfScope = Kind("request_refused_out_of_scope")
        /// An option that weakens security was used (disabled validation, plain HTTP, https→http redirects).
        public static let insecureOptionUsed = Kind("insecure_option_used")
        /// Credentials, cookies and pooled connections were wiped.
        public static let signOut = Kind("sign_out")
        /// A pin-failure report was not sent: too many reports were already on their way to the collectors.
        public static let pinFailureReportDropped = Kind("pin_failure_report_dropped")
        /// A secret's memory could not be locked (`mlock`), so it may be written to swap; reported to
        /// ``SecretBytes/memoryLockMonitor``.
        public static let secretMemoryNotLocked = Kind("secret_memory_not_locked")

        /// Events were dropped because a ``QueuedEventMonitor``'s queue was full; ``DetailKey/dropped`` says how
        /// many. Delivered in their place, so that the gap is visible where it happened.
        public static let eventsDropped = Kind("events_dropped")

        /// A certificate of a trusted chain was checked against revocation data and found not revoked (the
        /// source and how long the answer holds are in the message).
        public static let revocationChecked = Kind("revocation_checked")
        /// A certificate's revocation status could not be established (no list, a stale or broken one); in soft
        /// mode the handshake went on, in hard mode it was refused.
        public static let revocationUnknown = Kind("revocation_unknown")
        /// The leaf's SCTs were checked against the Certificate Transparency policy (details: SCTs found and counted,
        /// the operators, the verdict).
        public static let certificateTransparencyChecked = Kind("ct_checked")
        /// The leaf does not meet the Certificate Transparency policy and the connection went on (report-only mode,
        /// or a stale log list); in enforce mode the handshake is refused (`trust_refused`, reason
        /// `ct_policy_not_met`).
        public static let certificateTransparencyNotMet = Kind("ct_policy_not_met")
        /// A certificate of the chain is revoked: the handshake was refused.
        public static let certificateRevoked = Kind("certificate_revoked")

        /// A server asked for a client certificate and the identity its host selects was sent (details: the
        /// certificate's subject and SHA-256 fingerprint, the pattern that selected it; never the key).
        public static let clientCertificateSent = Kind("client_certificate_sent")
        /// A server asked for a client certificate and no identity is selected for its host, so none was sent (the
        /// server then decides whether to go on). The host is the TLS server name; nil for an IP-address host.
        public static let clientCertificateWithheld = Kind("client_certificate_withheld")
        /// The client identity selected for a host pattern was replaced or removed while the client ran (details:
        /// the pattern, the new certificate's subject and fingerprint, the pooled connections drained).
        public static let clientIdentityUpdated = Kind("client_identity_updated")

        /// A signed policy bundle was verified, stored and applied while the client ran (details: its version, its
        /// expiry, the signers' public keys, the pooled connections drained).
        public static let policyUpdated = Kind("policy_updated")
        /// A policy bundle was refused and nothing changed; `reason` is the refusal's code (`rollback`, `expired`,
        /// `below_threshold`, …), so the short form reads `policy_update_refused:rollback`.
        public static let policyUpdateRefused = Kind("policy_update_refused")
        /// The client's built-in policy applies again: the bundle in force expired (freeze protection), or the stored
        /// bundle could not be used at start; `reason` says which.
        public static let policyFallback = Kind("policy_fallback")
        /// The bundle in force has expired and no newer one could be had, so its policy stays in force (the
        /// updater's default; details: its version and expiry; the message says how long ago it expired). A warning:
        /// the bundle server may be blocked.
        public static let policyStale = Kind("policy_stale")
        /// A tunnel through a proxy was set up for a host (details: ``DetailKey/proxy``, the proxy's `host:port`).
        /// The origin's trust evaluation follows, unchanged.
        public static let proxyConnected = Kind("proxy_connected")
        /// A proxy refused the tunnel to a host (details: the proxy and the HTTP ``DetailKey/status`` or the SOCKS5
        /// reply code).
        public static let proxyRefused = Kind("proxy_refused")
        /// A proxy asked for authentication (HTTP 407, or SOCKS5 username/password); details: the proxy and the
        /// schemes it offered. Never a credential.
        public static let proxyAuthRequired = Kind("proxy_auth_required")
        /// An HTTPS proxy's certificate was refused by the proxy's own trust evaluator (details: the proxy and the
        /// chain it presented; `reason` says why). Nothing was sent to the proxy or the origin.
        public static let proxyUntrusted = Kind("proxy_untrusted")

        /// Every kind, for monitors that pre-register metrics.
        public static let all: [Kind] = [
            .trustEvaluated, .trustRefused, .pinMatched, .pinFailed, .pinSetExpired, .reportOnlyViolation,
            .redirectFollowed, .redirectRefused, .requestRefusedByAllowlist, .credentialStripped,
            .requestRefusedOutOfScope, .insecureOptionUsed, .signOut, .pinFailureReportDropped,
            .secretMemoryNotLocked, .eventsDropped, .revocationChecked, .revocationUnknown, .certificateRevoked,
            .clientCertificateSent, .clientCertificateWithheld, .clientIdentityUpdated, .policyUpdated,
            .policyUpdateRefused, .policyFallback, .policyStale, .proxyConnected, .proxyRefused, .proxyAuthRequired,
            .proxyUntrusted, .certificateTransparencyChecked, .certificateTransparencyNotMet,
        ]

        /// The ``name``.
        public var description: String { self.name }
    }

    /// What happened.
    public let kind: Kind
    /// When it happened.
    public let time: Date
    /// The host concerned, when there is one.
    public let host: String?
    /// The request that caused the event, when there is one (unique within a process).
    public let requestID: UInt64?
    /// A bounded, value-free label of why (`pin_mismatch`, `scheme_downgrade`, …), or nil.
    public let reason: String?
    /// A human sentence with the specifics (from and to URLs without queries, pins, chain lines). Never secrets; URL
    /// paths are kept unless redacted (``redactingURLPaths(placeholder:)``).
    public let message: String
    /// Structured specifics (``DetailKey/from``, ``DetailKey/to``, ``DetailKey/presented``, …) as typed values, in
    /// the order the event was built with: `details[.headers]?.list`, `details[.status]?.number`. Never secrets. The
    /// URL-valued keys are ``urlDetailKeys``; ``Details/textByCode`` is the stable text form logs write.
    public let details: Details

    /// An event. Its message and details must hold no secret: no credential, header value, query or user
    /// information.
    public init(
        kind: Kind,
        host: String? = nil,
        requestID: UInt64? = nil,
        reason: String? = nil,
        message: String,
        details: Details = [:],
        time: Date = Date()
    ) {
        self.kind = kind
        self.time = time
        self.host = host
        self.requestID = requestID
        self.reason = reason
        self.message = message
        self.details = details
    }

    /// `kind` or `kind:reason`: bounded and value-free.
    public var shortDescription: String {
        guard let reason else { return self.kind.name }
        return "\(self.kind.name):\(reason)"
    }

    /// One sentence: what, where and why.
    public var description: String {
        var text = self.kind.name
        if let host { text += " [\(host)]" }
        return text + ": " + self.message
    }
}
