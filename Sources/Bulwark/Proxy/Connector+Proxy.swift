import BulwarkPolicy
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The proxies that asked a connector's connections for credentials (a 407 with a Basic challenge): later tunnels
/// through them send the credentials with the first `CONNECT`, without waiting for the 407 again.
final class ProxyAuthenticationMemory: Sendable {
    private let routes = NIOLockedValueBox<Set<ProxyRoute>>([])

    func wantsCredentials(_ route: ProxyRoute) -> Bool {
        self.routes.withLockedValue { $0.contains(route) }
    }

    func remember(_ route: ProxyRoute) {
        _ = self.routes.withLockedValue { $0.insert(route) }
    }
}

extension Connector {
    /// Opens a TCP connection to the proxy of `route` and sets up a tunnel to `host`:`port` through it; the future
    /// gives the channel, positioned right after the tunnel's setup (the next handler added sees the origin's
    /// bytes), and fails with a ``BulwarkError`` naming the proxy.
    ///
    /// Nothing about the origin but its host name and port is sent to the proxy; a proxy that answers an HTTP
    /// `CONNECT` with 407 and a Basic challenge gets the route's credentials on one new connection (and on every later
    /// tunnel). The connect timeout bounds the TCP connection to the proxy, and again the proxy's handshake (which
    /// includes the proxy's own connection to the origin); `deadline` bounds both.
    func openTunnel(
        through route: ProxyRoute,
        host: String,
        port: Int,
        on eventLoop: any EventLoop,
        deadline: NIODeadline?
    ) -> EventLoopFuture<any Channel> {
        let sendCredentials =
            route.credentials != nil
            && (route.endpoint.kind == .socks5 || self.proxyAuthentication.wantsCredentials(route))
        return self.openTunnelOnce(
            through: route,
            host: host,
            port: port,
            on: eventLoop,
            deadline: deadline,
            sendCredentials: sendCredentials
        ).flatMapError { error in
            let failure = error as? ProxyHandshakeFailure
            self.record(failure, route: route, host: host)
            if case .httpAuthRequired(let challenges) = failure, !sendCredentials, route.credentials != nil,
                challenges.isEmpty || challenges.contains(where: { $0.lowercased() == "basic" })
            {
                self.proxyAuthentication.remember(route)
                return self.openTunnelOnce(
                    through: route,
                    host: host,
                    port: port,
                    on: eventLoop,
                    deadline: deadline,
                    sendCredentials: true
                ).flatMapError { error in
                    let failure = error as? ProxyHandshakeFailure
                    self.record(failure, route: route, host: host)
                    return eventLoop.makeFailedFuture(
                        Self.proxyError(error, route: route, host: host, sentCredentials: true)
                    )
                }
            }
            return eventLoop.makeFailedFuture(
                Self.proxyError(error, route: route, host: host, sentCredentials: sendCredentials)
            )
        }.map { channel in
            self.settings.eventMonitor.record(
                SecurityEvent(
                    kind: .proxyConnected,
                    host: host,
                    message: "tunnel to \(HandshakeFailure.authority(host: host, port: port)) through the proxy at "
                        + route.authority,
                    details: [.proxy: .text(route.authority), .port: .number(port)]
                )
            )
            return channel
        }
    }

    /// Opens a TLS connection to the HTTPS proxy of `route` for a plain-HTTP request to `host` (sent in absolute form
    /// inside it); the future gives the channel once the proxy's certificate is trusted, and fails with a
    /// ``BulwarkError`` naming the proxy (``BulwarkError/Code/proxyUntrusted`` for a refused certificate).
    func openProxyConnection(
        to route: ProxyRoute,
        forHost host: String,
        port: Int,
        on eventLoop: any EventLoop,
        deadline: NIODeadline?
    ) -> EventLoopFuture<any Channel> {
        self.openTunnelOnce(
            through: route,
            host: host,
            port: port,
            tunnel: false,
            on: eventLoop,
            deadline: deadline,
            sendCredentials: false
        ).flatMapError { error in
            eventLoop.makeFailedFuture(Self.proxyError(error, route: route, host: host, sentCredentials: false))
        }
    }

