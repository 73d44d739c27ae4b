import Foundation

/// The proxy settings of an environment, read with curl's rules.
///
/// For a request to `scheme://host`:
/// 1. If `no_proxy` (or, when `no_proxy` is unset or empty, `NO_PROXY`) matches the host (see ``NoProxyList``), the
///    request goes direct.
/// 2. Otherwise the proxy is `<scheme>_proxy`, then `<SCHEME>_PROXY`, then `all_proxy`, then `ALL_PROXY`, the first
///    that is set and not empty. For `http`, the upper-case `HTTP_PROXY` is never read: in a CGI program (or any
///    server that maps request headers to `HTTP_*` variables) a client sets it by sending a `Proxy:` header
///    ("httpoxy"), so curl ignores it, and so does Bulwark.
///
/// A variable's value is a proxy URL as ``ProxyEndpoint/parse(_:)`` reads it; its user information becomes the
/// proxy's credentials. A variable that cannot be read is reported by ``proxy(forScheme:host:)`` with its name,
/// never its value (which may hold a password).
public struct ProxyEnvironment: Sendable {
    /// A proxy chosen from the environment.
    public struct Selection: Sendable {
        /// The variable the proxy was read from (`https_proxy`, `ALL_PROXY`, …).
        public var variable: String
        /// Where the proxy listens.
        public var endpoint: ProxyEndpoint
        /// The credentials of the URL's user information, if any.
        public var credentials: ProxyCredentials?
    }

    /// The proxy variables, by name (only the ones read: `http_proxy`, `https_proxy`, `HTTPS_PROXY`, `all_proxy`,
    /// `ALL_PROXY`, `no_proxy`, `NO_PROXY`, and their equivalents for other schemes).
    package let variables: [String: String]
    /// The bypass list from `no_proxy` or `NO_PROXY`, or the one given in place of both.
    public let noProxy: NoProxyList?

    /// The settings in `variables` (an environment's names and values); `noProxy`, when given, replaces the
    /// environment's `no_proxy` and `NO_PROXY` (as curl's `--noproxy`).
    public init(_ variables: [String: String], noProxy: NoProxyList? = nil) {
        self.variables = variables.filter { $0.key.lowercased().hasSuffix("_proxy") }
        if let noProxy {
            self.noProxy = noProxy
        } else if let lower = Self.value("no_proxy", in: variables) {
            self.noProxy = NoProxyList(lower)
        } else {
            self.noProxy = Self.value("NO_PROXY", in: variables).map { NoProxyList($0) }
        }
    }

    /// The settings of this process's environment now.
    public static func process(noProxy: NoProxyList? = nil) -> ProxyEnvironment {
        ProxyEnvironment(ProcessInfo.processInfo.environment, noProxy: noProxy)
    }

    /// Whether any proxy variable is set (not empty).
    public var isEmpty: Bool {
        !self.variables.contains { !$0.key.lowercased().hasPrefix("no_") && !$0.value.isEmpty }
    }

    /// The variable that names the proxy for `scheme`, in curl's order, or nil; `no_proxy` is not looked at.
    public func variable(forScheme scheme: String) -> String? {
        let lower = scheme.lowercased() + "_proxy"
        var names = [lower]
        if lower != "http_proxy" { names.append(lower.uppercased()) }
        names += ["all_proxy", "ALL_PROXY"]
        return names.first { Self.value($0, in: self.variables) != nil }
    }

    /// The proxy for a request to `scheme://host`, or nil when it goes direct (no variable set, or `no_proxy`
    /// matches the host).
    ///
    /// - Throws: ``ProxyURLError`` naming the variable when its value cannot be read.
    public func proxy(forScheme scheme: String, host: String) throws(ProxyURLError) -> Selection? {
        if let noProxy, noProxy.matches(host) { return nil }
        guard let name = self.variable(forScheme: scheme), let value = Self.value(name, in: self.variables) else {
            return nil
        }
        do {
            let (endpoint, credentials) = try ProxyEndpoint.parse(value)
            return Selection(variable: name, endpoint: endpoint, credentials: credentials)
        } catch {
            throw ProxyURLError("\(name): \(error.description)")
        }
    }

    private static func value(_ name: String, in variables: [String: String]) -> String? {
        guard let value = variables[name], !value.isEmpty else { return nil }
        return value
    }
}
