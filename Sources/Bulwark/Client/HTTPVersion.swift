/// The version of HTTP a response arrived over: HTTP/1.1 or HTTP/2.
///
/// Compare with ``http1_1`` and ``http2``, or order versions (`response.httpVersion >= .http2`). ``description`` is
/// the version as RFC 9110 names it (`HTTP/1.1`, `HTTP/2`); ``alpnIdentifier`` is the protocol's ALPN identifier
/// (`http/1.1`, `h2`), as negotiated in the TLS handshake.
public struct HTTPVersion: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The major version: 1 for HTTP/1.1, 2 for HTTP/2.
    public var major: Int
    /// The minor version: 1 for HTTP/1.1, 0 for HTTP/2.
    public var minor: Int

    /// The version `major.minor`.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// The version an ALPN identifier (RFC 7301) names: `http/1.0`, `http/1.1`, `h2` or `h3`; `nil` for any other
    /// identifier.
    public init?(alpnIdentifier: String) {
        switch alpnIdentifier {
        case "http/1.0": self.init(major: 1, minor: 0)
        case "http/1.1": self.init(major: 1, minor: 1)
        case "h2": self.init(major: 2, minor: 0)
        case "h3": self.init(major: 3, minor: 0)
        default: return nil
        }
    }

    /// HTTP/1.1.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// HTTP/2.
    public static let http2 = HTTPVersion(major: 2, minor: 0)

    /// The version as RFC 9110 names it: `HTTP/1.1`, `HTTP/1.0`, `HTTP/2` (no minor version from 2 on, unless it is
    /// not 0).
    public var description: String {
        self.major >= 2 && self.minor == 0 ? "HTTP/\(self.major)" : "HTTP/\(self.major).\(self.minor)"
    }

    /// The protocol's ALPN identifier (RFC 7301), as negotiated in the TLS handshake and printed by
    /// `bulwark fetch`: `http/1.1`, `h2` (`http/1.0`, `h3` for those versions).
    public var alpnIdentifier: String {
        self.major >= 2 && self.minor == 0 ? "h\(self.major)" : "http/\(self.major).\(self.minor)"
    }

    /// Whether `lhs` is an earlier version than `rhs`: by major version, then by minor version.
    public static func < (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }
}
