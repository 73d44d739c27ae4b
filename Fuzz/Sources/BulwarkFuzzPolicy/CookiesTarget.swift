import BulwarkPolicy
import Foundation

/// `Set-Cookie` parsing, cookie dates and the storage model of ``CookieJar``.
///
/// Input: a byte each for the URL the fields come from and the URL asked for cookies afterwards, then one
/// `Set-Cookie` value per line. Oracles: every stored cookie satisfies the jar's invariants (the domain is canonical
/// and domain-matches the host it came from, host-only means that exact host, an IP address is always host-only;
/// the path starts with `/`; name plus value fit in 4096 bytes and hold no control character, `;` or `=` in the
/// name; Secure only from https, the `__Secure-` and `__Host-` prefix rules; an expiry after now and at most 400
/// days away); the jar keeps its limits and one cookie per name, domain, path and host-only flag; the cookies sent
/// to a URL domain-match and path-match it and are Secure only over https; the `Cookie` header holds no CR, LF or
/// NUL.
enum CookiesTarget {
    static let urls = [
        "https://www.example.com/a/b/page", "http://example.com/", "https://example.com/a/", "https://127.0.0.1/x/y",
        "https://[::1]/", "https://xn--bcher-kva.example/dir/file", "https://a.b.example.co.uk/", "http://localhost/",
    ]
    static let now = Date(timeIntervalSince1970: 1_780_000_000)
    static let limits = CookieJar.Limits(perDomain: 4, total: 6)

    static func run(_ input: FuzzInput) {
        var input = input
        let source = URL(string: input.pick(self.urls))!
        let target = URL(string: input.pick(self.urls))!
        let fields = input.restText.split(separator: "\n", omittingEmptySubsequences: false).prefix(16).map(String.init)
        let jar = CookieJar(limits: self.limits, now: { CookiesTarget.now })
        let outcomes = jar.store(setCookieFields: fields, from: source)
        if outcomes.count != fields.count {
            violated("one outcome per field", "\(outcomes.count) outcomes for \(fields.count) fields")
        }
        trace("\(source): \(outcomes.map(\.description).joined(separator: ", "))")
        let sourceHost = self.canonicalHost(source)
        let cookies = jar.allCookies
        if cookies.count > self.limits.total {
            violated("jar total limit", "\(cookies.count) cookies")
        }
        var keys = Set<String>()
        for cookie in cookies {
            self.checkStored(cookie, host: sourceHost, secureOrigin: source.scheme == "https")
            let key = "\(cookie.name)\u{0}\(cookie.domain)\u{0}\(cookie.path)\u{0}\(cookie.isHostOnly)"
            if !keys.insert(key).inserted {
                violated("one cookie per key", cookie.name)
            }
        }
        for domain in Set(cookies.map(\.domain)) where cookies.filter({ $0.domain == domain }).count > 4 {
            violated("jar per-domain limit", domain)
        }
        let targetHost = self.canonicalHost(target)
        let requestPath = target.path(percentEncoded: true).isEmpty ? "/" : target.path(percentEncoded: true)
        for cookie in jar.cookies(for: target) {
            let domainOK =
                cookie.isHostOnly
                ? targetHost == cookie.domain
                : (targetHost == cookie.domain || targetHost.hasSuffix("." + cookie.domain))
            let secureOK = !cookie.isSecure || target.scheme == "https"
            if !domainOK || !self.pathMatches(requestPath, cookie.path) || !secureOK {
                violated("sent cookies match the URL", "\(cookie) sent to \(target)")
            }
        }
        if let header = jar.cookieHeaderValue(for: target),
            header.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
        {
            violated("Cookie header has no CR, LF or NUL", header.debugDescription)
        }
    }

    static func checkStored(_ cookie: Cookie, host: String, secureOrigin: Bool) {
        func fail(_ property: String) -> Never {
            violated(property, "\(cookie) from \(host)")
        }
        if (try? HostName.canonicalize(cookie.domain)) != cookie.domain { fail("cookie domain is canonical") }
        if cookie.isHostOnly {
            if cookie.domain != host { fail("host-only cookie is for its host") }
        } else {
            if !(host == cookie.domain || host.hasSuffix("." + cookie.domain)) {
                fail("cookie domain-matches its host")
            }
            if HostName.isIPAddress(host) || HostName.isIPAddress(cookie.domain) { fail("IP cookies are host-only") }
            if !cookie.domain.contains(".") { fail("no cookie for a top-level domain") }
        }
        if !cookie.path.hasPrefix("/") { fail("cookie path starts with /") }
        let size = cookie.name.utf8.count + (cookie.withUnsafeValueBytes { $0.count } ?? 0)
        if cookie.name.isEmpty || size > 4096 { fail("cookie name and value size") }
        let nameBad = cookie.name.utf8.contains { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F || $0 == 0x3B || $0 == 0x3D }
        let valueBad =
            cookie.withUnsafeValueBytes { bytes in
                bytes.contains { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F || $0 == 0x3B }
            } ?? true
        if nameBad || valueBad { fail("cookie name and value characters") }
        if cookie.isSecure && !secureOrigin { fail("Secure cookie only from https") }
        if cookie.name.hasPrefix("__Secure-") && !cookie.isSecure { fail("__Secure- prefix") }
        if cookie.name.hasPrefix("__Host-") && !(cookie.isSecure && cookie.isHostOnly && cookie.path == "/") {
            fail("__Host- prefix")
        }
        if let expiry = cookie.expiresAt {
            if expiry <= self.now || expiry > self.now.addingTimeInterval(CookieJar.maximumLifetime) {
                fail("cookie expiry after now and within 400 days")
            }
        }
    }

    static func canonicalHost(_ url: URL) -> String {
        let raw = url.host(percentEncoded: true) ?? ""
        let host = raw.hasPrefix("[") && raw.hasSuffix("]") ? String(raw.dropFirst().dropLast()) : raw
        return (try? HostName.canonicalize(host)) ?? host
    }

    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if requestPath.utf8.count == cookiePath.utf8.count || cookiePath.hasSuffix("/") { return true }
        return requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }
}
