import Foundation

/// An RFC 6265 cookie jar: keeps the cookies servers set and sends them back only where the RFC's domain, path,
/// `Secure` and expiry rules allow.
///
/// ```swift
/// let jar = CookieJar()
/// configuration.cookies = jar           // the client stores Set-Cookie fields and sends Cookie headers
/// …
/// await client.signOut()                // wipes the jar with every other credential
/// ```
///
/// The parser and storage model follow RFC 6265 sections 5.2–5.4, with these rules of RFC 6265bis: a field with
/// a control character is ignored; name plus value may not exceed 4096 bytes; a `Secure` cookie is only accepted
/// over `https`; a cookie set over plain `http` cannot replace a `Secure` one; the `__Secure-` and `__Host-` name
/// prefixes are enforced, matched ignoring case.
///
/// A URL is read as the client reads it: an absolute `http` or `https` URL without user information (any other URL
/// stores and receives no cookie), its host canonicalized as everywhere in Bulwark (`bücher.example`, `BÜCHER.example.`
/// and `xn--bcher-kva.example` are one host), and its path matched and defaulted after dot-segment removal, so
/// `/v1/../admin` is `/admin`: a cookie for `/v1` is not sent to it.
///
/// Why not FoundationNetworking's `HTTPCookie`: on Linux (swift-corelibs-foundation with Swift 6.3) it ignores
/// `Max-Age` (so `Max-Age=0` does not delete a cookie), defaults the path to `/` instead of the request's directory,
/// accepts a `Domain` that does not match the request's host (`Domain=evil.com` from `api.example.com`) or is a
/// bare top-level domain, and splits one field at commas. The jar's own parser is tested for each of these.
///
/// Limits: 50 cookies per domain and 3,000 in all by default (the least recently used go first, expired ones
/// before them). The jar has no public suffix list: a `Domain` attribute naming a single label (`com`) or not
/// matching the request's host is refused, but a multi-label public suffix (`co.uk`) set by a host under it is
/// accepted. Requests only reach hosts the client's trust policy (and allowlist) accepts, which bounds who can set
/// or receive such a cookie.
///
/// Values are secrets: each lives in a ``SecretBox`` and is wiped when the cookie is replaced, expires, is evicted
/// or the jar is cleared. The jar prints its cookies' names and domains only.
///
/// Sessions: ``removeAll()`` (a sign-out) starts a new ``epoch``. A client reads the epoch when a request starts and
/// stores the request's `Set-Cookie` fields with ``store(setCookieFields:from:epoch:)``, which stores nothing once
/// the epoch has passed, so a response that arrives after a sign-out cannot put the old session's cookie back.
public final class CookieJar: @unchecked Sendable, CustomStringConvertible, CustomReflectable {
    // @unchecked Sendable: all mutable state is guarded by `lock`.

    /// How many cookies the jar keeps.
    public struct Limits: Sendable, Hashable {
        /// The most cookies kept for one domain; the least recently used go first.
        public var perDomain: Int
        /// The most cookies kept in all; the least recently used go first.
        public var total: Int

        /// Limits of `perDomain` cookies per domain (50) and `total` cookies in all (3,000), the
        /// least RFC 6265 asks a user agent to keep.
        public init(perDomain: Int = 50, total: Int = 3000) {
            self.perDomain = perDomain
            self.total = total
        }
    }

    /// What the jar did with one `Set-Cookie` field.
    public enum Outcome: Sendable, Equatable, CustomStringConvertible {
        /// The cookie was stored (new, or replacing one with the same name, domain and path).
        case stored(name: String)
        /// The cookie was already expired: a cookie it matches was removed, and nothing was stored.
        case deleted(name: String)
        /// The field was ignored; `name` is nil when none could be read.
        case ignored(name: String?, reason: IgnoreReason)

        /// `stored NAME`, `deleted NAME` or `ignored NAME: REASON`.
        public var description: String {
            switch self {
            case .stored(let name): return "stored \(name)"
            case .deleted(let name): return "deleted \(name)"
            case .ignored(let name, let reason): return "ignored \(name ?? "(no name)"): \(reason)"
            }
        }
    }

