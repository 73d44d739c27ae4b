import Bulwark
import BulwarkAudit
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing

/// Runs the documentation samples that can run here: those that decide offline, and those whose requests a local
/// test server (Sources/BulwarkTestSupport) answers on 127.0.0.1. The other samples are compiled only; each says so.
@Suite("Documentation samples that run")
struct SampleRunTests {
    static let host = "api.example.com"

    /// A server for `host` on 127.0.0.1, under a new test CA.
    struct Local {
        let chain: TestChain
        let server: TestHTTPSServer

        static func start() async throws -> Local {
            let chain = try TestChain.make(host: SampleRunTests.host)
            let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
            return Local(chain: chain, server: server)
        }

        /// A client that trusts the test CA for `host` and reaches the server at 127.0.0.1.
        func client(
            evaluator: (any ServerTrustEvaluating)? = nil,
            configure: (inout BulwarkClient.Configuration) throws -> Void = { _ in }
        ) throws -> BulwarkClient {
            let evaluator = evaluator ?? DefaultTrustEvaluator(roots: .custom([self.chain.root.certificate]))
            var configuration = BulwarkClient.Configuration(
                trust: ServerTrustManager(patterns: [(try HostPattern(SampleRunTests.host), evaluator)])
            )
            configuration.resolveOverrides[.init(host: SampleRunTests.host, port: self.server.port)] = "127.0.0.1"
            try configure(&configuration)
            return BulwarkClient(configuration: configuration)
        }

        func url(_ path: String) -> String { self.server.url(path, host: SampleRunTests.host) }

        func stop(_ client: BulwarkClient) async throws {
            await client.shutdown()
            try await self.server.shutdown()
        }
    }

    @Test func gettingStartedGetAndPost() async throws {
        let local = try await Local.start()
        let client = try local.client()
        let text = try await GettingStartedSamples.get(client: client, url: local.url("/hello"))
        #expect(text == "hello")
        let response = try await GettingStartedSamples.post(client: client, url: local.url("/echo"))
        #expect(response.status == .ok)
        let echoed = try await response.body.collect(upTo: 1 << 20)
        #expect(String(buffer: echoed) == #"{"name":"Ada"}"#)
        try await local.stop(client)
    }

    @Test func gettingStartedErrorsAndTheRefusalCounter() async throws {
        let local = try await Local.start()
        let counter = EventSamples.RefusalCounter()
        let otherKey = try TestChain.make(host: SampleRunTests.host)
        let pins = try PinSet(
            [Pin.publicKey(of: otherKey.leaf.certificate), Pin.publicKey(of: otherKey.root.certificate)]
        )
        let client = try local.client(
            evaluator: .publicKeys(pins, roots: .custom([local.chain.root.certificate]))
        ) { $0.eventMonitor = counter }
        await GettingStartedSamples.handleErrors(client: client, request: BulwarkRequest(url: local.url("/hello")))
        #expect(counter.snapshot == [SampleRunTests.host: 1])
        #expect(local.server.requests.isEmpty)
        try await local.stop(client)
    }

    @Test func readmePolicyRefusesAChainItsPinsDoNotMatch() async throws {
        let chain = try TestChain.make(host: SampleRunTests.host)
        let decision = try await ReadmeSamples.policy(presentedChain: chain.presentedChain)
        #expect(!decision.isTrusted)
    }

    @Test func pinsOfAChain() throws {
        let chain = try TestChain.make(host: SampleRunTests.host)
        let lines = PinningSamples.pinsOfChain(chain: chain.presentedChain)
        #expect(lines.count == chain.presentedChain.count + 1)
        #expect(lines.last == Pin.publicKey(of: chain.presentedChain[1]).description)
        #expect(lines.allSatisfy { $0.hasPrefix("sha256/") })
    }

    @Test func redirectDecidedOffline() throws {
        let decision = try RedirectSamples.decideOffline()
        let next = try #require(decision.follow)
        #expect(next.method == "GET")
        #expect(next.url.absoluteString == "https://cdn.example.com/x")
        #expect(next.strippedCredentials == ["authorization"])
    }

    @Test func redirectHistoryEndsInTheRefusedHop() async throws {
        let local = try await Local.start()
        let client = try local.client { $0.redirects.onRefusal = .returnRedirectResponse }
        let away = local.url("/redirect/302?to=https://elsewhere.example.net/")
        let request = BulwarkRequest(url: local.url("/redirect/301?to=" + away))
        let records = try await RedirectSamples.history(client: client, request: request)
        #expect(records.count == 2)
        #expect(records.first?.decision.follow != nil)
        #expect(records.last?.decision.refusal?.reason.shortDescription == "host_not_allowed")
        try await local.stop(client)
    }

    @Test func credentialScopes() throws {
        #expect(try CredentialSamples.scopes() == [true, false, false, true])
    }

    @Test func signOutClosesTheCredentialedConnection() async throws {
        let local = try await Local.start()
        let store = CredentialStore()
        let client = try local.client {
            store.add(try .bearer(SecretBytes(utf8: "token")), scope: try .under(local.url("/")))
            $0.credentials = store
        }
        let response = try await client.execute(BulwarkRequest(url: local.url("/hello")), timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
        let summary = await CredentialSamples.signOut(client: client)
        #expect(summary.credentials == 1)
        #expect(summary.connectionsClosed == 1)
        #expect(store.count == 0)
        try await local.stop(client)
    }

    @Test func eventDetailsOfARequest() async throws {
        let local = try await Local.start()
        let monitor = RecordingEventMonitor()
        let client = try local.client { $0.eventMonitor = monitor }
        let response = try await client.execute(BulwarkRequest(url: local.url("/hello")), timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
        let lines = EventSamples.details(monitor: monitor)
        #expect(lines.contains("trust_evaluated"))
        try await local.stop(client)
    }

    @Test func tamperEvidentLogWrittenAndVerified() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bulwark-docs-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("key").path
        _ = FileManager.default.createFile(atPath: keyPath, contents: Data((0..<32).map { UInt8($0 * 7 & 0xFF) }))
        let chain = try TestChain.make(host: SampleRunTests.host)
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: [
                SampleRunTests.host: .default(roots: .custom([chain.root.certificate]))
            ])
        )
        let summary = try EventSamples.tamperEvidentLog(
            configuration: &configuration,
            path: directory.appendingPathComponent("events.log").path,
            keyPath: keyPath
        )
        #expect(summary.authenticated)
        #expect(summary.ending == .closed)
    }

    @Test func migrationCountingAndDownload() async throws {
        let local = try await Local.start()
        let client = try local.client()
        let count = try await MigrationSamples.countBytes(
            client: client,
            request: BulwarkRequest(url: local.url("/bytes/200000"))
        )
        #expect(count == 200_000)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bulwark-docs-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var reports = 0
        let written = try await MigrationSamples.download(
            client: client,
            BulwarkRequest(url: local.url("/bytes/300000")),
            to: path
        ) { received, total in
            reports += 1
            #expect(total == 300_000 && received <= 300_000)
        }
        #expect(written == 300_000)
        #expect(reports >= 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == 300_000)
        try await local.stop(client)
    }
}
