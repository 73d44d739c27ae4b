import BulwarkTestHelpers
import Foundation
import Testing

@testable import BulwarkPolicy

typealias Headers = [(name: String, value: String)]

/// Counts refresh calls and the URLs they were made for.
final class RefreshCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var urls: [URL] = []
    private var reasons: [CredentialRefreshRequest.Reason] = []

    func record(_ request: CredentialRefreshRequest) {
        self.lock.withLock {
            self.urls.append(request.url)
            self.reasons.append(request.reason)
        }
    }

    var count: Int { self.lock.withLock { self.urls.count } }
    var calledURLs: [URL] { self.lock.withLock { self.urls } }
    var calledReasons: [CredentialRefreshRequest.Reason] { self.lock.withLock { self.reasons } }
}

func url(_ text: String) -> URL {
    URL(string: text)!
}

func value(_ headers: Headers, _ name: String) -> String? {
    headers.first { $0.name.lowercased() == name.lowercased() }?.value
}

struct StoreScopeCase: Sendable, CustomTestStringConvertible {
    let url: String
    let attached: [String]

    init(_ url: String, _ attached: [String]) {
        self.url = url
        self.attached = attached
    }

    var testDescription: String {
        "\(self.url) -> \(self.attached.isEmpty ? "nothing" : self.attached.joined(separator: ", "))"
    }
}

@Suite("Credentials and the credential store")
struct CredentialStoreTests {
    static let secrets = ["bearer-SECRET-1", "alice:SECRET-pw-2", "xauth-SECRET-3", "cookie-SECRET-4"]

    /// A bearer under api.example.com/v1/, an X-Auth-Token for **.example.com, a cookie for www.example.com.
    static func store(
        outOfScope: CredentialStore.OutOfScopeRequests = .sendWithoutCredentials
    ) throws
        -> CredentialStore
    {
        let store = CredentialStore(outOfScopeRequests: outOfScope)
        store.add(try .bearer(SecretBytes(utf8: "bearer-SECRET-1")), scope: try .under("https://api.example.com/v1/"))
        store.add(
            try .header("X-Auth-Token", value: SecretBytes(utf8: "xauth-SECRET-3")),
            scope: try .hosts(["**.example.com"])
        )
        store.add(
            try .cookie(name: "session", value: SecretBytes(utf8: "cookie-SECRET-4")),
            scope: try .hosts(["www.example.com"])
        )
        return store
    }

    static let scopeCases: [StoreScopeCase] = [
        StoreScopeCase("https://api.example.com/v1/me", ["authorization", "x-auth-token"]),
        StoreScopeCase("https://api.example.com/v1", ["authorization", "x-auth-token"]),
        StoreScopeCase("https://api.example.com/v1x", ["x-auth-token"]),
        StoreScopeCase("https://api.example.com/v2/me", ["x-auth-token"]),
        StoreScopeCase("https://api.example.com/v1/../admin", ["x-auth-token"]),
        StoreScopeCase("https://www.example.com/", ["x-auth-token", "cookie"]),
        StoreScopeCase("https://example.com/", ["x-auth-token"]),
        StoreScopeCase("http://api.example.com/v1/me", []),
        StoreScopeCase("https://api.example.com:8443/v1/me", []),
        StoreScopeCase("https://evil.net/v1/me", []),
        StoreScopeCase("https://api.example.com.evil.net/v1/", []),
        StoreScopeCase("https://api.example.com@evil.net/v1/", []),
    ]

    @Test("credentials are attached in scope only", arguments: scopeCases)
    func attachInScopeOnly(_ testCase: StoreScopeCase) async throws {
        let store = try Self.store()
        var headers: Headers = [("Accept", "*/*")]
        let attachment = try await store.attach(to: &headers, for: url(testCase.url))
        let expected: CredentialAttachment =
            testCase.attached.isEmpty ? .nothingInScope : .attached(headerNames: testCase.attached)
        #expect(attachment == expected)
        #expect(headers.count == 1 + testCase.attached.count)
        func ifAttached(_ name: String, _ value: String) -> String? {
            testCase.attached.contains(name) ? value : nil
        }
        #expect(value(headers, "Authorization") == ifAttached("authorization", "Bearer bearer-SECRET-1"))
        #expect(value(headers, "X-Auth-Token") == ifAttached("x-auth-token", "xauth-SECRET-3"))
        #expect(value(headers, "Cookie") == ifAttached("cookie", "session=cookie-SECRET-4"))
        #expect(store.isInScope(url(testCase.url)) == !testCase.attached.isEmpty)
    }

