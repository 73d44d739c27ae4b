import Bulwark
import BulwarkTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// After a `protocol_version` alert the client probes which version the server speaks, to say so in the error; the
/// probe gets what is left of the handshake's time limit, never a window of its own, so a server that sends the alert
/// late and then stays silent cannot make a refused handshake last twice the limit (attack review of 2d98a78, L1).
@Suite("The version probe stays within the handshake's time limit", .tags(.timing))
struct VersionProbeTimeTests {
    /// Answers the first connection's hello with a `protocol_version` alert after `delay`, and never answers the
    /// connections after it.
    final class LateAlertServer: Sendable {
        let channel: any Channel
        let group: MultiThreadedEventLoopGroup
        let connections = NIOLockedValueBox(0)
        var port: Int { self.channel.localAddress?.port ?? 0 }

        init(delay: TimeAmount) async throws {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let connections = self.connections
            self.group = group
            self.channel = try await ServerBootstrap(group: group)
                .childChannelInitializer { channel in
                    let number = connections.withLockedValue {
                        $0 += 1
                        return $0
                    }
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(Handler(alerts: number == 1, delay: delay))
                    }
                }
                .bind(host: "127.0.0.1", port: 0)
                .get()
        }

        func shutdown() async throws {
            try? await self.channel.close()
            try await self.group.shutdownGracefully()
        }

        final class Handler: ChannelInboundHandler {
            typealias InboundIn = ByteBuffer
            typealias OutboundOut = ByteBuffer
            let alerts: Bool
            let delay: TimeAmount
            var answered = false

            init(alerts: Bool, delay: TimeAmount) {
                self.alerts = alerts
                self.delay = delay
            }

            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                guard self.alerts, !self.answered else { return }
                self.answered = true
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: self.delay) {
                    // A fatal protocol_version alert (TLS 1.2 record).
                    let alert: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46]
                    let context = bound.value
                    context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: alert)), promise: nil)
                    context.close(promise: nil)
                }
            }
        }
    }

    @Test("an alert after 2.5 s of a 3 s limit, then a silent probe: refused after about 3 s, not 5.5")
    func aLateAlertGetsNoSecondWindow() async throws {
        let server = try await LateAlertServer(delay: .milliseconds(2_500))
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["localhost": .default()])
        )
        configuration.timeouts.tlsHandshake = .seconds(3)
        let client = BulwarkClient(configuration: configuration)
        let clock = ContinuousClock()
        let started = clock.now
        let error = await #expect(throws: BulwarkError.self) {
            _ = try await client.execute(BulwarkRequest(url: "https://localhost:\(server.port)/"))
        }
        let elapsed = clock.now - started
        await client.shutdown()
        try await server.shutdown()
        #expect(error?.code == .tlsHandshakeFailed, "\(String(describing: error))")
        // The probe ran (a second connection), and ended with the handshake's limit: 3 s in all. A probe with a
        // window of its own would end 3 s after the alert, at 5.5 s; the bound leaves a loaded machine 1.5 s.
        #expect(server.connections.withLockedValue { $0 } == 2)
        #expect(elapsed >= .milliseconds(2_500) && elapsed < .milliseconds(4_500), "\(elapsed)")
    }
}
