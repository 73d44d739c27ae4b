import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing

/// The revocation fetcher against nginx on loopback: what it follows, what it refuses, and what it costs at most.
@Suite("Fetching revocation data over plain HTTP", .tags(.externalPeers), .serialized)
struct HTTPRevocationFetcherTests {
    /// `timeout` is in seconds. Only the silent server's test is about the time limit: for the others a short one
    /// only made a loaded machine fail them.
    static func fetch(
        _ url: String,
        maximum: Int = 1 << 20,
        body: [UInt8]? = nil,
        timeout: Int64 = 30
    ) async throws(RevocationFetchError)
        -> [UInt8]
    {
        try await HTTPRevocationFetcher(timeout: .seconds(timeout))
            .fetch(RevocationFetchRequest(kind: .crl, url: url, body: body, maximumResponseSize: maximum))
    }

    static func failure(_ url: String, maximum: Int = 1 << 20, timeout: Int64 = 30) async -> RevocationFetchError? {
        do {
            _ = try await Self.fetch(url, maximum: maximum, timeout: timeout)
            Issue.record("\(url) was fetched")
            return nil
        } catch {
            return error
        }
    }

    @Test func fetchesFollowsSameOriginRedirectsAndRefusesTheRest() async throws {
        let port = try ExternalPeers.freePort()
        let server = try await PlainHTTPServer.start(
            port: port,
            extra: """
                location = /moved { return 302 /list.crl; }
                location = /away { return 302 http://localhost:\(port)/list.crl; }
                location = /loop { return 302 /loop; }
                location = /secure { return 302 https://127.0.0.1:\(port)/list.crl; }
                """
        )
        defer { server.stop() }
        let list = [UInt8](repeating: 0x30, count: 4_096)
        try server.serve("list.crl", list)
        let base = "http://127.0.0.1:\(port)"
        #expect(try await Self.fetch("\(base)/list.crl") == list)
        #expect(try await Self.fetch("\(base)/moved") == list, "same-origin redirect followed")
        #expect(await Self.failure("\(base)/away")?.code == "redirect_refused", "another host name is another origin")
        #expect(await Self.failure("\(base)/secure")?.code == "redirect_refused")
        #expect(await Self.failure("\(base)/loop")?.code == "redirect_refused", "at most three redirects")
        let missing = await Self.failure("\(base)/none.crl")
        #expect(missing?.code == "http_status")
        #expect(missing?.description == "\(base)/none.crl answered with HTTP status 404")
        let large = await Self.failure("\(base)/list.crl", maximum: 1_000)
        #expect(large?.code == "too_large")
        #expect(large?.description == "the response of \(base)/list.crl is larger than the limit of 1000 bytes")
        // POST (an OCSP request too large for GET) reaches the server with its body and content type.
        let posted = try? await Self.fetch("\(base)/list.crl", body: [1, 2, 3])
        #expect(posted == nil, "nginx refuses POST to a static file (405)")
        // Refused before its body was read: nginx logs it once it has read the rest (see `requests(until:)`).
        let logged = await server.requests(until: { $0.last == "POST /list.crl HTTP/1.1" })
        #expect(logged.last == "POST /list.crl HTTP/1.1", "\(logged)")
    }

    @Test func refusesWhatIsNotPlainHTTP() async {
        for url in ["https://127.0.0.1:1/ca.crl", "ldap://ldap.example/cn=CA", "file:///etc/passwd", "not a url"] {
            let error = await Self.failure(url)
            #expect(error?.code == "unsupported_url", "\(url): \(String(describing: error))")
        }
        let https = await Self.failure("https://127.0.0.1:1/ca.crl")
        #expect(https?.description.contains("over http:// only") == true, "\(String(describing: https))")
    }

    @Test func aClosedPortAndASilentServer() async throws {
        let reserved = try ExternalPeers.ClosedPort()
        defer { withExtendedLifetime(reserved) {} }
        let closed = reserved.port
        let refused = await Self.failure("http://127.0.0.1:\(closed)/ca.crl")
        #expect(refused?.description == "http://127.0.0.1:\(closed)/ca.crl could not be reached (connection refused)")
        let stalled = try StalledListener(port: try ExternalPeers.freePort())
        defer { stalled.stop() }
        let clock = ContinuousClock()
        let start = clock.now
        let silent = await Self.failure("http://127.0.0.1:\(stalled.port)/ca.crl", timeout: 2)
        #expect(silent?.code == "timed_out")
        #expect(silent?.description == "http://127.0.0.1:\(stalled.port)/ca.crl did not answer within 2 s")
        // The upper bound only catches a fetch that never ends: on a loaded machine, peers' stop() and the shared
        // thread pool stretch the wait well past the time limit.
        #expect(clock.now - start < .seconds(20))
    }
}
