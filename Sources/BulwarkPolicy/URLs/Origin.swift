import Foundation

/// The scheme, canonical host and effective port of an `http` or `https` URL (RFC 6454): what decides whether two
/// URLs may share credentials, connections and cookies' `Secure` flag. Two origins are equal exactly when they are
/// the same origin.
///
/// Every reader of a URL's origin in Bulwark builds one of these (the client's request target, redirect resolution,
/// credential scopes, the cookie jar), so a host is read and canonicalized one way:
///
/// - the host of a Foundation `URL` is read by ``rawHost(of:)``: escapes of non-ASCII bytes are decoded (Foundation
///   keeps `https://bücher.example/` as `b%C3%BCcher.example`), escapes of ASCII bytes are kept so that the host is
///   refused for its `%` (`a%2eb.example` is not `a.b.example`);
/// - the host is canonicalized by ``HostName/canonicalize(_:)``: lower case, punycode, no trailing dot, IP literals
///   by ``IPAddress`` (IPv6 without brackets), every ambiguous spelling refused;
/// - the port is the URL's, or the scheme's default (443, 80), and must be 1-65535.
package struct Origin: Hashable, Sendable, CustomStringConvertible {
    /// `https` or `http`.
    package let scheme: String
    /// The canonical host: lower-case ASCII, punycode, no trailing dot, IPv6 without brackets.
    package let host: String
    /// The effective port: the explicit one, or the scheme's default.
    package let port: Int

    /// The origin of `scheme` (any case), `host` (canonicalized here) and `port` (nil: the scheme's default).
    ///
    /// - Throws: ``URLReadingError`` for a scheme other than `http` and `https`, an empty or invalid host, or a port
    ///   outside 1-65535.
    package init(scheme: String, host: String, port: Int?) throws(URLReadingError) {
        let scheme = scheme.lowercased()
        guard scheme == "https" || scheme == "http" else {
            throw URLReadingError(.unsupportedScheme, host: host.isEmpty ? nil : host)
        }
        guard !host.isEmpty else {
            throw URLReadingError(.missingHost, host: nil)
        }
        let canonical: String
        do throws(HostPatternError) {
            canonical = try HostName.canonicalize(host)
        } catch {
            throw URLReadingError(.invalidHost, host: host, hostError: error)
        }
        let port = port ?? (scheme == "https" ? 443 : 80)
        guard (1...65535).contains(port) else {
            throw URLReadingError(.invalidPort, host: canonical, port: port)
        }
        self.scheme = scheme
        self.host = canonical
        self.port = port
    }

    /// The origin of `url` (made absolute first). User information is not looked at: ``RequestURL`` refuses it.
    ///
    /// - Throws: ``URLReadingError`` as ``init(scheme:host:port:)`` does; ``URLReadingError/Code/unsupportedScheme``
    ///   for a relative URL.
    package init(_ url: URL) throws(URLReadingError) {
        let url = url.absoluteURL
        let host = Self.rawHost(of: url)
        guard let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http" else {
            throw URLReadingError(.unsupportedScheme, host: host)
        }
        guard let host else {
            throw URLReadingError(.missingHost, host: nil)
        }
        try self.init(scheme: scheme, host: host, port: url.port)
    }

    /// Whether requests to this origin use TLS.
    package var isSecure: Bool { self.scheme == "https" }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`: the port only when it is not the scheme's default. This is also
    /// the `Host` header's value.
    package var authority: String {
        // A byte search: with Foundation imported, `contains(":")` is NSString's `range(of:)`. This is built for
        // every request (its `Host` header).
        var text = self.host.utf8.contains(UInt8(ascii: ":")) ? "[" + self.host + "]" : self.host
        if self.port != Self.defaultPort(for: self.scheme) {
            // Appended rather than interpolated: no interpolation buffer is made for it.
            text += ":"
            text += String(self.port)
        }
        return text
    }

    /// `https://api.example.com:443`: scheme, host and port, the port always written.
    package var description: String {
        "\(self.scheme)://\(self.host.contains(":") ? "[\(self.host)]" : self.host):\(self.port)"
    }

    /// The port a URL without one uses: 443 for `https` and `wss`, 80 for `http` and `ws`, nil otherwise.
    package static func defaultPort(for scheme: String) -> Int? {
        // An origin's scheme is already lower case: answer without lowercasing a copy.
        switch scheme {
        case "https": return 443
        case "http": return 80
        default: break
        }
        switch scheme.lowercased() {
        case "https", "wss": return 443
        case "http", "ws": return 80
        default: return nil
        }
    }

    /// The host of `url` (made absolute first) as written, ready for ``HostName/canonicalize(_:)``, or nil if it has
    /// none: escapes of non-ASCII bytes decoded (an internationalized name, as the WHATWG URL Standard reads it),
    /// escapes of ASCII bytes kept, so that the canonicalizer refuses the `%` rather than read a name that other
    /// parsers read differently.
    package static func rawHost(of url: URL) -> String? {
        guard let encoded = url.absoluteURL.host(percentEncoded: true), !encoded.isEmpty else {
            return nil
        }
        guard encoded.utf8.contains(UInt8(ascii: "%")) else {
            return encoded
        }
        let bytes = Array(encoded.utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "%") else {
                decoded.append(bytes[index])
                index += 1
                continue
            }
            guard index + 2 < bytes.count,
                let value = UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16),
                value >= 0x80
            else {
                return encoded
            }
            decoded.append(value)
            index += 3
        }
        let text = String(decoding: decoded, as: UTF8.self)
        return text.utf8.elementsEqual(decoded) ? text : encoded
    }
}
