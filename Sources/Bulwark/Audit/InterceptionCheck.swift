import BulwarkPolicy
import NIOCore
import NIOPosix
import X509

/// Whether the trust policy refuses interception on the path through a proxy: the check `bulwark audit` runs, a
/// security team's one-line test with an intercepting proxy (Charles, mitmproxy, a TLS inspection box).
///
/// It makes two TLS handshakes with the origin under the same configuration, and sends no HTTP request on either:
/// one through the proxy the configuration chooses for the origin, then one directly. When the proxy presented a
/// chain other than the origin's, it intercepts, and the verdict says whether the policy refused that chain. When the
/// origin's own chain arrived through the proxy, the proxy tunnels. A direct connection is not always possible
/// (egress only through the proxy); then a chain the policy trusted through the proxy cannot be told from the
/// origin's own, and the verdict says so.
///
/// ```swift
/// var configuration = BulwarkClient.Configuration(trust: manager)
/// configuration.proxy = .http(URL(string: "http://127.0.0.1:8080")!)
/// let check = try await InterceptionCheck.run(host: "api.example.com", port: 443, configuration: configuration)
/// if check.verdict == .interceptionAccepted { alert(check.description) }
/// ```
///
/// Two chains come from the same origin when their leaf certificates, or their leaf keys, are the same, or when both
/// leaves were signed by the same issuing key: a server that rotates its certificate between the two handshakes is
/// not taken for an interceptor. The issuing key is the one that signed the leaf, taken from the verified chain (or,
/// for a refused chain, the presented certificate whose key verifies the leaf's signature), never merely the second
/// certificate presented: an interceptor can present the origin's real intermediate beside its own.
public struct InterceptionCheck: Sendable, CustomStringConvertible {
    /// What one handshake showed.
    public struct Observation: Sendable {
        /// The chain the server (or the proxy posing as it) presented, leaf first; empty when there was no
        /// handshake.
        public var presentedChain: [CertificateSummary]
        /// Why the handshake did not give a trusted connection; nil when the policy trusted the chain.
        public var error: BulwarkError?

        /// Whether the policy trusted the chain.
        public var isTrusted: Bool { self.error == nil }

        /// The `sha256/` pin of the key that signed the presented leaf: the issuer's in the verified chain when the
        /// policy trusted it, else the key of a presented certificate, named as the leaf's issuer, that verifies the
        /// leaf's signature; nil when neither is known.
        public var leafIssuerKey: Pin?

        /// Whether the policy refused the presented chain (as opposed to no handshake at all).
        public var isRefused: Bool { self.error?.code == .trustRefused }

        /// An observation of a handshake: the chain presented, the key that signed its leaf when known, and the error
        /// when the connection was not trusted. Without `leafIssuerKey`, only the leaf itself tells two chains apart.
        public init(presentedChain: [CertificateSummary], error: BulwarkError?, leafIssuerKey: Pin? = nil) {
            self.presentedChain = presentedChain
            self.error = error
            self.leafIssuerKey = leafIssuerKey
        }

        /// An observation of the certificates themselves: the key that signed the leaf is taken from `verifiedChain`
        /// (the policy's verified path, nil when it refused the chain), or found by checking the leaf's signature.
        public init(presentedCertificates: [Certificate], verifiedChain: [Certificate]?, error: BulwarkError?) {
            self.init(
                presentedChain: presentedCertificates.map(CertificateSummary.init),
                error: error,
                leafIssuerKey: Self.leafIssuerKey(presented: presentedCertificates, verified: verifiedChain)
            )
        }

        static func leafIssuerKey(presented: [Certificate], verified: [Certificate]?) -> Pin? {
            // The verified chain's second certificate only when its key signed the leaf: a policy that verifies
            // nothing (`disabled`) "verifies" whatever was presented.
            if let verified, verified.count > 1, let leaf = verified.first,
                verified[1].publicKey.isValidSignature(leaf.signature, for: leaf)
            {
                return Pin.publicKey(of: verified[1])
            }
            guard let leaf = presented.first else { return nil }
            let signer = presented.dropFirst().first {
                $0.subject == leaf.issuer && $0.publicKey.isValidSignature(leaf.signature, for: leaf)
            }
            return signer.map { Pin.publicKey(of: $0) }
        }
    }

