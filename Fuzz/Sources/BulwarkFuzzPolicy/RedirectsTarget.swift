import BulwarkPolicy
import Foundation

/// Redirect `Location` resolution and the hop rules of ``RedirectPolicy``.
///
/// Input: a byte each for the policy, the first request's URL, method and body, then one `Location` value per line,
/// each the answer (with a status picked by its first byte) to the request the previous hop led to. Oracles for a
/// followed hop:
/// - the target is an absolute URL whose scheme the policy allows (https unless the policy adds http, never a
///   downgrade), with no user information, a canonical host that is the first host or matches an allowed pattern,
///   and a port that did not change unless the rules allow it;
/// - resolving the target's own text as the `Location` of the same hop follows to the same URL;
/// - after an origin change, no credential header is left on the request;
/// and for a refused hop: the `to` text it shows carries no query, fragment, user information or control character.
enum RedirectsTarget {
    static let baseURLs = [
        "https://example.com/a/b/c?x=1#top", "https://www.example.com:8443/dir/", "http://example.com/",
        "https://127.0.0.1/p/q", "https://[::1]:8443/", "https://api.example.org/v1/items?id=7",
        "https://xn--bcher-kva.example/",
    ]
    static let credentialHeaders = [
        HeaderField(name: "Authorization", value: "Bearer fuzz-secret"),
        HeaderField(name: "Cookie", value: "session=fuzz-secret"),
        HeaderField(name: "Accept", value: "*/*"),
    ]

    static let policies: [RedirectPolicy] = {
        var open = try! RedirectPolicy(allowing: ["**.example.com", "*.example.org"], maximumHops: 4)
        open.allowedPorts = [8443]
        var plain = try! RedirectPolicy(allowing: ["xn--bcher-kva.example", "127.0.0.1", "::1"])
        plain.allowedSchemes = ["https", "http"]
        return [RedirectPolicy(), open, plain]
    }()

    static func run(_ input: FuzzInput) {
        var input = input
        let policy = input.pick(self.policies)
        let url = URL(string: input.pick(self.baseURLs))!
        let method = input.pick(["GET", "POST", "HEAD", "PUT"])
        let body = input.pick([RedirectRequest.Body.none, .replayable, .streamed])
        var request = RedirectRequest(method: method, url: url, headers: self.credentialHeaders, body: body)
        var chain = RedirectChain(startingAt: request.url)
        for line in input.restText.split(separator: "\n", omittingEmptySubsequences: false).prefix(8) {
            let status = [301, 302, 303, 307, 308, 300, 200][Int(line.utf8.first ?? 0) % 7]
            let location = String(line.dropFirst())
            let hop = RedirectHop(request: request, status: status, locations: [location], chain: chain)
            let decision = policy.decide(hop)
            trace("\(request.url) \(status) \(location.debugDescription): \(decision.shortDescription)")
            switch decision {
            case .refuse(let refusal):
                self.checkRefusal(refusal)
                return
            case .follow(let follow):
                self.checkFollow(follow, hop: hop, policy: policy)
                chain.record(follow)
                request = RedirectRequest(
                    method: follow.method,
                    url: follow.url,
                    headers: follow.headers,
                    body: follow.keepsBody ? request.body : .none
                )
            }
        }
    }

    static func checkFollow(_ follow: RedirectFollow, hop: RedirectHop, policy: RedirectPolicy) {
        let text = follow.url.absoluteString
        guard let parts = self.split(text) else {
            violated("followed URL is absolute", text.debugDescription)
        }
        let from = self.split(hop.request.url.absoluteString)!
        let schemes = Set(policy.allowedSchemes.map { $0.lowercased() })
        if !schemes.contains(parts.scheme) || (from.scheme == "https" && parts.scheme == "http") {
            violated("followed scheme is allowed", "\(hop.request.url) -> \(text)")
        }
        if follow.isDowngrade {
            violated("no downgrade without the insecure option", text)
        }
        if parts.authority.contains("@") || follow.url.user != nil || follow.url.password != nil {
            violated("no user information", text)
        }
        guard (try? HostName.canonicalize(parts.host)) == parts.host else {
            violated("followed host is canonical", "\(parts.host.debugDescription) in \(text)")
        }
        let allowed = parts.host == hop.chain.initialHost || policy.allowedHosts.contains { $0.matches(parts.host) }
        if !allowed {
            violated("followed host is allowed", "\(parts.host) from \(hop.request.url)")
        }
        let defaultPorts = from.port == (from.scheme == "https" ? 443 : 80) && parts.port == 443
        if parts.port != from.port && !defaultPorts && !policy.allowedPorts.contains(parts.port) {
            violated("port change is allowed", "\(hop.request.url) -> \(text)")
        }
        if text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F || $0 == "\\" }) {
            violated("followed URL is plain ASCII without spaces or backslashes", text.debugDescription)
        }
        // Resolving the output again gives the same URL.
        let again = RedirectHop(request: hop.request, status: hop.status, locations: [text], chain: hop.chain)
        switch policy.decide(again) {
        case .follow(let second) where second.url.absoluteString == text:
            break
        case .follow(let second):
            violated("resolution is idempotent", "\(text) resolved again to \(second.url.absoluteString)")
        case .refuse(let refusal):
            violated("resolution is idempotent", "\(text) resolved again was refused: \(refusal)")
        }
        if follow.changesOrigin || hop.chain.hasChangedOrigin {
            let names = Set(follow.headers.map(\.lowercasedName))
            if !names.isDisjoint(with: policy.credentialHeaders) {
                violated("credentials stripped after an origin change", "\(hop.request.url) -> \(text)")
            }
        }
    }

    static func checkRefusal(_ refusal: RedirectRefusal) {
        let shown = [refusal.from, refusal.to ?? "", refusal.description]
        for text in shown {
            if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                violated("refusal text has no control characters", text.debugDescription)
            }
        }
        guard let to = refusal.to else { return }
        if to.contains("?") || to.contains("#") {
            violated("refusal target has no query or fragment", to.debugDescription)
        }
        let authority: Substring?
        if let range = to.range(of: "://") {
            authority = to[range.upperBound...].prefix { $0 != "/" }
        } else {
            authority = to.hasPrefix("//") ? to.dropFirst(2).prefix { $0 != "/" } : nil
        }
        if let authority, authority.contains("@"), !authority.contains("…@") {
            violated("refusal target has no user information", to.debugDescription)
        }
    }

    /// Scheme, authority, canonical-looking host (brackets removed) and effective port of an absolute URL's text.
    static func split(_ text: String) -> (scheme: String, authority: String, host: String, port: Int)? {
        guard let range = text.range(of: "://") else { return nil }
        let scheme = String(text[..<range.lowerBound])
        let rest = text[range.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var host = Substring(authority)
        var port = scheme == "https" ? 443 : 80
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") { port = Int(after.dropFirst()) ?? -1 }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.firstIndex(of: ":") {
            port = Int(host[host.index(after: colon)...]) ?? -1
            host = host[..<colon]
        }
        return (scheme, String(authority), String(host), port)
    }
}
