/// Why a redirect was not followed: one value per rule.
///
/// ``code`` is a stable, bounded, value-free label (`host_not_allowed`, `loop`, …) for metrics, events and the
/// `reason` field of `bulwark redirect-check --json`; ``description`` is the detail sentence. Neither ever holds a
/// query string, user information or a header value.
///
/// A struct wrapping a private enum, so that a new rule can be added without breaking users' exhaustive `switch`es
/// (see ``TrustFailureReason`` for why). Make a reason with the leading-dot factories (`.loop(url:)`,
/// `.schemeDowngrade`), tell reasons apart by ``code`` and read their data through the accessors (``host``,
/// ``scheme``, …), which are `nil` for reasons that do not carry it. Two reasons are equal when they are the same
/// reason with the same data.
public struct RedirectRefusalReason: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Backing: Hashable, Sendable {
        case notARedirect(status: Int)
        case tooManyHops(limit: Int)
        case missingLocation
        case emptyLocation
        case locationTooLong(length: Int, limit: Int)
        case controlCharacter(codePoint: UInt32)
        case backslash
        case unparsable(detail: String)
        case schemeWithoutAuthority(scheme: String)
        case userInfo
        case percentInHost
        case nonASCIIHost
        case invalidHost(detail: String)
        case invalidPort
        case schemeNotAllowed(scheme: String)
        case schemeDowngrade
        case hostNotAllowed(host: String)
        case portChange(from: Int, to: Int)
        case loop(url: String)
        case bodyNotReplayable(method: String)
        case refusedByHandler(detail: String)
    }

    private let backing: Backing

    private init(_ backing: Backing) {
        self.backing = backing
    }

    /// The status is not one of 301, 302, 303, 307 and 308 (300, 304 and 305 are never followed).
    public static func notARedirect(status: Int) -> RedirectRefusalReason {
        RedirectRefusalReason(.notARedirect(status: status))
    }

    /// Following would exceed the policy's hop limit.
    public static func tooManyHops(limit: Int) -> RedirectRefusalReason {
        RedirectRefusalReason(.tooManyHops(limit: limit))
    }

    /// The response has no `Location` header.
    public static let missingLocation = RedirectRefusalReason(.missingLocation)

    /// The `Location` header is empty (or only whitespace).
    public static let emptyLocation = RedirectRefusalReason(.emptyLocation)

    /// The `Location` is longer than the limit (8 KiB).
    public static func locationTooLong(length: Int, limit: Int) -> RedirectRefusalReason {
        RedirectRefusalReason(.locationTooLong(length: length, limit: limit))
    }

    /// The `Location` holds a control character (CR and LF included) or an invisible formatting character.
    public static func controlCharacter(codePoint: UInt32) -> RedirectRefusalReason {
        RedirectRefusalReason(.controlCharacter(codePoint: codePoint))
    }

    /// The `Location` holds a backslash, which browsers read as a slash.
    public static let backslash = RedirectRefusalReason(.backslash)

    /// The `Location` is not a URI reference.
    public static func unparsable(detail: String) -> RedirectRefusalReason {
        RedirectRefusalReason(.unparsable(detail: detail))
    }

    /// `http:` or `https:` not followed by `//`, such as `https:evil.example`: parsers disagree on what it means.
    public static func schemeWithoutAuthority(scheme: String) -> RedirectRefusalReason {
        RedirectRefusalReason(.schemeWithoutAuthority(scheme: scheme))
    }

    /// The `Location` carries user information (`user:password@host`).
    public static let userInfo = RedirectRefusalReason(.userInfo)

    /// The host of the `Location` holds `%`.
    public static let percentInHost = RedirectRefusalReason(.percentInHost)

    /// The host of the `Location` holds non-ASCII characters; internationalized names must arrive in punycode.
    public static let nonASCIIHost = RedirectRefusalReason(.nonASCIIHost)

    /// The host of the `Location` is not a valid host name or IP address (see ``HostName/canonicalize(_:)``).
    public static func invalidHost(detail: String) -> RedirectRefusalReason {
        RedirectRefusalReason(.invalidHost(detail: detail))
    }

    /// The port of the `Location` is not a number from 1 to 65535.
    public static let invalidPort = RedirectRefusalReason(.invalidPort)

    /// The scheme is not allowed: anything but `http` and `https`, or `http` when the policy allows only `https`.
    public static func schemeNotAllowed(scheme: String) -> RedirectRefusalReason {
        RedirectRefusalReason(.schemeNotAllowed(scheme: scheme))
    }

    /// An `https` request redirected to `http`.
    public static let schemeDowngrade = RedirectRefusalReason(.schemeDowngrade)

    /// The target host is neither the host the chain started at nor in the allowlist.
    public static func hostNotAllowed(host: String) -> RedirectRefusalReason {
        RedirectRefusalReason(.hostNotAllowed(host: host))
    }

    /// The effective port changes to a port the policy does not list.
    public static func portChange(from: Int, to: Int) -> RedirectRefusalReason {
        RedirectRefusalReason(.portChange(from: from, to: to))
    }

    /// The target was already requested in this chain (compared without the fragment). `url` has no query.
    public static func loop(url: String) -> RedirectRefusalReason {
        RedirectRefusalReason(.loop(url: url))
    }

    /// The hop would resend the request body, but the body was streamed and cannot be sent again.
    public static func bodyNotReplayable(method: String) -> RedirectRefusalReason {
        RedirectRefusalReason(.bodyNotReplayable(method: method))
    }

    /// The policy's per-hop handler refused the hop.
    public static func refusedByHandler(detail: String) -> RedirectRefusalReason {
        RedirectRefusalReason(.refusedByHandler(detail: detail))
    }

    /// A stable, bounded, value-free label of the reason (`host_not_allowed`, `loop`, …), for metrics, events,
    /// the `reason` field of `bulwark redirect-check --json` and comparisons. A code, once published, keeps its
    /// meaning; new reasons bring new codes.
    public var code: String {
        switch self.backing {
        case .notARedirect: return "not_a_redirect"
        case .tooManyHops: return "too_many_hops"
        case .missingLocation: return "missing_location"
        case .emptyLocation: return "empty_location"
        case .locationTooLong: return "location_too_long"
        case .controlCharacter: return "control_character"
        case .backslash: return "backslash"
        case .unparsable: return "unparsable"
        case .schemeWithoutAuthority: return "scheme_without_authority"
        case .userInfo: return "userinfo"
        case .percentInHost: return "percent_in_host"
        case .nonASCIIHost: return "non_ascii_host"
        case .invalidHost: return "invalid_host"
        case .invalidPort: return "invalid_port"
        case .schemeNotAllowed: return "scheme_not_allowed"
        case .schemeDowngrade: return "scheme_downgrade"
        case .hostNotAllowed: return "host_not_allowed"
        case .portChange: return "port_change"
        case .loop: return "loop"
        case .bodyNotReplayable: return "body_not_replayable"
        case .refusedByHandler: return "refused_by_handler"
        }
    }

    /// The same as ``code``: a bounded, value-free label (`"host_not_allowed"`, `"loop"`, …).
    public var shortDescription: String { self.code }

    /// The response status, for `not_a_redirect`; `nil` for the other reasons.
    public var status: Int? {
        if case .notARedirect(let status) = self.backing { return status }
        return nil
    }

    /// The limit that was exceeded, for `too_many_hops` (hops) and `location_too_long` (bytes); `nil` for the other
    /// reasons.
    public var limit: Int? {
        switch self.backing {
        case .tooManyHops(let limit), .locationTooLong(_, let limit): return limit
        default: return nil
        }
    }

    /// The scheme of the `Location`, for `scheme_without_authority` and `scheme_not_allowed`; `nil` for the other
    /// reasons.
    public var scheme: String? {
        switch self.backing {
        case .schemeWithoutAuthority(let scheme), .schemeNotAllowed(let scheme): return scheme
        default: return nil
        }
    }

    /// The host that is not allowed, for `host_not_allowed`; `nil` for the other reasons.
    public var host: String? {
        if case .hostNotAllowed(let host) = self.backing { return host }
        return nil
    }

    /// What is wrong, in words, for `unparsable`, `invalid_host` and `refused_by_handler`; `nil` for the other
    /// reasons.
    public var detail: String? {
        switch self.backing {
        case .unparsable(let detail), .invalidHost(let detail), .refusedByHandler(let detail): return detail
        default: return nil
        }
    }

    /// What is wrong, in one sentence.
    public var description: String {
        switch self.backing {
        case .notARedirect(let status):
            return "status \(status) is not a redirect; only 301, 302, 303, 307 and 308 are followed"
        case .tooManyHops(let limit):
            return "more than \(limit) redirect\(limit == 1 ? "" : "s")"
        case .missingLocation:
            return "the response has no Location header"
        case .emptyLocation:
            return "the Location header is empty"
        case .locationTooLong(let length, let limit):
            return "the Location is \(length) bytes long; at most \(limit) are accepted"
        case .controlCharacter(let codePoint):
            let hex = String(codePoint, radix: 16, uppercase: true)
            let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            return "the Location holds a control or invisible formatting character (\(code))"
        case .backslash:
            return "the Location holds a backslash, which browsers read as a slash"
        case .unparsable(let detail):
            return "the Location is not a URL: \(detail)"
        case .schemeWithoutAuthority(let scheme):
            return "\"\(scheme):\" is not followed by \"//\"; URL parsers disagree on where such a Location leads"
        case .userInfo:
            return "the Location carries user information (user:password@), which is never followed"
        case .percentInHost:
            return "the Location's host holds \"%\"; percent-encoded host names are not followed"
        case .nonASCIIHost:
            return "the Location's host holds non-ASCII characters; internationalized names must be sent in punycode"
        case .invalidHost(let detail):
            return "the Location's host is invalid: \(detail)"
        case .invalidPort:
            return "the Location's port is not a number from 1 to 65535"
        case .schemeNotAllowed(let scheme):
            return "the scheme \"\(scheme)\" is not allowed for redirects"
        case .schemeDowngrade:
            return "a redirect from https to http is refused: the rest of the exchange would travel unencrypted"
        case .hostNotAllowed(let host):
            return "the host \(host) is not in the redirect allowlist"
        case .portChange(let from, let to):
            return "the port changes from \(from) to \(to), which is not an allowed redirect port"
        case .loop(let url):
            return "\(url) was already requested in this chain (a redirect loop)"
        case .bodyNotReplayable(let method):
            return "the \(method) body would have to be sent again, but it was streamed and cannot be replayed"
        case .refusedByHandler(let detail):
            return "refused by the redirect handler: \(detail)"
        }
    }
}