    @Test("a request whose path servers read differently gets no scoped credential (issue 16, defect 12)")
    func ambiguousPathGetsNothing() async throws {
        let store = try Self.store()
        for target in ["https://api.example.com/v1/..;/admin", "https://api.example.com/v1//../admin"] {
            var headers: Headers = []
            let attachment = try await store.attach(to: &headers, for: url(target))
            #expect(attachment == .attached(headerNames: ["x-auth-token"]), "\(target)")
            #expect(value(headers, "Authorization") == nil, "\(target)")
        }
        // The store says why, for the client's credential_stripped event (reason ambiguous_path).
        var headers: Headers = []
        let record = try await store.attach(to: &headers, for: url("https://api.example.com/v1/..;/admin"), among: nil)
        #expect(record.ambiguousPath == .parameterInDotSegment)
        let clean = try await store.attach(to: &headers, for: url("https://api.example.com/v2/x"), among: nil)
        #expect(clean.ambiguousPath == nil)
        let event = SecurityEvent.credentialsWithheldForAmbiguousPath(
            url: url("https://api.example.com/v1//../admin?token=SECRET"),
            ambiguity: .emptySegmentBeforeDotDot
        )
        #expect(event.shortDescription == "credential_stripped:ambiguous_path")
        #expect(event.details[.target]?.text == "https://api.example.com/v1//../admin")
        #expect(!event.description.contains("SECRET"))
    }

