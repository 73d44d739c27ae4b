import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Bulwark

/// Issue 20, rotation under load against nginx (`ssl_verify_client on`), which echoes the subject of the client
/// certificate each request's connection authenticated with in `X-Client-DN`.
@Suite("Client identity rotation under load against nginx", .serialized, .tags(.externalPeers))
struct ClientIdentityRotationInteropTests {
    let chain = InteropChain.shared
    let clientCA: TestIdentity

    init() throws {
        self.clientCA = try CertificateFactory.makeRoot(commonName: "Bulwark Rotation Client CA")
    }

    /// What one request saw: the rotations complete before it started, those begun by its end, and the subject
    /// nginx echoed.
    struct Seen: Sendable {
        var completedBefore: Int
        var begunAfter: Int
        var subject: String
    }

    /// 1,000 requests over 8 tasks while the identity is replaced twice: each uses the identity current when its
    /// connection was made, none fails, and the replaced keys are freed.
    @Test("rotation under load", arguments: [NginxServer.Variant.modern, .modernHTTP1])
    func rotationUnderLoad(variant: NginxServer.Variant) async throws {
        let nginx = try await NginxServer.start(
            chain: self.chain,
            variant: variant,
            clientCA: self.clientCA.certificate
        )
        defer { nginx.stop() }
        let monitor = RecordingEventMonitor()
        // The identities live in the client only (and, until handed over, in `pending`): the watches hold weak
        // references to their keys.
        var pending = try (0..<3).map {
            try ClientCertificates.identity(try ClientCertificates.leaf(self.clientCA, commonName: "device-\($0)"))
        }
        let watches = pending.map(ClientIdentityRotationClientTests.KeyWatch.init)
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: [
                "localhost": .default(roots: .custom([self.chain.root.certificate]))
            ])
        )
        configuration.clientIdentities = try .init(["localhost": pending.removeFirst()])
        configuration.eventMonitor = monitor
        let client = BulwarkClient(configuration: configuration)
        configuration = BulwarkClient.Configuration(trust: configuration.trust)

        // `begun` counts rotations started (raised before the update), `completed` those finished (raised after):
        // the identity a request used was selected between its start and its end, so its number lies between the
        // `completed` count read before the request and the `begun` count read after it.
        let begun = NIOLockedValueBox(0)
        let completed = NIOLockedValueBox(0)
        let finished = NIOLockedValueBox(0)
        let total = 1_000
        let tasks = 8
        let url = "https://localhost:\(nginx.port)/hello"
        let seen = try await withThrowingTaskGroup(of: [Seen].self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    var seen: [Seen] = []
                    for _ in 0..<(total / tasks) {
                        let before = completed.withLockedValue { $0 }
                        let response = try await client.execute(BulwarkRequest(url: url), timeout: .seconds(30))
                        _ = try await response.body.collect(upTo: 1 << 16)
                        #expect(response.status == .ok)
                        let after = begun.withLockedValue { $0 }
                        seen.append(
                            Seen(
                                completedBefore: before,
                                begunAfter: after,
                                subject: response.headers["x-client-dn"].first ?? ""
                            )
                        )
                        finished.withLockedValue { $0 += 1 }
                    }
                    return seen
                }
            }
            var all: [Seen] = []
            // Two replacements, at a third and two thirds of the load.
            for threshold in [total / 3, 2 * total / 3] {
                while finished.withLockedValue({ $0 }) < threshold { try await Task.sleep(for: .milliseconds(2)) }
                begun.withLockedValue { $0 += 1 }
                client.updateClientIdentity(pending.removeFirst(), for: try HostPattern("localhost"))
                completed.withLockedValue { $0 += 1 }
            }
            for try await part in group { all += part }
            return all
        }
        #expect(seen.count == total)
        for request in seen {
            let number = Int(request.subject.dropFirst("CN=device-".count)) ?? -1
            #expect(
                (request.completedBefore...request.begunAfter).contains(number),
                "\(request.subject) used by a request that started after \(request.completedBefore) replacements"
            )
        }
        let counts = Dictionary(grouping: seen, by: \.subject).mapValues(\.count)
        #expect(counts.keys.sorted() == ["CN=device-0", "CN=device-1", "CN=device-2"], "\(counts)")
        #expect(monitor.events.filter { $0.kind == .clientIdentityUpdated }.count == 2)
        // Every connection made with a replaced identity closed, and nothing holds the replaced keys any more.
        let closed = try await ClientIdentityRotationClientTests().eventually {
            watches[0].isFreed && watches[1].isFreed
        }
        #expect(closed, "a replaced identity's key is still referenced")
        #expect(!watches[2].isFreed)
        print(
            "rotation (\(variant.rawValue)): \(seen.count) requests, by identity \(counts.sorted { $0.key < $1.key }), "
                + "\(client.openConnectionCount) connections open at the end"
        )
        await client.shutdown()
    }
}
