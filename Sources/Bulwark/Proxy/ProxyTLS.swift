import BulwarkPolicy
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// The TLS connection to an HTTPS proxy, for one connection to it: the TLS handler (the proxy's host as the server
/// name, the proxy's own trust in the verification callback) and the translation of its failures into errors that
/// name the proxy.
///
/// The proxy's certificate is evaluated by the route's ``ProxyTrust`` only, in a trust manager of its own: the
/// origin's evaluators never see the proxy's chain, and the proxy's evaluator never sees the origin's (the origin's
/// TLS runs later, inside the tunnel, with a verification of its own).
struct ProxyTLS: Sendable {
    let route: ProxyRoute
    let context: NIOSSLContext
    let verification: TrustVerification
    let minimumVersion: BulwarkClient.TLSOptions.Version

    /// The TLS handler, first in the connection's pipeline; made on the connection's event loop.
    func handler() throws -> NIOSSLClientHandler {
        let verification = self.verification
        let host = self.route.endpoint.host
        return try NIOSSLClientHandler(
            context: self.context,
            serverHostname: HostName.isIPAddress(host) ? nil : host,
            customVerificationCallbackWithMetadata: { certificates, promise in
                verification.verify(certificates, promise: promise)
            }
        )
    }

    /// The error for a failed connection to the proxy, for a request to `host`: ``BulwarkError/Code/proxyUntrusted``
    /// when the proxy's trust refused its certificate, ``BulwarkError/Code/proxyHandshakeFailed`` when the TLS
    /// handshake with the proxy failed otherwise; nil when the failure came after that handshake (the tunnel's own
    /// errors are named elsewhere).
    func error(for error: any Error, host: String) -> BulwarkError? {
        if let refusal = self.verification.decision?.refusal {
            let reasons = refusal.reasons.map { String(describing: $0).split(separator: "\n").first.map(String.init) }
            return BulwarkError(
                .proxyUntrusted,
                host: host,
                detail: "the proxy at \(self.route.authority) is not trusted: its certificate was refused for "
                    + "\(self.route.endpoint.host) (\(reasons.compactMap { $0 }.joined(separator: "; "))); nothing "
                    + "was sent to the proxy or to \(host)",
                underlying: self.verification.parseFailures,
                trustRefusal: refusal
            )
        }
        if error is BulwarkError || error is ProxyHandshakeFailure || self.verification.decision?.isTrusted == true {
            return nil
        }
        let failure = HandshakeFailure(error, host: self.route.endpoint.host, port: self.route.endpoint.port)
        let words = failure.error(minimum: self.minimumVersion)
        return BulwarkError(
            .proxyHandshakeFailed,
            host: host,
            detail: "the TLS handshake with the proxy at \(self.route.authority) failed: "
                + (words.detail ?? "no reason given"),
            underlying: failure.underlying
        )
    }

    /// `proxy_untrusted`: the proxy, why its certificate was refused, and the chain it presented.
    func untrustedEvent(host: String, error: BulwarkError) -> SecurityEvent {
        let refusal = error.trustRefusal
        return SecurityEvent(
            kind: .proxyUntrusted,
            host: host,
            reason: refusal?.shortDescription ?? "refused",
            message: error.detail ?? "the proxy at \(self.route.authority) is not trusted",
            details: [
                .proxy: .text(self.route.authority),
                .presented: .lines(refusal?.presentedChain.map(\.pinLine) ?? []),
            ]
        )
    }
}

extension Connector {
    /// The TLS context of connections to HTTPS proxies, made on first use: the client's TLS options (minimum version,
    /// cipher suites), ALPN `http/1.1` only (a `CONNECT` is an HTTP/1.1 request here), no client certificate, and
    /// BoringSSL's own verification replaced by the trust callback.
    final class ProxyTLSContext: Sendable {
        private let context = NIOLockedValueBox<NIOSSLContext?>(nil)

        init() {}

        func context(make: () throws -> NIOSSLContext) throws -> NIOSSLContext {
            if let context = self.context.withLockedValue({ $0 }) { return context }
            let made = try make()
            return self.context.withLockedValue { context in
                if let context { return context }
                context = made
                return made
            }
        }
    }

    /// The TLS of one connection to the HTTPS proxy of `route`, evaluated by `trust`.
    ///
    /// - Throws: ``BulwarkError`` with ``BulwarkError/Code/invalidConfiguration`` when the TLS library refuses the
    ///   options (checked when the client was made, so not expected).
    func proxyTLS(for route: ProxyRoute, trust: ProxyTrust) throws -> ProxyTLS {
        let options = self.settings.tls
        let context: NIOSSLContext
        do {
            context = try self.proxyTLSContext.context {
                var tls = Self.tlsConfiguration(options)
                tls.applicationProtocols = ["http/1.1"]
                return try NIOSSLContext(configuration: tls)
            }
        } catch {
            throw BulwarkError.invalidConfiguration(
                "the TLS library refused the TLS options for the proxy at \(route.authority)",
                underlying: String(reflecting: error)
            )
        }
        let verification = TrustVerification(
            manager: trust.manager,
            host: route.endpoint.host,
            port: route.endpoint.port,
            monitor: self.settings.eventMonitor,
            reporter: nil,
            cache: self.decisionCache,
            parsedCertificates: self.parsedCertificates
        )
        return ProxyTLS(
            route: route,
            context: context,
            verification: verification,
            minimumVersion: options.minimumVersion
        )
    }
}