    @Test("the refuse policy refuses requests outside every scope")
    func refusePolicy() async throws {
        let store = try Self.store(outOfScope: .refuse)
        var headers: Headers = []
        let refused = try await store.attach(to: &headers, for: url("https://evil.net/steal"))
        #expect(refused == .refused(host: "evil.net"))
        #expect(!refused.allowsRequest)
        #expect(headers.isEmpty)
        let allowed = try await store.attach(to: &headers, for: url("https://example.com/"))
        #expect(allowed.allowsRequest)
        // An empty store protects nothing: it refuses nothing.
        var none: Headers = []
        #expect(
            try await CredentialStore(outOfScopeRequests: .refuse).attach(to: &none, for: url("https://x.test/"))
                == .nothingInScope
        )
    }

    @Test("header values: bearer, basic (base64), custom header, cookies merged into one Cookie header")
    func headerValues() async throws {
        let store = CredentialStore()
        let scope = try CredentialScope.hosts(["api.example.com"])
        store.add(try .basic(username: "Aladdin", password: SecretBytes(utf8: "open sesame")), scope: scope)
        store.add(try .cookie(name: "a", value: SecretBytes(utf8: "1")), scope: scope)
        store.add(try .cookie(name: "b", value: SecretBytes(utf8: "2")), scope: scope)
        var headers: Headers = [("cookie", "jar=0")]
        let attachment = try await store.attach(to: &headers, for: url("https://api.example.com/"))
        #expect(attachment == .attached(headerNames: ["authorization", "cookie"]))
        // RFC 7617's example.
        #expect(value(headers, "Authorization") == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        #expect(value(headers, "Cookie") == "jar=0; a=1; b=2")
        #expect(headers.count == 2)

        // The caller's own header wins; the store does not add a second one.
        var explicit: Headers = [("AUTHORIZATION", "Bearer caller")]
        _ = try await store.attach(to: &explicit, for: url("https://api.example.com/"))
        #expect(explicit.filter { $0.name.lowercased() == "authorization" }.map(\.value) == ["Bearer caller"])

        // Every padding case, checked against Foundation's base64.
        for password in ["", "f", "fo", "foo", "foob", "fooba", "foobar", "\u{FF}\u{FE}ü"] {
            let credential = try Credential.basic(username: "u", password: SecretBytes(utf8: password))
            let reference = Data(("u:" + password).utf8).base64EncodedString()
            #expect(credential.makeHeaderValue() == "Basic " + reference)
        }
    }

    @Test("values that could inject a header or a cookie are refused, and the error never shows them")
    func valueValidation() throws {
        func refused(_ make: () throws -> Credential) -> CredentialError? {
            do {
                _ = try make()
                return nil
            } catch {
                return error as? CredentialError
            }
        }
        let cases: [(CredentialError?, CredentialError.Code)] = [
            (refused { try .bearer(SecretBytes(utf8: "SECRET\r\nX-Evil: 1")) }, .invalidValue),
            (refused { try .bearer(SecretBytes(utf8: "SECRET with space")) }, .invalidValue),
            (refused { try .bearer(SecretBytes(utf8: "")) }, .emptyValue),
            (refused { try .bearer(SecretBytes(utf8: "SECRET-é")) }, .invalidValue),
            (refused { try .header("X-Auth-Token", value: SecretBytes(utf8: "SECRET\nx")) }, .invalidValue),
            (refused { try .header("X-Auth-Token", value: SecretBytes(utf8: " SECRET")) }, .invalidValue),
            (refused { try .header("X-Auth-Token", value: SecretBytes(utf8: "SECRET\t")) }, .invalidValue),
            (refused { try .header("X Auth", value: SecretBytes(utf8: "SECRET")) }, .invalidHeaderName),
            (refused { try .header("X-A:b", value: SecretBytes(utf8: "SECRET")) }, .invalidHeaderName),
            (refused { try .header("", value: SecretBytes(utf8: "SECRET")) }, .invalidHeaderName),
            (refused { try .header("Host", value: SecretBytes(utf8: "SECRET")) }, .reservedHeaderName),
            (refused { try .header("content-length", value: SecretBytes(utf8: "SECRET")) }, .reservedHeaderName),
            (refused { try .header("Cookie", value: SecretBytes(utf8: "SECRET")) }, .reservedHeaderName),
            (refused { try .cookie(name: "s", value: SecretBytes(utf8: "SECRET;admin=1")) }, .invalidValue),
            (refused { try .cookie(name: "s", value: SecretBytes(utf8: "SECRET x")) }, .invalidValue),
            (refused { try .cookie(name: "s=1", value: SecretBytes(utf8: "SECRET")) }, .invalidCookieName),
            (refused { try .basic(username: "a:b", password: SecretBytes(utf8: "SECRET")) }, .invalidUsername),
            (refused { try .basic(username: "a\n", password: SecretBytes(utf8: "SECRET")) }, .invalidUsername),
            (refused { try .basic(username: "a", password: SecretBytes(utf8: "SECRET\r\n")) }, .invalidValue),
        ]
        for (error, code) in cases {
            let error = try #require(error)
            #expect(error.code == code)
            #expect(!error.description.contains("SECRET"))
            #expect(!dumped(error).contains("SECRET"))
        }
        // Allowed: JWT-like tokens, header values with inner spaces, an empty cookie value, non-ASCII passwords.
        #expect(throws: Never.self) {
            _ = try Credential.bearer(SecretBytes(utf8: "eyJ.eyJ-_~+/=="))
            _ = try Credential.header("X-API-Key", value: SecretBytes(utf8: "Token a b"))
            _ = try Credential.header("Authorization", value: SecretBytes(utf8: "Token abc"))
            _ = try Credential.cookie(name: "s", value: SecretBytes([]))
            _ = try Credential.basic(username: "zoë", password: SecretBytes(utf8: "pässwörd"))
        }
    }

    @Test("no secret in description, debugDescription, interpolation, dump, Mirror or events")
    func nothingLeaks() async throws {
        let store = try Self.store()
        let basic = try Credential.basic(username: "alice", password: SecretBytes(utf8: "SECRET-pw-2"))
        store.add(basic, scope: try .hosts(["x.test"]))
        let credential = try Credential.bearer(SecretBytes(utf8: "bearer-SECRET-1"), expiresAt: Date())
        var texts = [
            store.description, String(describing: store), String(reflecting: store), "\(store)", dumped(store),
            credential.description, credential.debugDescription, "\(credential)", dumped(credential),
            String(reflecting: credential), dumped([credential, credential]), dumped(Optional(credential) as Any),
            dumped(["k": credential]), String(describing: Mirror(reflecting: credential).children.map(\.value)),
            credential.secret.description, dumped(credential.secret),
        ]
        var headers: Headers = []
        let attachment = try await store.attach(to: &headers, for: url("https://api.example.com/v1/"))
        texts += [attachment.description, dumped(attachment)]
        let providerError = CocoaError(.fileNoSuchFile, userInfo: ["token": "bearer-SECRET-1"])
        let scope = try CredentialScope.hosts(["a.test"])
        let refreshError = CredentialError(.refreshFailed, scope: scope, underlyingError: providerError)
        texts += [refreshError.description, dumped(refreshError), String(reflecting: refreshError)]
        for text in texts {
            for secret in Self.secrets + ["SECRET"] {
                #expect(!text.contains(secret), "\(text)")
            }
        }
        #expect(credential.description == "Credential(bearer, Authorization: <redacted>)")
        #expect(
            try Credential.cookie(name: "sid", value: SecretBytes(utf8: "v")).description
                == "Credential(cookie, sid=<redacted>)"
        )
        #expect(store.description.hasPrefix("CredentialStore(4 entries: bearer in https://api.example.com/v1/**; "))
        credential.wipe()
        #expect(credential.description == "Credential(bearer, Authorization: <wiped>)")
    }

    @Test("a refresh provider is never called for an out-of-scope URL")
    func refreshNotCalledOutOfScope() async throws {
        let counter = RefreshCounter()
        let store = CredentialStore()
        store.add(nil, scope: try .under("https://api.example.com/v1/")) { request in
            counter.record(request)
            return try .bearer(SecretBytes(utf8: "fresh-token"))
        }
        let outside = [
            "https://api.example.com/v1x", "https://api.example.com/", "http://api.example.com/v1/",
            "https://api.example.com:444/v1/", "https://evil.net/v1/", "https://api.example.com/v1/../x",
            "https://api.example.com/v1/%2e%2e/x",
        ]
        for text in outside {
            var headers: Headers = []
            #expect(try await store.attach(to: &headers, for: url(text)) == .nothingInScope)
            #expect(headers.isEmpty)
            #expect(try await store.refreshAfterRejection(for: url(text)) == false)
        }
        #expect(counter.count == 0)

        var headers: Headers = []
        let attachment = try await store.attach(to: &headers, for: url("https://api.example.com/v1/me"))
        #expect(attachment == .attached(headerNames: ["authorization"]))
        #expect(value(headers, "Authorization") == "Bearer fresh-token")
        #expect(counter.count == 1)
        #expect(counter.calledURLs == [url("https://api.example.com/v1/me")])
        #expect(counter.calledReasons == [.missing])

        // Installed: the next in-scope request does not refresh again.
        var again: Headers = []
        _ = try await store.attach(to: &again, for: url("https://api.example.com/v1/other"))
        #expect(counter.count == 1)
    }

    @Test("an expiring credential is refreshed shortly before its expiry, and the old one is wiped")
    func expiringRefresh() async throws {
        let clock = ManualClock()
        let counter = RefreshCounter()
        let store = CredentialStore(refreshMargin: 60, now: { clock.now })
        let first = try Credential.bearer(SecretBytes(utf8: "token-1"), expiresAt: clock.now + 300)
        store.add(first, scope: try .hosts(["api.example.com"])) { request in
            counter.record(request)
            return try .bearer(SecretBytes(utf8: "token-\(counter.count + 1)"), expiresAt: clock.now + 300)
        }
        var headers: Headers = []
        _ = try await store.attach(to: &headers, for: url("https://api.example.com/"))
        #expect(value(headers, "Authorization") == "Bearer token-1")
        #expect(counter.count == 0)

        clock.advance(by: 241)  // 59 s left: inside the margin
        headers = []
        _ = try await store.attach(to: &headers, for: url("https://api.example.com/"))
        #expect(value(headers, "Authorization") == "Bearer token-2")
        #expect(counter.calledReasons == [.expiring])
        #expect(first.isWiped)
    }

    @Test("a rejected credential is refreshed on request, in scope only")
    func rejectionRefresh() async throws {
        let counter = RefreshCounter()
        let store = CredentialStore()
        store.add(try .bearer(SecretBytes(utf8: "old")), scope: try .hosts(["api.example.com"])) { request in
            counter.record(request)
            return try .bearer(SecretBytes(utf8: "new"))
        }
        #expect(try await store.refreshAfterRejection(for: url("https://other.example.com/")) == false)
        #expect(counter.count == 0)
        #expect(try await store.refreshAfterRejection(for: url("https://api.example.com/")) == true)
        #expect(counter.calledReasons == [.rejected])
        var headers: Headers = []
        _ = try await store.attach(to: &headers, for: url("https://api.example.com/"))
        #expect(value(headers, "Authorization") == "Bearer new")
    }

    @Test("concurrent requests share one refresh")
    func sharedRefresh() async throws {
        let counter = RefreshCounter()
        let gate = Gate()
        let store = CredentialStore()
        store.add(nil, scope: try .hosts(["api.example.com"])) { request in
            counter.record(request)
            await gate.wait()
            return try .bearer(SecretBytes(utf8: "shared"))
        }
        let values = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<8 {
                group.addTask {
                    var headers: Headers = []
                    _ = try await store.attach(to: &headers, for: url("https://api.example.com/\(index)"))
                    return value(headers, "Authorization")
                }
            }
            await gate.waitUntilWaiting()
            try await Task.sleep(for: .milliseconds(50))
            await gate.open()
            var values: [String?] = []
            for try await value in group { values.append(value) }
            return values
        }
        #expect(values == Array(repeating: "Bearer shared", count: 8))
        #expect(counter.count == 1)
    }

    @Test("a provider's error is reported as refreshFailed without its text; the next request tries again")
    func refreshFailure() async throws {
        struct ProviderError: Error, CustomStringConvertible {
            var description: String { "login failed for token SECRET-xyz" }
        }
        let counter = RefreshCounter()
        let store = CredentialStore()
        store.add(nil, scope: try .hosts(["api.example.com"])) { request in
            counter.record(request)
            if counter.count == 1 { throw ProviderError() }
            return try .bearer(SecretBytes(utf8: "second-try"))
        }
        let error = await #expect(throws: CredentialError.self) {
            var headers: Headers = []
            try await store.attach(to: &headers, for: url("https://api.example.com/"))
        }
        #expect(error?.code == .refreshFailed)
        #expect(error?.underlyingError is ProviderError)
        #expect(error?.description.contains("SECRET") == false)
        #expect(error?.description.contains("ProviderError") == true)
        var headers: Headers = []
        _ = try await store.attach(to: &headers, for: url("https://api.example.com/"))
        #expect(value(headers, "Authorization") == "Bearer second-try")
    }

    @Test("sign-out: no credential and no provider call afterwards; remove() wipes one entry")
    func signOutAndRemove() async throws {
        let counter = RefreshCounter()
        let store = try Self.store()
        let refreshed = store.add(nil, scope: try .hosts(["refresh.example.org"])) { request in
            counter.record(request)
            return try .bearer(SecretBytes(utf8: "refreshed"))
        }
        #expect(store.credentialHeaderNames == ["authorization", "x-auth-token", "cookie"])
        #expect(store.count == 4)
        #expect(store.signOut() == 4)
        #expect(store.count == 0)
        #expect(store.description == "CredentialStore(empty)")
        for text in ["https://api.example.com/v1/me", "https://www.example.com/", "https://refresh.example.org/"] {
            var headers: Headers = [("Accept", "*/*")]
            #expect(try await store.attach(to: &headers, for: url(text)) == .nothingInScope)
            #expect(headers.count == 1)
        }
        #expect(counter.count == 0)
        store.remove(refreshed)  // already gone: no effect

        let single = CredentialStore()
        let credential = try Credential.bearer(SecretBytes(utf8: "to-remove"))
        let id = single.add(credential, scope: try .hosts(["a.test"]))
        single.remove(id)
        #expect(credential.isWiped)
        #expect(single.count == 0)
        #expect(id.description.hasPrefix("#"))
    }

    @Test("expiry helpers")
    func expiry() throws {
        let now = Date(timeIntervalSince1970: 1000)
        let credential = try Credential.header("X-Key", value: SecretBytes(utf8: "k"), expiresAt: now + 10)
        #expect(!credential.isExpired(at: now))
        #expect(credential.isExpired(at: now, margin: 10))
        #expect(credential.isExpired(at: now + 10))
        #expect(!(try Credential.bearer(SecretBytes(utf8: "k"))).isExpired(at: .distantFuture))
    }
}
