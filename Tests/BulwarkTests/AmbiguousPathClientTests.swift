import Bulwark
import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import Testing

/// Issue 16, defect 12, through the client: a request whose path servers read differently goes without the
/// credential of a base-URL scope, and a `credential_stripped` event (reason `ambiguous_path`) says why.
@Suite("Ambiguous paths and scoped credentials, through the client")
struct AmbiguousPathClientTests {
    @Test("/v1/..;/x and /v1//../x get no credential scoped to /v1/; /v1/x does")
    func ambiguousPaths() async throws {
        try await TwoOrigins.with(
            configure: { configuration, portA, _ in
                let store = CredentialStore()
                let base = "https://\(TwoOrigins.a):\(portA)/v1/"
                store.add(try .bearer(SecretBytes(utf8: "scoped-token")), scope: try .under(base))
                configuration.credentials = store
            },
            { origins in
                func authorization(_ request: RecordedRequest?) -> String? {
                    request?.headers.first { $0.name.lowercased() == "authorization" }?.value
                }
                for path in ["/v1/..;/headers", "/v1//../headers"] {
                    _ = try await Harness.get(origins.client, origins.url(TwoOrigins.a, path))
                    let seen = origins.serverA.requests.last
                    #expect(seen?.uri == path, "the path went out as written")
                    #expect(authorization(seen) == nil, "\(path)")
                }
                let events = origins.monitor.events.filter { $0.kind == .credentialStripped }
                #expect(events.map(\.reason) == ["ambiguous_path", "ambiguous_path"])
                let ambiguities = events.map { $0.details[.ambiguity]?.text }
                #expect(ambiguities == ["parameter_in_dot_segment", "empty_segment_before_dot_dot"])
                #expect(events.first?.host == TwoOrigins.a)
                _ = try await Harness.get(origins.client, origins.url(TwoOrigins.a, "/v1/headers"))
                #expect(authorization(origins.serverA.requests.last) == "Bearer scoped-token")
                #expect(origins.monitor.events.filter { $0.kind == .credentialStripped }.count == 2)
            }
        )
    }
}
