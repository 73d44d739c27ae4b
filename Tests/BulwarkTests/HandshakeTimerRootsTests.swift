import BulwarkPolicy
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOPosix
import Testing
import X509

@testable import Bulwark

/// The handshake timer and the system roots' load (issue 43): the roots are read once per process, in the background
/// from the moment a client whose policy names them is made, and a handshake timer that runs out while the
/// verification waits for that load runs once more, so a slow load (a loaded debug build once took more than the 10 s
/// handshake timeout to parse the bundle) is not the server's time; a server that stalls is timed as before. The load
/// is stood in for by one the test controls, and by an evaluator that waits for it, as a verification against the
/// system roots waits for their index (SystemTrustRootIndex).
@Suite("The handshake timer and the system roots' parse", .tags(.timing))
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

    /// A connector whose evaluator waits for `evaluatorLoad` and whose timer knows `timerLoad` (the same load, as in
    /// a process, unless a test says otherwise).
    func connector(
        chain: TestChain,
        port: Int,
        evaluatorLoad: BackgroundLoad,
        timerLoad: BackgroundLoad? = nil,
        handshakeTimeout: TimeAmount
    ) throws -> Connector {
        let evaluator = WaitingEvaluator(
            load: evaluatorLoad,
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
        connector.settings.rootsLoad = timerLoad ?? evaluatorLoad
        return connector
    }

    static func slowLoad(_ duration: Duration) -> BackgroundLoad {
        let load = BackgroundLoad { try? await Task.sleep(for: duration) }
        load.start()
        return load
    }

    /// A started load that never ends.
    static func endlessLoad() -> BackgroundLoad {
        let load = BackgroundLoad { await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in } }
        load.start()
        return load
    }

    static func handshake(_ connector: Connector, port: Int, deadline: NIODeadline? = nil) async throws {
        let (channel, _, _) = try await connector.connectTLS(
            host: Harness.host,
            port: port,
            on: MultiThreadedEventLoopGroup.singleton.next(),
            deadline: deadline,
            configure: { _, _ in () }
        ).get()
        try? await channel.close()
    }

    @Test("a verification that waits for the parse past the handshake timeout is given the timeout once more")
    func aSlowParseIsNotTheServersTime() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        defer { Task { try? await server.shutdown() } }
        // The parse (3 s) outlasts the handshake timeout (2 s) but not the timeout given twice (4 s): only the grace
        // lets the handshake succeed. Each side has 1 s of room, which a loaded machine needs (300 ms was too thin).
        let connector = try self.connector(
            chain: chain,
            port: server.port,
            evaluatorLoad: Self.slowLoad(.seconds(3)),
            handshakeTimeout: .seconds(2)
        )
        try await Self.handshake(connector, port: server.port)
    }

    @Test("without the grace (the roots already parsed, as the timer saw it before) the same handshake times out")
    func withoutTheGraceItTimesOut() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        defer { Task { try? await server.shutdown() } }
        // The same times as the test above: the timer runs out 1 s before the parse ends, room for a connection that
        // starts late on a loaded machine.
        let connector = try self.connector(
            chain: chain,
            port: server.port,
            evaluatorLoad: Self.slowLoad(.seconds(3)),
            timerLoad: BackgroundLoad {},
            handshakeTimeout: .seconds(2)
        )
        let error = await #expect(throws: BulwarkError.self) { try await Self.handshake(connector, port: server.port) }
        #expect(error?.code == .tlsHandshakeTimeout)
    }

    @Test("a server that stalls before sending its chain gets no grace, even while the parse runs (the review)")
    func aStalledServerIsTimedAsBefore() async throws {
        let stalled = try await ScriptedProxyServer.start(.silent)
        defer { Task { try? await stalled.shutdown() } }
        let chain = try TestChain.make(host: Harness.host)
        let never = Self.endlessLoad()
        let connector = try self.connector(
            chain: chain,
            port: stalled.port,
            evaluatorLoad: never,
            handshakeTimeout: .seconds(2)
        )
        let started = ContinuousClock.now
        let error = await #expect(throws: BulwarkError.self) { try await Self.handshake(connector, port: stalled.port) }
        #expect(error?.code == .tlsHandshakeTimeout)
        // Without the grace the handshake ends after 2 s, with it after 4 s at least: 3.5 s tells them apart with
        // room for a loaded machine.
        #expect(ContinuousClock.now - started < .milliseconds(3_500), "a stalled server was given the grace")
    }

    @Test("a parse that never ends: the grace is given once, the handshake still ends")
    func aParseThatNeverEndsStillEnds() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        defer { Task { try? await server.shutdown() } }
        let never = Self.endlessLoad()
        let connector = try self.connector(
            chain: chain,
            port: server.port,
            evaluatorLoad: never,
            handshakeTimeout: .milliseconds(300)
        )
        let started = ContinuousClock.now
        let error = await #expect(throws: BulwarkError.self) { try await Self.handshake(connector, port: server.port) }
        #expect(error?.code == .tlsHandshakeTimeout)
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(550) && elapsed < .seconds(5), "\(elapsed)")
    }

    @Test("the deadline bounds a handshake that waits for the parse: no grace past it")
    func theDeadlineStillBounds() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        defer { Task { try? await server.shutdown() } }
        let connector = try self.connector(
            chain: chain,
            port: server.port,
            evaluatorLoad: Self.slowLoad(.seconds(5)),
            handshakeTimeout: .milliseconds(300)
        )
        let started = ContinuousClock.now
        let error = await #expect(throws: BulwarkError.self) {
            try await Self.handshake(connector, port: server.port, deadline: .now() + .milliseconds(500))
        }
        #expect(error?.code == .deadlineExceeded)
        #expect(ContinuousClock.now - started < .seconds(3), "the deadline waited for the parse")
    }

    @Test("a client starts the parse only when its policy names the system roots")
    func onlyAPolicyNamingTheSystemRootsStartsTheParse() throws {
        let root = try CertificateFactory.makeRoot().certificate
        let custom = try ServerTrustManager(evaluators: ["a.test": .default(roots: .custom([root]))])
        #expect(!custom.namesSystemRoots, "the default evaluator of a manager that refuses unlisted hosts counts")
        let system = try ServerTrustManager(evaluators: ["a.test": .default()])
        #expect(system.namesSystemRoots)
        let pinned = try ServerTrustManager(evaluators: [
            "a.test": .publicKeys(try PinSet([Pin.publicKey(of: root)], allowSinglePin: true))
        ])
        #expect(pinned.namesSystemRoots, "public-key pins verify the chain against the system roots by default")
        let composite = try ServerTrustManager(evaluators: [
            "a.test": CompositeTrustEvaluator([DefaultTrustEvaluator(roots: .custom([root]))]).checkingRevocation()
        ])
        #expect(!composite.namesSystemRoots)
        let unlisted = ServerTrustManager(allHostsMustBeEvaluated: false, patterns: [])
        #expect(unlisted.namesSystemRoots, "unlisted hosts get the default evaluator, on the system roots")
    }
}