    /// One connection to the proxy, and the tunnel through it unless `tunnel` is false. For an HTTPS proxy the TLS
    /// handler goes first in the pipeline, and the tunnel handler starts when its handshake completed; its failure
    /// is turned into a ``BulwarkError`` naming the proxy here.
    private func openTunnelOnce(
        through route: ProxyRoute,
        host: String,
        port: Int,
        tunnel setsUpTunnel: Bool = true,
        on eventLoop: any EventLoop,
        deadline: NIODeadline?,
        sendCredentials: Bool
    ) -> EventLoopFuture<any Channel> {
        let tunnel = eventLoop.makePromise(of: Void.self)
        let credentials = sendCredentials ? route.credentials : nil
        let kind = route.endpoint.kind
        let connectLimit = Self.limit(self.settings.timeouts.connect, by: deadline)
        let proxyTLS: ProxyTLS?
        do {
            proxyTLS = try route.trust.map { try self.proxyTLS(for: route, trust: $0) }
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(connectLimit.timeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelOption(.recvAllocator, value: Self.receiveAllocator)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let proxyTLS { try channel.pipeline.syncOperations.addHandler(try proxyTLS.handler()) }
                    let handler = ProxyTunnelHandler(
                        kind: kind,
                        host: host,
                        port: port,
                        credentials: credentials,
                        tunnel: setsUpTunnel,
                        promise: tunnel
                    )
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        let handshakeTimeout = self.settings.timeouts.connect
        let address = self.resolve(host: route.endpoint.host, port: route.endpoint.port)
        return Self.connect(bootstrap, host: address.0, port: address.1)
            .flatMapError { error -> EventLoopFuture<any Channel> in
                let mapped = Self.mapConnectError(
                    error,
                    host: route.endpoint.host,
                    port: route.endpoint.port,
                    deadlineBound: connectLimit.deadlineBound
                )
                let failure = BulwarkError(
                    mapped.code,
                    host: host,
                    detail: "through the proxy at \(route.authority): "
                        + (mapped.detail ?? "the connection to the proxy timed out"),
                    underlying: mapped.debugDescription
                )
                tunnel.fail(failure)
                return eventLoop.makeFailedFuture(failure)
            }
            .flatMap { channel in
                let limit = Self.limit(handshakeTimeout, by: deadline)
                let timer = eventLoop.scheduleTask(in: limit.timeout) {
                    tunnel.fail(
                        BulwarkError(
                            limit.deadlineBound ? .deadlineExceeded : .connectTimeout,
                            host: host,
                            detail: "the proxy at \(route.authority) did not set up the tunnel in time"
                        )
                    )
                    channel.close(promise: nil)
                }
                tunnel.futureResult.whenComplete { _ in timer.cancel() }
                return tunnel.futureResult.map { channel }.flatMapError { error in
                    channel.close(promise: nil)
                    if let proxyTLS, let failure = proxyTLS.error(for: error, host: host) {
                        if failure.code == .proxyUntrusted {
                            self.settings.eventMonitor.record(proxyTLS.untrustedEvent(host: host, error: failure))
                        }
                        return eventLoop.makeFailedFuture(failure)
                    }
                    return eventLoop.makeFailedFuture(error)
                }
            }
    }

    /// Emits the event of a proxy's refusal or authentication request.
    private func record(_ failure: ProxyHandshakeFailure?, route: ProxyRoute, host: String) {
        let event: SecurityEvent
        switch failure {
        case .httpAuthRequired(let challenges):
            event = SecurityEvent(
                kind: .proxyAuthRequired,
                host: host,
                reason: "http_407",
                message: "the proxy at \(route.authority) asked for authentication (407)",
                details: [.proxy: .text(route.authority), .status: .number(407), .schemes: .list(challenges)]
            )
        case .httpRefused(let status, _):
            event = SecurityEvent(
                kind: .proxyRefused,
                host: host,
                reason: "http_status",
                message: "the proxy at \(route.authority) refused the tunnel with \(status)",
                details: [.proxy: .text(route.authority), .status: .number(status)]
            )
        case .socksRefused(let reply):
            event = SecurityEvent(
                kind: .proxyRefused,
                host: host,
                reason: "socks_reply",
                message: "the SOCKS5 proxy at \(route.authority) refused the connection: "
                    + ProxyHandshakeFailure.words(socksReply: reply),
                details: [.proxy: .text(route.authority), .status: .number(Int(reply))]
            )
        case .socksNoAcceptableMethod(false):
            event = SecurityEvent(
                kind: .proxyAuthRequired,
                host: host,
                reason: "socks_auth",
                message: "the SOCKS5 proxy at \(route.authority) requires username/password authentication",
                details: [.proxy: .text(route.authority), .schemes: .list(["username/password"])]
            )
        default:
            return
        }
        self.settings.eventMonitor.record(event)
    }

    /// The ``BulwarkError`` for a failed tunnel.
    static func proxyError(_ error: any Error, route: ProxyRoute, host: String, sentCredentials: Bool) -> BulwarkError {
        if let error = error as? BulwarkError { return error }
        if let failure = error as? ProxyHandshakeFailure {
            return failure.error(host: host, proxy: route.authority, sentCredentials: sentCredentials)
        }
        let closed = ProxyHandshakeFailure.closed.error(host: host, proxy: route.authority)
        return BulwarkError(
            closed.code,
            host: host,
            detail: closed.detail,
            underlying: String(reflecting: error)
        )
    }
}

extension Connector {
    /// The channel of a plain-HTTP connection: to the origin, to an HTTP proxy (which gets absolute-form requests),
    /// to an HTTPS proxy (the same, inside TLS to the proxy), or through a SOCKS5 tunnel.
    func openPlain(
        _ bootstrap: ClientBootstrap,
        host: String,
        port: Int,
        target: RequestTarget,
        proxy: ProxyRoute?,
        on eventLoop: any EventLoop,
        deadline: NIODeadline?
    ) -> EventLoopFuture<any Channel> {
        guard let proxy else { return Self.connect(bootstrap, host: host, port: port) }
        switch proxy.endpoint.kind {
        case .https:
            return self.openProxyConnection(
                to: proxy,
                forHost: target.host,
                port: target.port,
                on: eventLoop,
                deadline: deadline
            )
        case .http:
            let address = self.resolve(host: proxy.endpoint.host, port: proxy.endpoint.port)
            return Self.connect(bootstrap, host: address.0, port: address.1).flatMapError { error in
                let mapped = Self.mapConnectError(error, host: proxy.endpoint.host, port: proxy.endpoint.port)
                return eventLoop.makeFailedFuture(
                    BulwarkError(
                        mapped.code,
                        host: target.host,
                        detail: "through the proxy at \(proxy.authority): " + (mapped.detail ?? "no connection"),
                        underlying: mapped.debugDescription
                    )
                )
            }
        case .socks5:
            return self.openTunnel(
                through: proxy,
                host: target.host,
                port: target.port,
                on: eventLoop,
                deadline: deadline
            )
        }
    }
}

extension RequestExecutor {
    /// A plain-HTTP request for an HTTP or HTTPS proxy: the absolute-form target (`http://host:port/path?query`, RFC 9112
    /// section 3.2.2) and, when the proxy has credentials, `Proxy-Authorization: Basic` (sent with every request, as
    /// the proxy reads it and drops it before forwarding), whose token the connection's ``ProxyAuthorizationWriter``
    /// writes from the credentials' bytes in place of its marker: the token is never in a `String`.
    static func absoluteFormHead(
        method: HTTPMethod,
        headers: HTTPHeaders,
        target: RequestTarget,
        proxy: ProxyRoute
    ) -> HTTPRequestHead {
        var headers = headers
        headers.remove(name: "proxy-authorization")
        if proxy.credentials != nil {
            headers.add(name: ProxyAuthorizationWriter.headerName, value: "Basic " + ProxyAuthorizationWriter.marker)
        }
        let uri = "http://" + target.hostHeader + target.pathAndQuery
        return HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers)
    }
}
