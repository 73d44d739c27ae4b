import Foundation

/// Decides, hop by hop, whether a redirect is followed and what the next request is. Pure: no I/O, so any transport
/// can use it (Bulwark's `BulwarkClient` does for every request).
///
/// The defaults are strict: only 301, 302, 303, 307 and 308 with a well-formed `Location` are followed; at most five
/// hops; https only; the target host must be the host the chain started at or match ``allowedHosts``; the effective
/// port may not change (except http:80 to https:443) unless the new port is in ``allowedPorts``; a URL requested
/// before in the chain (ignoring the fragment) is a loop. On any origin change `Authorization`, `Cookie` and
/// `Proxy-Authorization` are removed, and they stay removed for the rest of the chain. Every refusal names its
/// ``RedirectRefusalReason``.
///
/// ```swift
/// var policy = try RedirectPolicy(allowing: ["**.example.com"])
/// policy.allowedPorts = [8443]
/// switch policy.decide(hop) {
/// case .follow(let next): print(next.method, next.url, "stripped:", next.strippedHeaders)
/// case .refuse(let refusal): print(refusal)   // names from, to and why
/// }
/// ```
public struct RedirectPolicy: Sendable {
    /// The statuses that are redirects: 301, 302, 303, 307, 308. Never 300, 304 or 305.
    public static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]
    /// The headers stripped on an origin change unless ``credentialHeaders`` says otherwise.
    public static let defaultCredentialHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization"]
    /// The headers that describe a body (Fetch's "request-body-header names"), removed when the body is dropped.
    static let bodyHeaders: Set<String> = [
        "content-type", "content-length", "content-encoding", "content-language", "content-location",
        "transfer-encoding",
    ]

    /// Whether redirects are followed at all. When false, a redirect response is returned as it is, with no decision
    /// and no event (Alamofire's `.doNotFollow`).
    public var followsRedirects: Bool = true
    /// Hosts a redirect may lead to besides the host the chain started at. OkHttp patterns: `example.com`,
    /// `*.example.com` (one label), `**.example.com` (any depth, apex included).
    public var allowedHosts: [HostPattern] {
        didSet { self.matcher = Self.matcher(for: self.allowedHosts) }
    }
    /// The most redirects followed for one request; the next one is refused with
    /// ``RedirectRefusalReason/tooManyHops(limit:)``.
    public var maximumHops: Int
    /// The schemes a redirect may lead to: `https` only by default. Add `http` to follow http-to-http redirects of a
    /// plain-HTTP request; https to http stays refused unless `allowsHTTPSToHTTP`.
    public var allowedSchemes: Set<String> = ["https"]
    /// Ports a redirect may move to. Any other change of the effective port is refused, except http:80 to https:443.
    public var allowedPorts: Set<Int> = []
    /// Header names (case-insensitive) removed on an origin change and for the rest of the chain.
    public var credentialHeaders: Set<String> = RedirectPolicy.defaultCredentialHeaders
    /// What the client does with a refused redirect: throw (the default) or return the redirect response. A 307 or
    /// 308 whose streamed body cannot be resent is always returned.
    public var onRefusal: RefusalAction = .throw
    /// Called for every hop the rules would follow; it may follow, refuse or modify (see ``Behavior``).
    public var handler: Handler?
    /// Follow redirects from https to http (and allow `http` targets).
    ///
    /// > Warning: Everything after such a hop, credentials the caller adds included, travels unencrypted and can be
    /// > read and changed by anyone on the path. AsyncHTTPClient, Go, curl and OkHttp do this by default; Bulwark
    /// > only behind `@_spi(Insecure) import BulwarkPolicy`, and reports every use as an `insecure_option_used` event.
    @_spi(Insecure) public var allowsHTTPSToHTTP: Bool = false

    private var matcher: HostMatcher<Bool>

    /// A policy that follows redirects to the starting host and to `allowedHosts`, at most `maximumHops` of them.
    public init(allowedHosts: [HostPattern] = [], maximumHops: Int = 5) {
        self.allowedHosts = allowedHosts
        self.maximumHops = maximumHops
        self.matcher = Self.matcher(for: allowedHosts)
    }

    /// A policy whose allowlist is `patterns`.
    ///
    /// - Throws: ``HostPatternError`` for the first invalid pattern.
    public init(allowing patterns: [String], maximumHops: Int = 5) throws(HostPatternError) {
        var parsed: [HostPattern] = []
        for pattern in patterns {
            parsed.append(try HostPattern(pattern))
        }
        self.init(allowedHosts: parsed, maximumHops: maximumHops)
    }

    /// Never follows: redirect responses are returned as they are.
    public static var doNotFollow: RedirectPolicy {
        var policy = RedirectPolicy()
        policy.followsRedirects = false
        return policy
    }

    /// Decides one hop.
    public func decide(_ hop: RedirectHop) -> RedirectDecision {
        let from = try? RequestURL(hop.request.url)
        let fromText = from?.redacted ?? URLRedaction.redacted(hop.request.url.absoluteString)
        func refuse(_ reason: RedirectRefusalReason, to: String?) -> RedirectDecision {
            .refuse(RedirectRefusal(reason: reason, status: hop.status, from: fromText, to: to))
        }
        let location = hop.locations.first
        let locationText = location.map(URLRedaction.redacted(_:))
        guard Self.redirectStatuses.contains(hop.status) else {
            return refuse(.notARedirect(status: hop.status), to: locationText)
        }
        guard hop.number <= self.maximumHops else {
            return refuse(.tooManyHops(limit: max(0, self.maximumHops)), to: locationText)
        }
        guard let location else {
            return refuse(.missingLocation, to: nil)
        }
        guard let from else {
            return refuse(.unparsable(detail: "the request URL is not an absolute http(s) URL"), to: locationText)
        }
        let target: RequestURL
        switch RedirectLocation.resolve(location, against: from) {
        case .success(let resolved): target = resolved
        case .failure(let reason): return refuse(reason, to: locationText)
        }
        if let reason = self.check(target, from: from, chain: hop.chain) {
            return refuse(reason, to: target.redacted)
        }
        let method = Self.method(after: hop.status, of: hop.request.method)
        let rewritten = method != hop.request.method
        let keepsBody = !rewritten && hop.request.body != .none
        if keepsBody && hop.request.body == .streamed {
            return refuse(.bodyNotReplayable(method: method), to: target.redacted)
        }
        guard let url = target.url else {
            return refuse(.unparsable(detail: "the resolved URL cannot be represented"), to: target.redacted)
        }
        var follow = RedirectFollow(
            url: url,
            method: method,
            headers: hop.request.headers,
            keepsBody: keepsBody,
            changesOrigin: target.origin != from.origin,
            isDowngrade: from.scheme == "https" && target.scheme == "http"
        )
        self.strip(&follow, bodyHeaders: rewritten, chain: hop.chain)
        guard let handler else {
            return .follow(follow)
        }
        switch handler(hop, follow) {
        case .follow:
            return .follow(follow)
        case .refuse(let detail):
            return refuse(.refusedByHandler(detail: detail), to: target.redacted)
        case .modify(var modified):
            // The handler cannot lift a rule: its URL is checked again and credentials are stripped again.
            guard let modifiedTarget = try? RequestURL(modified.url) else {
                return refuse(
                    .refusedByHandler(detail: "the handler's URL is not an absolute http(s) URL"),
                    to: URLRedaction.redacted(modified.url.absoluteString)
                )
            }
            if let reason = self.check(modifiedTarget, from: from, chain: hop.chain) {
                return refuse(reason, to: modifiedTarget.redacted)
            }
            if modified.keepsBody && hop.request.body == .streamed {
                return refuse(.bodyNotReplayable(method: modified.method), to: modifiedTarget.redacted)
            }
            modified.keepsBody = modified.keepsBody && hop.request.body != .none
            modified.changesOrigin = modifiedTarget.origin != from.origin
            modified.isDowngrade = from.scheme == "https" && modifiedTarget.scheme == "http"
            self.strip(&modified, bodyHeaders: false, chain: hop.chain)
            return .follow(modified)
        }
    }

    // MARK: - Rules

    /// The scheme, host, port and loop rules for a resolved target; nil when it passes.
    private func check(_ target: RequestURL, from: RequestURL, chain: RedirectChain) -> RedirectRefusalReason? {
        let isDowngrade = from.scheme == "https" && target.scheme == "http"
        if isDowngrade && !self.allowsHTTPSToHTTP {
            return .schemeDowngrade
        }
        let schemes = Set(self.allowedSchemes.map { $0.lowercased() })
        guard schemes.contains(target.scheme) || (isDowngrade && self.allowsHTTPSToHTTP) else {
            return .schemeNotAllowed(scheme: target.scheme)
        }
        if target.host != chain.initialHost && self.matcher.match(canonicalHost: target.host) == nil {
            return .hostNotAllowed(host: target.host)
        }
        if target.port != from.port {
            let defaultPorts =
                from.port == Origin.defaultPort(for: from.scheme)
                && target.port == Origin.defaultPort(for: target.scheme)
            if !defaultPorts && !self.allowedPorts.contains(target.port) {
                return .portChange(from: from.port, to: target.port)
            }
        }
        if chain.requested.contains(target.withoutFragment) {
            return .loop(url: target.redacted)
        }
        return nil
    }

    /// 303: anything but `HEAD` becomes `GET`; 301 and 302: `POST` becomes `GET`; 307 and 308: unchanged.
    static func method(after status: Int, of method: String) -> String {
        if status == 303 && method != "HEAD" {
            return "GET"
        }
        if (status == 301 || status == 302) && method == "POST" {
            return "GET"
        }
        return method
    }

    /// Removes credentials (after any origin change in the chain, this hop's included), body headers (when the body
    /// is dropped) and `host` (when the origin changes), recording the names.
    private func strip(_ follow: inout RedirectFollow, bodyHeaders: Bool, chain: RedirectChain) {
        let credentials = follow.changesOrigin || chain.hasChangedOrigin
        let credentialNames = Set(self.credentialHeaders.map { $0.lowercased() })
        var kept: [HeaderField] = []
        for field in follow.headers {
            let name = field.lowercasedName
            let isCredential = credentials && credentialNames.contains(name)
            let isBodyHeader = bodyHeaders && Self.bodyHeaders.contains(name)
            let isHost = follow.changesOrigin && name == "host"
            guard isCredential || isBodyHeader || isHost else {
                kept.append(field)
                continue
            }
            if !follow.strippedHeaders.contains(name) {
                follow.strippedHeaders.append(name)
            }
            if isCredential && !follow.strippedCredentials.contains(name) {
                follow.strippedCredentials.append(name)
            }
        }
        follow.headers = kept
    }

    private static func matcher(for patterns: [HostPattern]) -> HostMatcher<Bool> {
        HostMatcher(patterns.map { ($0, true) })
    }
}