    /// Why a `Set-Cookie` field was ignored.
    public enum IgnoreReason: String, Sendable, Hashable, CustomStringConvertible {
        /// No `name=value` pair, or an empty name.
        case malformed = "malformed"
        /// A control character in the field.
        case controlCharacter = "control_character"
        /// Name and value together exceed 4096 bytes.
        case tooLarge = "too_large"
        /// The response's URL has no usable host.
        case noHost = "no_host"
        /// The `Domain` attribute does not domain-match the request's host (or names another IP address).
        case domainMismatch = "domain_mismatch"
        /// The `Domain` attribute is a single label such as `com`.
        case topLevelDomain = "top_level_domain"
        /// A `Secure` cookie set over plain `http`.
        case secureOverInsecureOrigin = "secure_over_insecure_origin"
        /// A cookie set over plain `http` would replace a `Secure` one.
        case wouldReplaceSecureCookie = "would_replace_secure_cookie"
        /// A `__Secure-` or `__Host-` cookie (the prefix in any case) without the attributes its prefix demands.
        case prefixViolation = "prefix_violation"
        /// The jar was cleared (``CookieJar/removeAll()``, a sign-out) after the request started: see
        /// ``CookieJar/store(setCookieFields:from:epoch:)``.
        case sessionEnded = "session_ended"

        /// The reason's stable label.
        public var description: String { self.rawValue }
    }

    private struct Key: Hashable {
        var name: String
        var domain: String
        var path: String
        var isHostOnly: Bool
    }

    private struct Entry {
        var cookie: Cookie
        var lastAccess: Date
        /// Orders cookies created in the same instant by when they were first stored.
        var sequence: UInt64
    }

    /// The longest a cookie is kept: 400 days (RFC 6265bis).
    public static let maximumLifetime: TimeInterval = 400 * 86_400

    /// How many cookies the jar keeps.
    public let limits: Limits
    private let now: @Sendable () -> Date
    private let lock = NSLock()
    private var entries: [Key: Entry] = [:]
    private var nextSequence: UInt64 = 0

    /// An empty jar.
    ///
    /// - Parameters:
    ///   - limits: How many cookies to keep.
    ///   - now: The clock (for tests).
    public init(limits: Limits = Limits(), now: @escaping @Sendable () -> Date = { Date() }) {
        self.limits = limits
        self.now = now
    }

    private func locked<Result>(_ body: () throws -> Result) rethrows -> Result {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body()
    }

    // MARK: - Storing

    /// Stores the cookies of a response's `Set-Cookie` fields, received for `url` (RFC 6265 section 5.3), whatever
    /// the jar's ``epoch``.
    ///
    /// A client that can still receive responses after ``removeAll()`` (a sign-out) should use
    /// ``store(setCookieFields:from:epoch:)`` instead, so that a response of the old session stores nothing.
    ///
    /// - Returns: What happened to each field, in order.
    @discardableResult
    public func store(setCookieFields fields: [String], from url: URL) -> [Outcome] {
        self.store(fields, from: url, epoch: nil)
    }

    /// The jar's session number: 0 for a new jar, incremented by every ``removeAll()``.
    ///
    /// Read it when a request starts and pass it to ``store(setCookieFields:from:epoch:)`` with the request's
    /// responses: if the jar was cleared in between (a sign-out), the old session's responses store nothing.
    public var epoch: UInt64 { self.locked { self.epochValue } }
    private var epochValue: UInt64 = 0

    /// Stores the cookies of a response's `Set-Cookie` fields, received for `url`, only if the jar is still in the
    /// session `epoch` (its ``epoch`` when the request was started), that is, if ``removeAll()`` was not called since.
    ///
    /// The epoch is compared and the cookies are stored under one acquisition of the jar's lock, the same lock
    /// ``removeAll()`` takes to clear the jar and start the next epoch: a concurrent `removeAll()` runs either wholly
    /// before the check (nothing is stored) or wholly after the store (it removes what was stored). Fields are
    /// parsed, and the clock is read, before the lock is taken.
    ///
    /// ```swift
    /// let epoch = jar.epoch                     // when the request starts
    /// let response = try await send(request)
    /// jar.store(setCookieFields: response.setCookieFields, from: request.url, epoch: epoch)
    /// ```
    ///
    /// - Returns: What happened to each field, in order. When the epoch has passed, every field that could be read is
    ///   ``Outcome/ignored(name:reason:)`` with ``IgnoreReason/sessionEnded``, and nothing is stored or deleted.
    @discardableResult
    public func store(setCookieFields fields: [String], from url: URL, epoch: UInt64) -> [Outcome] {
        self.store(fields, from: url, epoch: .some(epoch))
    }

