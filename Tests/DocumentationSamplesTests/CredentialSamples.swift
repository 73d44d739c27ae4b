import Bulwark
import Foundation

/// The Swift code blocks of the "Credentials and sign-out" article (Bulwark.docc/CredentialsAndSignOut.md).
enum CredentialSamples {
    /// A store with several kinds of credentials and scopes. Compile-only.
    static func store(
        configuration: inout BulwarkClient.Configuration,
        token: String,
        apiKey: [UInt8],
        login: some LoginService
    ) throws {
        // docs:begin credentials-store
        let store = CredentialStore(outOfScopeRequests: .refuse)  // a request outside every scope fails
        store.add(
            try .bearer(SecretBytes(utf8: token), expiresAt: Date().addingTimeInterval(3600)),
            scope: try .under("https://api.example.com/v1/"),
            refresh: { request in try await login.refresh(request) }  // on expiry, on a 401, never out of scope
        )
        store.add(
            try .header("X-API-Key", value: SecretBytes(apiKey)),
            scope: try .hosts(["**.metrics.example.com"])
        )
        configuration.credentials = store
        // docs:end
    }

    /// What a scope contains. Runs in `SampleRunTests` (no network).
    static func scopes() throws -> [Bool] {
        // docs:begin credentials-scope
        let scope = try CredentialScope.under("https://api.example.com/v1/")
        print(scope.contains(URL(string: "https://api.example.com/v1/me")!))  // true
        print(scope.contains(URL(string: "https://api.example.com/v10/me")!))  // false: segments, not string prefixes
        print(scope.contains(URL(string: "https://api.example.com/v1/..;/admin")!))  // false: Tomcat reads /admin
        let encoded = URL(string: "https://api.example.com/v1/%2e%2e/admin")!
        if let ambiguity = CredentialScope.pathAmbiguity(of: encoded) {
            print(ambiguity.explanation)  // encoded dots: in no base-URL scope, sent without the credential
        }
        // docs:end
        return [
            scope.contains(URL(string: "https://api.example.com/v1/me")!),
            scope.contains(URL(string: "https://api.example.com/v10/me")!),
            scope.contains(URL(string: "https://api.example.com/v1/..;/admin")!),
            CredentialScope.pathAmbiguity(of: URL(string: "https://api.example.com/v1/%2e%2e/admin")!) != nil,
        ]
    }

    /// Cookies. Compile-only.
    static func cookies(configuration: inout BulwarkClient.Configuration) {
        // docs:begin credentials-cookies
        configuration.cookies = CookieJar()  // off by default: no cookie is kept unless you ask
        // docs:end
    }

    /// Sign-out. Runs in `SampleRunTests` against a local server.
    static func signOut(client: BulwarkClient) async -> BulwarkClient.SignOutSummary {
        // docs:begin credentials-sign-out
        let summary = await client.signOut()
        print(summary)  // 1 credentials, 2 cookies, 1 connections closed
        // docs:end
        return summary
    }
}
