import Bulwark
import BulwarkPolicy
import Foundation
import X509

/// The Swift code blocks first written for README.md (the quick start there; the rest now in the DocC articles).
enum ReadmeSamples {
    /// "The client": a pinned client, one request, its body, shutdown. Compile-only (its pins are placeholders).
    static func client() async throws {
        // docs:begin readme-client
        let client = BulwarkClient(
            configuration: .init(
                trust: try ServerTrustManager(evaluators: [
                    "api.example.com": .publicKeys(try PinSet(["sha256/…", "sha256/…"]))
                ])
            )
        )
        let response = try await client.execute(
            BulwarkRequest(url: "https://api.example.com/v1/me"),
            timeout: .seconds(30)
        )
        let body = try await response.body.collect(upTo: 1 << 20)  // or: for try await chunk in response.body { … }
        await client.shutdown()
        // docs:end
        _ = body
    }

    /// "A policy": a manager with a pinned host and a wildcard, and one evaluation. Runs in `SampleRunTests` on a
    /// chain that the pins do not match.
    static func policy(presentedChain: [Certificate]) async throws -> TrustDecision {
        // docs:begin readme-policy
        let manager = try ServerTrustManager(evaluators: [
            // The intermediate's key and a backup key: a rotation does not lock users out.
            "api.example.com": .publicKeys(
                try PinSet([
                    "sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg=",
                    "sha256/LOUIbIk5ZUo2ZAFZukZzDCNVkKbhZRzx/hdUqBhjs6U=",
                ])
            ),
            // Any depth below example.com, including example.com itself: default chain and host validation.
            "**.example.com": .default(),
        ])
        // Hosts matching no pattern are refused (allHostsMustBeEvaluated defaults to true).

        switch await manager.evaluate(presentedChain, forHost: "api.example.com") {
        case .trusted(let chain):
            print("verified path:", chain.certificates.map { CertificateSummary($0).pinLine })
        case .refused(let refusal):
            print(refusal)  // names the host, the verified chain as `sha256/…: subject` lines, and the pins expected
        }
        // docs:end
        return await manager.evaluate(presentedChain, forHost: "api.example.com")
    }

    /// "Policy files": a client configuration from a policy file, with a credential from code for one of its
    /// scopes. Compile-only (it reads a file by a relative path).
    static func policyFile(token: String) throws -> BulwarkClient.Configuration {
        // docs:begin readme-policy-file
        let policy = try PolicyFile(contentsOfFile: "bulwark-policy.json")
        var configuration = try BulwarkClient.Configuration(policy: policy)  // trust, TLS, allowlist, redirects, mTLS
        let store = CredentialStore()
        // Secrets come from code, never from the policy file.
        store.add(try .bearer(SecretBytes(utf8: token)), scope: policy.credentialScope(named: "api")!)
        configuration.credentials = store
        // or only the trust manager: try ServerTrustManager(policyFile: "bulwark-policy.json")
        // docs:end
        return configuration
    }

    /// "Revocation": a manager whose hosts check revocation. Compile-only (it is only made).
    static func revocation(pins: PinSet) throws -> ServerTrustManager {
        // docs:begin readme-revocation
        let trust = ServerTrustManager(patterns: [
            (try HostPattern("api.example.com"), .revocation(.publicKeys(pins), mode: .hard)),
            (try HostPattern("**.example.com"), .revocation(.default(), method: .crl, mode: .soft)),
        ])
        // docs:end
        return trust
    }

    /// "Client certificates": identities by host pattern. Compile-only.
    static func clientIdentities(
        configuration: inout BulwarkClient.Configuration,
        deviceIdentity: ClientIdentity,
        serviceIdentity: ClientIdentity
    ) throws {
        // docs:begin readme-client-identities
        configuration.clientIdentities = try .init([
            "api.bank.example": deviceIdentity,
            "**.internal.example": serviceIdentity,
        ])
        // docs:end
    }

    /// "Secrets, credentials and output encoding": a credential store, a cookie jar, sign-out. Compile-only.
    static func credentials(
        configuration: inout BulwarkClient.Configuration,
        token: String,
        login: some LoginService
    ) async throws {
        // docs:begin readme-credentials
        let store = CredentialStore()  // or CredentialStore(outOfScopeRequests: .refuse)
        store.add(
            try .bearer(SecretBytes(utf8: token)),
            scope: try .under("https://api.example.com/v1/"),
            refresh: { request in try await login.refresh(request) }
        )  // never called out of scope
        configuration.credentials = store
        configuration.cookies = CookieJar()  // RFC 6265; nil (no cookies) by default, as in OkHttp
        let client = BulwarkClient(configuration: configuration)
        // … requests …
        let summary = await client.signOut()  // credentials, cookies, credentialed connections
        // docs:end
        _ = summary
    }
}