    /// The answer to "does the policy refuse interception on this path?".
    public enum Verdict: String, Sendable, Hashable, CaseIterable {
        /// The proxy presented a chain other than the origin's, and the policy refused it: nothing would be sent.
        case interceptionRefused = "interception_refused"
        /// The proxy presented a chain other than the origin's, and the policy trusted it: requests on this path can
        /// be read and changed by the proxy.
        case interceptionAccepted = "interception_accepted"
        /// The proxy tunnels: the origin's own chain arrived through it, and the policy trusted it.
        case tunnelled
        /// The policy refused the chain presented through the proxy, and no direct handshake shows whether it was
        /// the origin's own: either way nothing would be sent on this path.
        case refusedThroughProxy = "refused_through_proxy"
        /// The origin's own chain arrived through the proxy and the policy refused it: the policy refuses the origin
        /// itself, proxy or not.
        case originRefused = "origin_refused"
        /// The policy trusted the chain presented through the proxy, and no direct handshake was possible to compare
        /// it with: whether the proxy intercepts cannot be told from here.
        case undetermined
        /// No TLS handshake through the proxy: the allowlist refused the host, or the proxy refused, asked for
        /// credentials, or could not be reached.
        case proxyFailed = "proxy_failed"
    }

    /// The origin's canonical host.
    public let host: String
    /// The origin's port.
    public let port: Int
    /// The proxy's URL, without credentials (`http://127.0.0.1:8080`).
    public let proxy: String
    /// The handshake through the proxy.
    public let throughProxy: Observation
    /// The direct handshake; its error says why there was none when the origin could not be reached directly.
    public let direct: Observation
    /// The answer.
    public let verdict: Verdict

    /// The check of two observations of `host`:`port`, one through the proxy at `proxy` and one direct.
    public init(host: String, port: Int, proxy: String, throughProxy: Observation, direct: Observation) {
        self.host = host
        self.port = port
        self.proxy = proxy
        self.throughProxy = throughProxy
        self.direct = direct
        self.verdict = Self.verdict(throughProxy: throughProxy, direct: direct)
    }

    /// The verdict for two observations: a pure function of the presented chains and the policy's answers.
    static func verdict(throughProxy: Observation, direct: Observation) -> Verdict {
        // A refused proxy certificate (an HTTPS proxy's own) is the proxy failing, never a refused interception.
        guard !throughProxy.presentedChain.isEmpty, throughProxy.error?.code != .proxyUntrusted else {
            return .proxyFailed
        }
        guard !direct.presentedChain.isEmpty else {
            return throughProxy.isTrusted ? .undetermined : .refusedThroughProxy
        }
        if Self.sameOrigin(throughProxy, direct) {
            return throughProxy.isTrusted ? .tunnelled : .originRefused
        }
        return throughProxy.isTrusted ? .interceptionAccepted : .interceptionRefused
    }

    /// Whether two observed chains come from the same server: the same leaf certificate or leaf key, or leaves of
    /// the same issuer name signed by the same issuing key (``Observation/leafIssuerKey``, known from a verified chain
    /// or a checked signature, never from which certificate happened to be presented second).
    static func sameOrigin(_ one: Observation, _ other: Observation) -> Bool {
        guard let leaf = one.presentedChain.first, let otherLeaf = other.presentedChain.first else { return false }
        if leaf.certificatePin == otherLeaf.certificatePin || leaf.publicKeyPin == otherLeaf.publicKeyPin {
            return true
        }
        guard let key = one.leafIssuerKey, let otherKey = other.leafIssuerKey else { return false }
        return leaf.issuer == otherLeaf.issuer && key == otherKey
    }