    /// A field that parsed and passed the checks that need no jar state, ready to be applied under the lock.
    private struct Candidate {
        var key: Key
        var parsed: SetCookie
        var expiresAt: Date?
        var isExpired: Bool
        var isSecureOrigin: Bool
    }

    private func store(_ fields: [String], from url: URL, epoch: UInt64?) -> [Outcome] {
        let now = self.now()
        let prepared = fields.map { self.prepare(field: $0, from: url, now: now) }
        var wiped: [SecretBox] = []
        let outcomes: [Outcome] = self.locked {
            // One lock for the check and the stores: removeAll() cannot run between them.
            let isCurrent = epoch.map { $0 == self.epochValue } ?? true
            return prepared.map { result in
                switch result {
                case .refused(let outcome):
                    return outcome
                case .success(let candidate) where !isCurrent:
                    wiped.append(candidate.parsed.value)
                    return .ignored(name: candidate.parsed.name, reason: .sessionEnded)
                case .success(let candidate):
                    return self.apply(candidate, now: now, wiping: &wiped)
                }
            }
        }
        for box in wiped { box.wipe() }
        return outcomes
    }

    /// What ``prepare(field:from:now:)`` made of a field: a candidate, or the outcome of a refused field.
    private enum Prepared {
        case success(Candidate)
        case refused(Outcome)
    }

    /// Parses a field and applies the rules that do not depend on the jar's contents (RFC 6265 section 5.3 steps
    /// 1-10, RFC 6265bis prefixes). A refused field's value is wiped here.
    private func prepare(field: String, from url: URL, now: Date) -> Prepared {
        let parsed: SetCookie
        do {
            parsed = try SetCookie.parse(field)
        } catch {
            switch error {
            case .controlCharacter: return .refused(.ignored(name: nil, reason: .controlCharacter))
            case .tooLarge: return .refused(.ignored(name: nil, reason: .tooLarge))
            case .noNameValuePair, .emptyName: return .refused(.ignored(name: nil, reason: .malformed))
            }
        }
        let name = parsed.name
        let ignore = { (reason: IgnoreReason) -> Prepared in
            parsed.value.wipe()
            return .refused(.ignored(name: name, reason: reason))
        }
        // Read as the client reads it (see RequestURL): a URL it would not request stores nothing.
        guard let request = try? RequestURL(url) else { return ignore(.noHost) }
        let host = request.host
        let isSecureOrigin = request.origin.isSecure

        // Domain (5.3 steps 4-6).
        var domain = host
        var isHostOnly = true
        if let attribute = parsed.domain {
            guard let canonical = try? HostName.canonicalize(attribute) else { return ignore(.domainMismatch) }
            if canonical == host {
                isHostOnly = HostName.isIPAddress(host) || !canonical.contains(".")
            } else if HostName.isIPAddress(host) || HostName.isIPAddress(canonical) {
                return ignore(.domainMismatch)
            } else if !canonical.contains(".") {
                return ignore(.topLevelDomain)
            } else if host.hasSuffix("." + canonical) {
                isHostOnly = false
            } else {
                return ignore(.domainMismatch)
            }
            domain = canonical
        }
        if parsed.secure && !isSecureOrigin { return ignore(.secureOverInsecureOrigin) }
        // RFC 6265bis 5.7 steps 19-20: the prefixes match ignoring case (`__SECURE-` is `__Secure-`).
        if Self.hasPrefix(name, "__Secure-") && !(parsed.secure && isSecureOrigin) { return ignore(.prefixViolation) }
        if Self.hasPrefix(name, "__Host-")
            && !(parsed.secure && isSecureOrigin && parsed.domain == nil && parsed.path == "/")
        {
            return ignore(.prefixViolation)
        }

        let path = parsed.path ?? Self.defaultPath(ofRequestPath: request.path)
        // Max-Age wins over Expires; RFC 6265bis caps both at 400 days.
        let latest = now.addingTimeInterval(Self.maximumLifetime)
        let expiresAt: Date?
        if let maxAge = parsed.maxAge {
            expiresAt = maxAge <= 0 ? .distantPast : min(now.addingTimeInterval(TimeInterval(maxAge)), latest)
        } else {
            expiresAt = parsed.expires.map { min($0, latest) }
        }
        return .success(
            Candidate(
                key: Key(name: name, domain: domain, path: path, isHostOnly: isHostOnly),
                parsed: parsed,
                expiresAt: expiresAt,
                isExpired: expiresAt.map { $0 <= now } ?? false,
                isSecureOrigin: isSecureOrigin
            )
        )
    }

