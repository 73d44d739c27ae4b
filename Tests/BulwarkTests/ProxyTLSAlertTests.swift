import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOPosix
import NIOSSL
import Testing

@testable import Bulwark

/// Issue 39, item 14: through an HTTPS proxy the channel holds two TLS handlers, and both raise the same kind of
/// error. A `certificate required` alert from the proxy's TLS (a proxy that checks client certificates after the
/// client finished its TLS 1.3 handshake) must not read as the origin refusing the client certificate.
@Suite("An HTTPS proxy's TLS alert is the proxy's")
struct ProxyTLSAlertTests {
    /// Keeps the first error that reaches the end of a pipeline.
    final class ErrorKeeper: ChannelInboundHandler, Sendable {
        typealias InboundIn = NIOAny
        let caught = NIOLockedValueBox<(any Error)?>(nil)
        let promise: EventLoopPromise<Void>?

        init(promise: EventLoopPromise<Void>? = nil) { self.promise = promise }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            self.caught.withLockedValue { $0 = $0 ?? error }
            self.promise?.succeed(())
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.promise?.succeed(())
        }
    }

    /// A real `certificate required` alert, as NIOSSL raises it: a TLS 1.3 client with no certificate, to a server
    /// that requires one, writes a request and reads the server's alert.
    static func certificateRequiredAlert() async throws -> any Error {
        let chain = try TestChain.make(host: "proxy.bulwark.test")
        var configuration = TestHTTPSServer.Configuration(chain: chain, minimumTLSVersion: .tlsv13)
        configuration.requiresClientCertificate = true
        configuration.clientCertificateRoots = [chain.root.certificate]
        let server = try await TestHTTPSServer.start(configuration: configuration)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv13
        tls.certificateVerification = .none
        let context = try NIOSSLContext(configuration: tls)
        let group = MultiThreadedEventLoopGroup.singleton
        let done = group.next().makePromise(of: Void.self)
        let keeper = ErrorKeeper(promise: done)
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: context, serverHostname: nil)
                    )
                    try channel.pipeline.syncOperations.addHandler(keeper)
                }
            }
            .connect(host: "127.0.0.1", port: server.port)
            .get()
        // The alert may close the channel before the request is written: the write's own result does not matter.
        channel.writeAndFlush(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\n\r\n"), promise: nil)
        try await done.futureResult.get()
        try? await channel.close()
        try await server.shutdown()
        return try #require(keeper.caught.withLockedValue { $0 })
    }

    @Test("the proxy's certificate-required alert is a proxy failure naming the proxy; the origin's stays a rejection")
    func proxyAlertIsNotTheOrigins() async throws {
        let alert = try await Self.certificateRequiredAlert()
        // As the origin's, the alert is a refusal of the client certificate (so it must never come from the proxy).
        #expect(HTTPExchangeHandler.map(alert, host: "origin.bulwark.test").code == .clientCertificateRejected)

        // From above the handler (the proxy's TLS): the proxy's failure.
        let keeper = ErrorKeeper()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            ProxyTLSAlertHandler(host: "origin.bulwark.test", proxy: "proxy.bulwark.test:3129")
        )
        try channel.pipeline.syncOperations.addHandler(keeper)
        channel.pipeline.fireErrorCaught(alert)
        let caught = try #require(keeper.caught.withLockedValue { $0 })
        let mapped = HTTPExchangeHandler.map(caught, host: "origin.bulwark.test")
        #expect(mapped.code == .proxyHandshakeFailed, "\(mapped)")
        #expect(mapped.description.contains("proxy.bulwark.test:3129"), "\(mapped)")
        #expect(HandshakeFailure.clientCertificateAlert(in: caught) == nil)

        // Any other error of the proxy's passes untouched.
        let other = ErrorKeeper()
        let second = EmbeddedChannel()
        try second.pipeline.syncOperations.addHandler(ProxyTLSAlertHandler(host: "origin.bulwark.test", proxy: "p:1"))
        try second.pipeline.syncOperations.addHandler(other)
        second.pipeline.fireErrorCaught(NIOSSLError.uncleanShutdown)
        #expect(other.caught.withLockedValue { $0 } as? NIOSSLError == .uncleanShutdown)
        _ = try channel.finish()
        _ = try second.finish()
    }

    @Test("plain http through an HTTPS proxy that requires a client certificate: its alert is proxy_handshake_failed")
    func plainHTTPThroughAnAlertingProxy() async throws {
        let chain = try TestChain.make(host: "localhost")
        var configuration = TestHTTPSServer.Configuration(chain: chain, minimumTLSVersion: .tlsv13)
        configuration.requiresClientCertificate = true
        configuration.clientCertificateRoots = [chain.root.certificate]
        let proxy = try await TestHTTPSServer.start(configuration: configuration)
        let client = try proxiedClient(
            .https(
                URL(string: "https://localhost:\(proxy.port)")!,
                trust: DefaultTrustEvaluator(roots: .custom([chain.root.certificate]))
            )
        ) { $0.allowsPlainHTTP = true }
        do {
            let response = try await client.execute(BulwarkRequest(url: "http://origin.bulwark.test/a"))
            Issue.record("a response: \(response.status)")
        } catch let error as BulwarkError {
            // The review's finding: this was client_certificate_rejected, naming the origin.
            #expect(error.code == .proxyHandshakeFailed, "\(error)")
            #expect(error.description.contains("localhost:\(proxy.port)"), "\(error)")
        }
        await client.shutdown()
        try await proxy.shutdown()
    }

    @Test("over HTTP/2, the proxy's named failure is kept for the streams")
    func theRecorderKeepsTheProxysFailure() async throws {
        let alert = try await Self.certificateRequiredAlert()
        let rejection = NIOLockedValueBox<BulwarkError?>(nil)
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ProxyTLSAlertHandler(host: "origin.bulwark.test", proxy: "p:1"))
        try channel.pipeline.syncOperations.addHandler(
            ClientCertificateRejectionRecorder(host: "origin.bulwark.test", port: 443, rejection: rejection)
        )
        channel.pipeline.fireErrorCaught(alert)
        #expect(rejection.withLockedValue { $0 }?.code == .proxyHandshakeFailed)
        _ = try? channel.finish()
    }

}