    /// Runs the check: a TLS handshake with `host`:`port` through the proxy `configuration` chooses for it (its
    /// ``BulwarkClient/Configuration/proxy`` or ``BulwarkClient/Configuration/proxyOverrides``), then one directly.
    /// No HTTP request is sent on either connection, and both are closed at once. Allowlist, trust policy, TLS
    /// options, timeouts, resolve overrides and events are the configuration's; pin failures are not reported (the
    /// check provokes them on purpose).
    ///
    /// - Parameters:
    ///   - host: The origin's host name or IP address.
    ///   - port: The origin's port.
    ///   - configuration: The policy and the proxy to check.
    ///   - eventLoopGroup: The event loops the connections run on.
    /// - Throws: ``BulwarkError``: ``BulwarkError/Code/invalidConfiguration`` when no proxy applies to `host` (the
    ///   configuration sends it direct) or the chosen proxy cannot be read; ``BulwarkError/Code/invalidURL`` for a
    ///   host that cannot be read. A failed handshake is not thrown: it is part of the check.
    public static func run(
        host: String,
        port: Int,
        configuration: BulwarkClient.Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(BulwarkError) -> InterceptionCheck {
        var stream = TLSStream.Configuration(configuration)
        stream.pinFailureReporting = nil
        let canonical: String
        do {
            canonical = try HostName.canonicalize(host)
        } catch {
            throw BulwarkError(.invalidURL, host: host, detail: String(describing: error))
        }
        try TLSStream.checkPort(port, host: canonical)
        guard let proxy = try stream.proxy(forHost: canonical, port: port) else {
            throw BulwarkError.invalidConfiguration(
                "no proxy applies to \(HandshakeFailure.authority(host: canonical, port: port)): the configuration "
                    + "sends it direct"
            )
        }
        let proxied = await Self.observe(host: canonical, port: port, stream, eventLoopGroup)
        var direct = stream
        direct.proxy = .none
        direct.proxyOverrides = BulwarkClient.ProxyOverrides()
        let original = await Self.observe(host: canonical, port: port, direct, eventLoopGroup)
        return InterceptionCheck(host: canonical, port: port, proxy: proxy, throughProxy: proxied, direct: original)
    }

    private static func observe(
        host: String,
        port: Int,
        _ configuration: TLSStream.Configuration,
        _ eventLoopGroup: any EventLoopGroup
    ) async -> Observation {
        do {
            let stream = try await TLSStream.connect(
                host: host,
                port: port,
                configuration: configuration,
                eventLoopGroup: eventLoopGroup
            )
            try? await stream.close()
            return Observation(
                presentedCertificates: stream.serverTrust.presentedChain,
                verifiedChain: stream.serverTrust.trustedChain?.certificates,
                error: nil
            )
        } catch let error as BulwarkError {
            // Only the origin's refusal carries the chain presented for the origin; a proxy's is the proxy's own.
            guard error.code == .trustRefused, let refusal = error.trustRefusal else {
                return Observation(presentedChain: [], error: error)
            }
            if let certificates = refusal.presentedCertificates {
                return Observation(presentedCertificates: certificates, verifiedChain: nil, error: error)
            }
            return Observation(presentedChain: refusal.presentedChain, error: error)
        } catch {
            return Observation(
                presentedChain: [],
                error: BulwarkError(.connectFailed, host: host, detail: "no connection", underlying: "\(error)")
            )
        }
    }

    /// The verdict in a sentence a person can act on.
    public var description: String {
        let origin = HandshakeFailure.authority(host: self.host, port: self.port)
        let leaf = self.throughProxy.presentedChain.first
        let presented = leaf.map { "\"\($0.subject)\", issued by \"\($0.issuer)\"" } ?? "no chain"
        let refusal = self.throughProxy.error.map(Self.summary) ?? ""
        let directFailure = self.direct.error.map(Self.summary) ?? ""
        switch self.verdict {
        case .interceptionRefused:
            return "interception refused: the proxy presented its own certificate for \(origin) (\(presented)), "
                + "not the origin's, and the policy refused it (\(refusal)); nothing is sent on this path"
        case .interceptionAccepted:
            return "INTERCEPTION ACCEPTED: the proxy presented its own certificate for \(origin) (\(presented)), "
                + "not the origin's, and the policy trusted it; the proxy can read and change every request on this "
                + "path. Pin the origin's keys (bulwark inspect \(origin) prints them) so that only they are trusted"
        case .tunnelled:
            return "no interception: the proxy tunnels the connection; the origin's own certificate for \(origin) "
                + "(\(presented)) arrived through it and the policy trusted it"
        case .refusedThroughProxy:
            return "refused through the proxy: the policy refused the certificate presented for \(origin) "
                + "(\(presented); \(refusal)), so nothing is sent on this path; no direct connection was possible "
                + "to tell whether the proxy intercepts (\(directFailure))"
        case .originRefused:
            return "the policy refuses the origin itself: the origin's own certificate for \(origin) arrived "
                + "through the proxy unchanged, and the policy refused it, as it does directly (\(refusal))"
        case .undetermined:
            return "cannot tell: the policy trusted the certificate presented for \(origin) through the proxy "
                + "(\(presented)), and no direct connection was possible to compare it with the origin's "
                + "(\(directFailure)); if the proxy intercepts, the policy trusts its CA"
        case .proxyFailed:
            return "no TLS handshake through the proxy: \(refusal)"
        }
    }

    /// An error in one line: a trust refusal as its reasons' codes (`trust_refused: pin_mismatch`), any other error
    /// as its description's first line.
    static func summary(_ error: BulwarkError) -> String {
        if let refusal = error.trustRefusal {
            let codes = refusal.reasons.map(\.code)
            return codes.isEmpty ? "\(error.code)" : "\(error.code): " + codes.joined(separator: ", ")
        }
        return String(String(describing: error).split(separator: "\n", omittingEmptySubsequences: true).first ?? "")
    }
}