    /// Whether `name` starts with `prefix`, ignoring ASCII case.
    static func hasPrefix(_ name: String, _ prefix: String) -> Bool {
        let (nameBytes, prefixBytes) = (name.utf8, prefix.utf8)
        guard nameBytes.count >= prefixBytes.count else { return false }
        return zip(nameBytes, prefixBytes).allSatisfy { Self.asciiLowercased($0) == Self.asciiLowercased($1) }
    }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }

    /// Stores, replaces or deletes the cookie of `candidate` (RFC 6265 section 5.3 steps 11-12). Call with the lock
    /// held; the values to wipe once it is released are appended to `wiped`.
    private func apply(_ candidate: Candidate, now: Date, wiping wiped: inout [SecretBox]) -> Outcome {
        let (key, parsed) = (candidate.key, candidate.parsed)
        let (name, domain, path) = (key.name, key.domain, key.path)
        // RFC 6265bis 5.7 step 16: plain http cannot shadow or replace a Secure cookie.
        if !candidate.isSecureOrigin {
            let shadowsSecure = self.entries.values.contains { entry in
                entry.cookie.isSecure && entry.cookie.name == name
                    && (Self.domainMatches(entry.cookie.domain, domain)
                        || Self.domainMatches(domain, entry.cookie.domain))
                    && Self.pathMatches(requestPath: entry.cookie.path, cookiePath: path)
            }
            if shadowsSecure {
                wiped.append(parsed.value)
                return .ignored(name: name, reason: .wouldReplaceSecureCookie)
            }
        }
        let old = self.entries.removeValue(forKey: key)
        if let old { wiped.append(old.cookie.value) }
        if candidate.isExpired {
            wiped.append(parsed.value)
            return .deleted(name: name)
        }
        let cookie = Cookie(
            name: name,
            value: parsed.value,
            domain: domain,
            isHostOnly: key.isHostOnly,
            path: path,
            isSecure: parsed.secure,
            isHTTPOnly: parsed.httpOnly,
            sameSite: parsed.sameSite,
            expiresAt: candidate.expiresAt,
            createdAt: old?.cookie.createdAt ?? now
        )
        self.nextSequence += 1
        self.entries[key] = Entry(cookie: cookie, lastAccess: now, sequence: old?.sequence ?? self.nextSequence)
        wiped += self.evict(domain: domain, keeping: key, now: now)
        return .stored(name: name)
    }

    /// Removes expired cookies, then the least recently used, while the domain or the jar is over its limit; never
    /// the cookie just stored. Call with the lock held; returns the values to wipe.
    private func evict(domain: String, keeping kept: Key, now: Date) -> [SecretBox] {
        var removed: [SecretBox] = []
        func removeOldest(where include: (Key) -> Bool, over limit: Int) {
            var candidates = self.entries.filter { include($0.key) }
            guard candidates.count > limit else { return }
            for (key, entry) in candidates where entry.cookie.expiresAt.map({ $0 <= now }) ?? false {
                removed.append(entry.cookie.value)
                self.entries[key] = nil
                candidates[key] = nil
            }
            let excess = candidates.count - limit
            guard excess > 0 else { return }
            let oldest = candidates.filter { $0.key != kept }.sorted { $0.value.lastAccess < $1.value.lastAccess }
            for (key, entry) in oldest.prefix(excess) {
                removed.append(entry.cookie.value)
                self.entries[key] = nil
            }
        }
        removeOldest(where: { $0.domain == domain }, over: self.limits.perDomain)
        removeOldest(where: { _ in true }, over: self.limits.total)
        return removed
    }

    // MARK: - Sending

    /// The `Cookie` header value for a request to `url` (RFC 6265 section 5.4), made now from the secrets, or nil
    /// when no cookie applies. Longer paths come first, then older cookies.
    ///
    /// This string is the one copy of the values outside locked memory: make it only to send the request.
    public func cookieHeaderValue(for url: URL) -> String? {
        let cookies = self.matching(url, touch: true)
        var parts: [String] = []
        for cookie in cookies {
            guard let value = cookie.value.withUnsafeBytes({ String(decoding: $0, as: UTF8.self) }) else { continue }
            parts.append(cookie.name + "=" + value)
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// The cookies a request to `url` would carry, in sending order.
    public func cookies(for url: URL) -> [Cookie] {
        self.matching(url, touch: false)
    }

    private func matching(_ url: URL, touch: Bool) -> [Cookie] {
        guard let request = try? RequestURL(url) else { return [] }
        let (host, isSecure, path) = (request.host, request.origin.isSecure, request.path)
        let now = self.now()
        var expired: [SecretBox] = []
        let found: [Entry] = self.locked {
            var found: [Entry] = []
            for (key, entry) in self.entries {
                let cookie = entry.cookie
                if let expiresAt = cookie.expiresAt, expiresAt <= now {
                    expired.append(cookie.value)
                    self.entries[key] = nil
                    continue
                }
                let domainOK = cookie.isHostOnly ? host == cookie.domain : Self.domainMatches(host, cookie.domain)
                guard domainOK, Self.pathMatches(requestPath: path, cookiePath: cookie.path),
                    isSecure || !cookie.isSecure
                else { continue }
                found.append(entry)
                if touch { self.entries[key]?.lastAccess = now }
            }
            return found
        }
        for box in expired { box.wipe() }
        return found.sorted { first, second in
            let (one, two) = (first.cookie, second.cookie)
            if one.path.utf8.count != two.path.utf8.count { return one.path.utf8.count > two.path.utf8.count }
            if one.createdAt != two.createdAt { return one.createdAt < two.createdAt }
            return first.sequence < second.sequence
        }.map(\.cookie)
    }

    // MARK: - Clearing

    /// Every cookie in the jar.
    public var allCookies: [Cookie] {
        self.locked { self.entries.values.map(\.cookie) }
    }

    /// The number of cookies in the jar (expired ones not yet removed included).
    public var count: Int {
        self.locked { self.entries.count }
    }

    /// Removes every cookie, wiping its value, and starts a new ``epoch``: responses to requests started before the
    /// call store nothing through ``store(setCookieFields:from:epoch:)``.
    ///
    /// - Returns: The number of cookies removed.
    @discardableResult
    public func removeAll() -> Int {
        let removed = self.locked {
            self.epochValue += 1
            defer { self.entries.removeAll() }
            return self.entries.values.map(\.cookie.value)
        }
        for box in removed { box.wipe() }
        return removed.count
    }

    // MARK: - Matching (RFC 6265 section 5.1)

    /// Whether `host` domain-matches `domain` (5.1.3): equal, or a subdomain of a name that is not an IP address.
    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        host == domain || (host.hasSuffix("." + domain) && !HostName.isIPAddress(host))
    }

    /// Whether a request path path-matches a cookie path (5.1.4).
    static func pathMatches(requestPath: String, cookiePath: String) -> Bool {
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if requestPath.utf8.count == cookiePath.utf8.count || cookiePath.hasSuffix("/") { return true }
        return requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }

    /// The default cookie path (5.1.4) of a request path (``RequestURL/path``: dot segments removed): the path up
    /// to, not including, its last `/`; `/` at the top.
    static func defaultPath(ofRequestPath path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    // MARK: - Printing

    /// `CookieJar(2 cookies: session for .example.com, csrf for api.example.com)`: names and domains only.
    public var description: String {
        let cookies = self.allCookies.map { "\($0.name) for \($0.isHostOnly ? "" : ".")\($0.domain)" }.sorted()
        return "CookieJar(\(cookies.count) cookies\(cookies.isEmpty ? "" : ": " + cookies.joined(separator: ", ")))"
    }

    /// The cookies, redacted.
    public var customMirror: Mirror {
        Mirror(self, children: ["cookies": self.allCookies], displayStyle: .class)
    }
}
