/// Where a proxy listens and which protocol it speaks, read from a proxy URL as curl reads one
/// (`http://proxy.example:3128`, `https://proxy.example:3129`, `socks5h://127.0.0.1:1080`, `proxy.example:3128`).
///
/// - Scheme: `http` (the default when the text has none) for an HTTP proxy (`CONNECT` tunnels); `https` for an HTTP
///   proxy reached over TLS (curl 7.52 and later); `socks5` or `socks5h` for a SOCKS5 proxy. Bulwark sends the
///   origin's host *name* to a SOCKS5 proxy in both cases (curl's `socks5h`): the client does no DNS lookup for the
///   origin, so a `socks5://` proxy never leaks the name to the local resolver. Other schemes (`socks4`, `socks4a`,
///   …) are refused.
/// - Port: the URL's, else 443 for an `https` proxy and 1080 for the others, as in curl (for HTTP proxies too:
///   curl's documented default).
/// - User information: `user:password@`, percent-decoded, becomes ``ProxyCredentials``.
/// - A path of `/` is ignored; any other path, a query or a fragment is refused.
public struct ProxyEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The protocol a proxy speaks.
    public enum Kind: String, Sendable, Hashable {
        /// An HTTP proxy: `CONNECT` tunnels for `https` origins, absolute-form requests for plain `http` ones.
        case http
        /// An HTTP proxy reached over TLS: the connection to the proxy is TLS, its certificate evaluated for the
        /// proxy's host; inside it, `CONNECT` tunnels and absolute-form requests as for ``http``.
        case https
        /// A SOCKS5 proxy (RFC 1928), with username/password authentication (RFC 1929) when credentials are given.
        case socks5
    }

    /// The protocol.
    public let kind: Kind
    /// The proxy's host, canonical (lower case, punycode, IPv6 without brackets).
    public let host: String
    /// The proxy's port.
    public let port: Int

    /// The port a proxy URL without one gets: 1080, as in curl.
    public static let defaultPort = 1080

    /// The port an `https` proxy URL without one gets: 443, as in curl.
    public static let defaultHTTPSPort = 443

    /// Whether the proxy speaks HTTP (``Kind/http`` or ``Kind/https``): it takes `CONNECT` requests, and plain-HTTP
    /// requests in absolute form.
    public var speaksHTTP: Bool { self.kind != .socks5 }

    /// A proxy at `host` and `port`.
    ///
    /// - Throws: ``ProxyURLError`` if the host is not a valid host name or IP address, or the port is outside
    ///   1...65535.
    public init(kind: Kind, host: String, port: Int) throws(ProxyURLError) {
        guard (1...65535).contains(port) else { throw ProxyURLError("the port \(port) is outside 1-65535") }
        do {
            self.host = try HostName.canonicalize(host)
        } catch {
            throw ProxyURLError("the host is not valid: \(error)")
        }
        self.kind = kind
        self.port = port
    }

    /// `host:port`, with an IPv6 address in brackets: how errors and events name the proxy.
    public var authority: String {
        self.host.contains(":") ? "[\(self.host)]:\(self.port)" : "\(self.host):\(self.port)"
    }

    /// `http://host:port`, `https://host:port` or `socks5://host:port`: never credentials.
    public var description: String { "\(self.kind.rawValue)://\(self.authority)" }

    /// Reads a proxy URL.
    ///
    /// - Returns: The endpoint, and the credentials of its user information when it has any.
    /// - Throws: ``ProxyURLError`` saying what is wrong; its text never holds the user information.
    public static func parse(
        _ text: String
    ) throws(ProxyURLError) -> (endpoint: ProxyEndpoint, credentials: ProxyCredentials?) {
        var rest = Substring(text.trimmingASCIISpaces())
        var kind = Kind.http
        if let range = rest.range(of: "://") {
            let scheme = rest[..<range.lowerBound].lowercased()
            switch scheme {
            case "http": kind = .http
            case "https": kind = .https
            case "socks5", "socks5h": kind = .socks5
            default:
                // What precedes "://" is shown only when it is a scheme: else it may be a user name and password.
                let shown =
                    Self.isScheme(Substring(scheme))
                    ? "the scheme \"\(Self.printable(scheme))\"" : "the text before \"://\""
                throw ProxyURLError("\(shown) is not a supported proxy scheme (http, https, socks5, socks5h)")
            }
            rest = rest[range.upperBound...]
        }
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            let tail = rest[end...]
            guard tail == "/" else { throw ProxyURLError("a proxy URL has no path, query or fragment") }
            rest = rest[..<end]
        }
        var credentials: ProxyCredentials?
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            credentials = try Self.credentials(userinfo)
        }
        var host = rest
        var port = kind == .https ? Self.defaultHTTPSPort : Self.defaultPort
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw ProxyURLError("an IPv6 address is not closed") }
            let after = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ProxyURLError("unexpected text after the IPv6 address") }
                port = try Self.port(after.dropFirst())
            }
        } else if let colon = host.lastIndex(of: ":") {
            port = try Self.port(host[host.index(after: colon)...])
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw ProxyURLError("the proxy URL has no host") }
        return (try ProxyEndpoint(kind: kind, host: String(host), port: port), credentials)
    }

    private static func port(_ text: Substring) throws(ProxyURLError) -> Int {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(text),
            (1...65535).contains(port)
        else {
            throw ProxyURLError("the port is not a number in 1-65535")
        }
        return port
    }

    /// `user[:password]`, percent-decoded into credentials.
    private static func credentials(_ userinfo: Substring) throws(ProxyURLError) -> ProxyCredentials {
        let colon = userinfo.firstIndex(of: ":")
        let user = colon.map { userinfo[..<$0] } ?? userinfo
        let password = colon.map { userinfo[userinfo.index(after: $0)...] } ?? ""
        guard var userBytes = Self.percentDecoded(user), var passwordBytes = Self.percentDecoded(password) else {
            throw ProxyURLError("the user information holds a broken percent-escape")
        }
        defer {
            for index in userBytes.indices { userBytes[index] = 0 }
        }
        guard let username = String(validating: userBytes, as: UTF8.self) else {
            _ = SecretBytes(wiping: &passwordBytes)
            throw ProxyURLError("the user name is not UTF-8")
        }
        do {
            return try ProxyCredentials(username: username, password: SecretBytes(wiping: &passwordBytes))
        } catch {
            throw ProxyURLError("the proxy credentials are not valid: \(error)")
        }
    }

    /// The bytes of `text` with `%XX` escapes decoded; nil for a broken escape.
    static func percentDecoded(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Self.hexValue), let low = iterator.next().flatMap(Self.hexValue)
            else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func printable(_ text: String) -> String {
        String(
            text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }.prefix(
                20
            )
        )
    }
}

/// Why a proxy URL (or a proxy environment variable) cannot be used. The text names what is wrong, never the user
/// information.
public struct ProxyURLError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong, in words.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension String {
    /// The string without leading and trailing ASCII spaces and tabs.
    package func trimmingASCIISpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = self.firstIndex(where: { !isSpace($0) }), let last = self.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(self[first...last])
    }
}
