import BulwarkPolicy

/// Why a proxy handshake (an HTTP `CONNECT` or a SOCKS5 negotiation) did not give a tunnel: found by the parsers
/// (``HTTPConnectResponseParser``, ``SOCKS5Handshake``) and the handlers, turned into a ``BulwarkError`` naming the
/// proxy by ``error(host:proxy:)``.
enum ProxyHandshakeFailure: Error, Equatable, Sendable {
    /// The proxy's answer is not the protocol (`what` says what was wrong).
    case garbage(String)
    /// The proxy granted the tunnel and sent `count` bytes right after, before the client's TLS hello: nothing may
    /// come from the origin before the client speaks, so they are refused.
    case bytesAfterTunnel(count: Int)
    /// The proxy closed the connection before the tunnel was set up.
    case closed
    /// An HTTP proxy answered the `CONNECT` with a status other than 2xx and 407.
    case httpRefused(status: Int, reason: String)
    /// An HTTP proxy answered 407; `challenges` are the schemes of its `Proxy-Authenticate` fields.
    case httpAuthRequired(challenges: [String])
    /// A SOCKS5 proxy answered the connect request with a failure `reply` code.
    case socksRefused(reply: UInt8)
    /// A SOCKS5 proxy accepts none of the offered authentication methods.
    case socksNoAcceptableMethod(offeredCredentials: Bool)
    /// A SOCKS5 proxy refused the username and password.
    case socksAuthFailed(status: UInt8)

    /// RFC 1928 section 6's reply codes, in words.
    static func words(socksReply reply: UInt8) -> String {
        switch reply {
        case 0x01: return "general SOCKS server failure"
        case 0x02: return "connection not allowed by ruleset"
        case 0x03: return "network unreachable"
        case 0x04: return "host unreachable"
        case 0x05: return "connection refused"
        case 0x06: return "TTL expired"
        case 0x07: return "command not supported"
        case 0x08: return "address type not supported"
        default: return "unassigned reply code"
        }
    }

    /// The error for a request to `host` through the proxy at `proxy` (`host:port`), in words that name the proxy.
    func error(host: String, proxy: String, sentCredentials: Bool = false) -> BulwarkError {
        switch self {
        case .garbage(let what):
            return BulwarkError(
                .proxyHandshakeFailed,
                host: host,
                detail: "the proxy at \(proxy) did not answer as a proxy: \(what)"
            )
        case .bytesAfterTunnel(let count):
            return BulwarkError(
                .proxyHandshakeFailed,
                host: host,
                detail: "the proxy at \(proxy) sent \(count) bytes after granting the tunnel, before the TLS "
                    + "handshake; the tunnel was refused"
            )
        case .closed:
            return BulwarkError(
                .proxyHandshakeFailed,
                host: host,
                detail: "the proxy at \(proxy) closed the connection before the tunnel was set up"
            )
        case .httpRefused(let status, let reason):
            let why = reason.isEmpty ? "" : " \(reason)"
            return BulwarkError(
                .proxyRefused,
                host: host,
                detail: "the proxy at \(proxy) refused the tunnel to \(host): \(status)\(why)"
            )
        case .httpAuthRequired(let challenges):
            let offered = challenges.isEmpty ? "" : " (it offers \(challenges.joined(separator: ", ")))"
            if sentCredentials {
                return BulwarkError(
                    .proxyAuthFailed,
                    host: host,
                    detail: "the proxy at \(proxy) refused the proxy credentials: 407 Proxy Authentication Required"
                )
            }
            let unsupported = challenges.filter { $0.lowercased() != "basic" }
            if !challenges.isEmpty, unsupported.count == challenges.count {
                return BulwarkError(
                    .proxyAuthSchemeUnsupported,
                    host: host,
                    detail: "the proxy at \(proxy) requires \(unsupported.joined(separator: " or ")) "
                        + "authentication (407), which Bulwark does not support; only Basic is"
                )
            }
            return BulwarkError(
                .proxyAuthRequired,
                host: host,
                detail: "the proxy at \(proxy) requires authentication: 407 Proxy Authentication Required\(offered); "
                    + "no proxy credentials are configured"
            )
        case .socksRefused(let reply):
            return BulwarkError(
                .proxyRefused,
                host: host,
                detail: "the SOCKS5 proxy at \(proxy) refused the connection to \(host): "
                    + "\(Self.words(socksReply: reply)) (reply \(reply))"
            )
        case .socksNoAcceptableMethod(let offeredCredentials):
            if offeredCredentials {
                return BulwarkError(
                    .proxyRefused,
                    host: host,
                    detail: "the SOCKS5 proxy at \(proxy) accepts neither no authentication nor username/password"
                )
            }
            return BulwarkError(
                .proxyAuthRequired,
                host: host,
                detail: "the SOCKS5 proxy at \(proxy) requires authentication; no proxy credentials are configured"
            )
        case .socksAuthFailed(let status):
            return BulwarkError(
                .proxyAuthFailed,
                host: host,
                detail: "the SOCKS5 proxy at \(proxy) refused the username and password (status \(status))"
            )
        }
    }
}
