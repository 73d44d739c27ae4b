/// Why a redirect was not followed: one value per rule.
///
/// ``shortDescription`` is a bounded, value-free label (`host_not_allowed`, `loop`, …) for metrics, events and the
/// `reason` field of `bulwark redirect-check --json`; ``description`` is the detail sentence. Neither ever holds a
/// query string, user information or a header value.
public enum RedirectRefusalReason: Error, Hashable, Sendable, CustomStringConvertible {
    /// The status is not one of 301, 302, 303, 307 and 308 (300, 304 and 305 are never followed).
    case notARedirect(status: Int)
    /// Following would exceed the policy's hop limit.
    case tooManyHops(limit: Int)
    /// The response has no `Location` header.
    case missingLocation
    /// The `Location` header is empty (or only whitespace).
    case emptyLocation
    /// The `Location` is longer than the limit (8 KiB).
    case locationTooLong(length: Int, limit: Int)
    /// The `Location` holds a control character (CR and LF included) or an invisible formatting character.
    case controlCharacter(codePoint: UInt32)
    /// The `Location` holds a backslash, which browsers read as a slash.
    case backslash
    /// The `Location` is not a URI reference.
    case unparsable(detail: String)
    /// `http:` or `https:` not followed by `//`, such as `https:evil.example`: parsers disagree on what it means.
    case schemeWithoutAuthority(scheme: String)
    /// The `Location` carries user information (`user:password@host`).
    case userInfo
    /// The host of the `Location` holds `%`.
    case percentInHost
    /// The host of the `Location` holds non-ASCII characters; internationalized names must arrive in punycode.
    case nonASCIIHost
    /// The host of the `Location` is not a valid host name or IP address (see ``HostName/canonicalize(_:)``).
    case invalidHost(detail: String)
    /// The port of the `Location` is not a number from 1 to 65535.
    case invalidPort
    /// The scheme is not allowed: anything but `http` and `https`, or `http` when the policy allows only `https`.
    case schemeNotAllowed(scheme: String)
    /// An `https` request redirected to `http`.
    case schemeDowngrade
    /// The target host is neither the host the chain started at nor in the allowlist.
    case hostNotAllowed(host: String)
    /// The effective port changes to a port the policy does not list.
    case portChange(from: Int, to: Int)
    /// The target was already requested in this chain (compared without the fragment). `url` has no query.
    case loop(url: String)
    /// The hop would resend the request body, but the body was streamed and cannot be sent again.
    case bodyNotReplayable(method: String)
    /// The policy's per-hop handler refused the hop.
    case refusedByHandler(detail: String)

    /// A bounded, value-free label (`"host_not_allowed"`, `"loop"`, …).
    public var shortDescription: String {
        switch self {
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

    /// What is wrong, in one sentence.
    public var description: String {
        switch self {
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
