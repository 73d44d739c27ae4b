import Foundation

/// Why a ``HostAllowlist`` refused a request: the host, and which constraint failed.
///
/// A refusal names the scheme, host and port of the request, never its path, query or user information, so it is
/// fit for logs and security events:
///
/// ```text
/// request to https://evil.example.net:443 refused: the host is not in the allowlist
/// request to http://api.example.com:80 refused: scheme http is not allowed for **.example.com (allowed: https)
/// ```
public struct AllowlistRefusal: Hashable, Sendable, CustomStringConvertible {
    /// Which constraint failed; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A bounded, value-free label such as `host_not_listed`, fit for metrics and event reasons.
        public let label: String
        private init(_ label: String) { self.label = label }
        /// No pattern in the allowlist matches the host.
        public static let hostNotListed = Code("host_not_listed")
        /// The host matches, but no entry with its pattern allows the scheme.
        public static let schemeNotAllowed = Code("scheme_not_allowed")
        /// The host and scheme match, but no such entry allows the port.
        public static let portNotAllowed = Code("port_not_allowed")
        /// The host is not a valid host name or IP address (see ``HostName``).
        public static let invalidHost = Code("invalid_host")
        /// The URL has no host.
        public static let missingHost = Code("missing_host")
        /// The code's stable label.
        public var description: String { self.label }
    }

    /// Which constraint failed.
    public let code: Code
    /// The host: canonical when it could be canonicalized, otherwise as given.
    public let host: String
    /// The request's scheme, lower-case.
    public let scheme: String
    /// The request's effective port, if known.
    public let port: Int?
    /// The most specific pattern that matched the host, for scheme and port refusals.
    public let pattern: HostPattern?
    /// The schemes allowed for ``pattern``, for ``Code/schemeNotAllowed``.
    public let allowedSchemes: [String]
    /// The ports allowed for ``pattern`` and the scheme, for ``Code/portNotAllowed``.
    public let allowedPorts: [Int]
    /// Why the host is invalid, for ``Code/invalidHost``.
    public let hostError: HostPatternError?

    init(
        _ code: Code,
        host: String,
        scheme: String,
        port: Int?,
        pattern: HostPattern? = nil,
        allowedSchemes: [String] = [],
        allowedPorts: [Int] = [],
        hostError: HostPatternError? = nil
    ) {
        self.code = code
        self.host = host
        self.scheme = scheme
        self.port = port
        self.pattern = pattern
        self.allowedSchemes = allowedSchemes
        self.allowedPorts = allowedPorts
        self.hostError = hostError
    }

    /// `scheme://host:port`, the IPv6 host in brackets, the host with control characters escaped.
    public var target: String {
        var host = ControlCharacters.escaped(self.host)
        if host.contains(":") {
            host = "[\(host)]"
        }
        return "\(self.scheme.isEmpty ? "" : self.scheme + "://")\(host)\(self.port.map { ":\($0)" } ?? "")"
    }

    /// One sentence naming the request's target and the failed constraint.
    public var description: String {
        let reason: String
        switch self.code {
        case .hostNotListed:
            reason = "the host is not in the allowlist"
        case .schemeNotAllowed:
            let schemes = self.allowedSchemes.joined(separator: ", ")
            let allowed = self.allowedSchemes.isEmpty ? "" : " (allowed: \(schemes))"
            reason = "scheme \(self.scheme) is not allowed for \(self.pattern.map(\.description) ?? "")\(allowed)"
        case .portNotAllowed:
            let allowed = self.allowedPorts.map(String.init).joined(separator: ", ")
            let port = self.port.map(String.init) ?? "(none: \(self.scheme) has no default port)"
            reason = "port \(port) is not allowed for \(self.pattern.map(\.description) ?? "") (allowed: \(allowed))"
        case .invalidHost:
            reason = "the host is invalid" + (self.hostError.map { " (\($0))" } ?? "")
        default:
            reason = "the URL has no host"
        }
        return "request to \(self.target) refused: \(reason)"
    }

    /// The ``SecurityEvent/Kind/requestRefusedByAllowlist`` event for this refusal.
    public func securityEvent(requestID: UInt64? = nil) -> SecurityEvent {
        var details: SecurityEvent.Details = [.scheme: .text(self.scheme), .target: .text(self.target)]
        if let pattern = self.pattern { details[.pattern] = .text(pattern.description) }
        if let port = self.port { details[.port] = .number(Int(port)) }
        return SecurityEvent(
            kind: .requestRefusedByAllowlist,
            host: self.host.isEmpty ? nil : self.host,
            requestID: requestID,
            reason: self.code.label,
            message: self.description,
            details: details
        )
    }
}
