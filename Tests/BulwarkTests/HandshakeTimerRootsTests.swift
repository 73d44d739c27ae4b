import BulwarkPolicy
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOPosix
import Testing
import X509

@testable import Bulwark

/// The handshake timer and the system roots' parse (issue 43): the roots are parsed once per process, in the
/// background from the moment a configuration names them, and a handshake timer is armed only once that parse has
/// ended, so a slow parse (a loaded debug build once took more than the 10 s handshake timeout) is never the server's
/// time. The parse is stood in for by a load the test controls, and by an evaluator that waits for it, as a
/// verification against the system roots waits for swift-certificates' parse.
@Suite("The handshake timer is armed after the system roots are parsed", .tags(.timing))
struct HandshakeTimerRootsTests {
    /// Waits for `load`, then evaluates as `base` does.
    struct WaitingEvaluator: ServerTrustEvaluating {
        let load: BackgroundLoad
        let base: any ServerTrustEvaluating

        func evaluate(_ chain: [Certificate], forHost host: String, at time: Date) async -> TrustDecision {
            await withCheckedContinuation { continuation in
                self.load.whenSettled { continuation.resume() }
            }
            return await self.base.evaluate(chain, forHost: host, at: time)
        }
    }

    func connector(
        chain: TestChain,
        port: Int,
        load: BackgroundLoad,
        handshakeTimeout: TimeAmount
    ) throws -> Connector {
        let evaluator = WaitingEvaluator(
            load: load,
            base: DefaultTrustEvaluator(roots: .custom([chain.root.certificate]))
        )
        var configuration = BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [(try HostPattern(Harness.host), evaluator)])
        )
        configuration.timeouts.tlsHandshake = handshakeTimeout
        configuration.resolveOverrides[.init(host: Harness.host, port: port)] = "127.0.0.1"
        var connector = try Connector(
            configuration: configuration,
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton
        )
        connector.settings.rootsLoad = load
        return connector
    }

    static func slowLoad(_ duration: Duration) -> BackgroundLoad {
        let load = BackgroundLoad { try? await Task.sleep(for: duration) }
        load.start()
        return load
    }

    /// (750 ms: longer than the timeout, shorter than twice it, past which the timer is armed anyway.)
    @Test("a parse longer than the handshake timeout does not time the handshake out")
    func aSlowParseIsNotTheServersTime() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        defer { Task { try? await server.shutdown() } }
        let connector = try self.connector(
            chain: chain,
            port: server.port,
            load: Self.slowLoad(.milliseconds(750)),
            handshakeTimeout: .milliseconds(500)
        )
        let (channel, _, info) = try await connector.connectTLS(
            host: Harness.host,
            port: server.port,
            on: MultiThreadedEventLoopGroup.singleton.next(),
            configure: { _, _ in () }
        ).get()
        #expect(info.trustedChain != nil)
        try? await channel.close()
    }

    @Test("a timer armed before the parse ends would have timed the same handshake out (the behaviour before)")
    func theTimerArmedAtOnceTimesOut() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        defer { Task { try? await server.shutdown() } }
        var connector = try self.connector(
            chain: chain,
            port: server.port,
            load: Self.slowLoad(.milliseconds(750)),
            handshakeTimeout: .milliseconds(500)
        )
        // The timer's load is one that is settled, as the handshake timer was armed before this change.
        connector.settings.rootsLoad = BackgroundLoad {}
        let error = await #expect(throws: BulwarkError.self) {
            _ = try await connector.connectTLS(
                host: Harness.host,
                port: server.port,
                on: MultiThreadedEventLoopGroup.singleton.next(),
                configure: { _, _ in () }
            ).get()
        }
        #expect(error?.code == .tlsHandshakeTimeout)
    }

    @Test("the deadline still bounds a handshake that waits for the parse")
    func theDeadlineStillBounds() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        defer { Task { try? await server.shutdown() } }
        let connector = try self.connector(
            chain: chain,
            port: server.port,
            load: Self.slowLoad(.seconds(5)),
            handshakeTimeout: .seconds(10)
        )
        let started = ContinuousClock.now
        let error = await #expect(throws: BulwarkError.self) {
            _ = try await connector.connectTLS(
                host: Harness.host,
                port: server.port,
                on: MultiThreadedEventLoopGroup.singleton.next(),
                deadline: .now() + .milliseconds(400),
                configure: { _, _ in () }
            ).get()
        }
        #expect(error?.code == .deadlineExceeded)
        #expect(ContinuousClock.now - started < .seconds(4), "the deadline waited for the parse")
    }

    @Test("a parse that never ends arms the timer after one more timeout: a stalled server is never unbounded")
    func aLoadThatNeverEndsStillBoundsTheHandshake() async throws {
        // A server that accepts and never answers the client's hello.
        let stalled = try await ScriptedProxyServer.start(.silent)
        defer { Task { try? await stalled.shutdown() } }
        let chain = try TestChain.make(host: Harness.host)
        let never = BackgroundLoad { await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in } }
        never.start()
        let connector = try self.connector(
            chain: chain,
            port: stalled.port,
            load: never,
            handshakeTimeout: .milliseconds(300)
        )
        let started = ContinuousClock.now
        let error = await #expect(throws: BulwarkError.self) {
            _ = try await connector.connectTLS(
                host: Harness.host,
                port: stalled.port,
                on: MultiThreadedEventLoopGroup.singleton.next(),
                configure: { _, _ in () }
            ).get()
        }
        #expect(error?.code == .tlsHandshakeTimeout)
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(550) && elapsed < .seconds(5), "\(elapsed)")
    }
}
