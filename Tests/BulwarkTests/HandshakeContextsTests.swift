import BulwarkPolicy
import BulwarkTestSupport
import NIOPosix
import Testing

@testable import Bulwark

/// The TLS contexts lent to one handshake at a time (issue 39, item 18), read as an attacker would (the review of
/// the lending): a rotation must not let a forgotten identity's key back in, and many kinds must not stop reuse.
@Suite("TLS contexts lent to one handshake at a time")
struct HandshakeContextsTests {
    static let ca = try! CertificateFactory.makeRoot()

    func connector() throws -> Connector {
        try Connector(
            configuration: BulwarkClient.Configuration(trust: try ServerTrustManager(evaluators: [:])),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton
        )
    }

    @Test("a context of an identity forgotten between the choice and the lending is not taken back")
    func aContextLentAfterARotationIsNotKept() throws {
        let connector = try self.connector()
        let old = try ClientCertificates.identity(try ClientCertificates.leaf(Self.ca, commonName: "old"))
        // The identity was chosen for a request; the rotation (or a sign-out) comes before the context is lent.
        connector.handshakeContexts.forget(except: [])
        let lent = try connector.lendContext(host: "a.bulwark.test", sendsServerName: true, identity: old)
        connector.handshakeContexts.giveBack(lent)
        #expect(connector.handshakeContexts.identityCount == 0)
        // An identity still in use is taken back.
        let current = try ClientCertificates.identity(try ClientCertificates.leaf(Self.ca, commonName: "current"))
        connector.handshakeContexts.forget(except: [current])
        connector.handshakeContexts.giveBack(
            try connector.lendContext(host: "a.bulwark.test", sendsServerName: true, identity: current)
        )
        #expect(connector.handshakeContexts.identityCount == 1)
    }

    @Test("past the capacity of kinds, a new kind takes another's place and its context is reused")
    func manyKindsDoNotStopReuse() throws {
        let connector = try self.connector()
        let contexts = connector.handshakeContexts
        for index in 0..<Connector.HandshakeContexts.capacity {
            contexts.giveBack(try connector.lendContext(host: "10.0.1.\(index)", sendsServerName: false, identity: nil))
        }
        let identity = try ClientCertificates.identity(try ClientCertificates.leaf(Self.ca))
        let first = try connector.lendContext(host: "api.bulwark.test", sendsServerName: true, identity: identity)
        contexts.giveBack(first)
        for _ in 0..<3 {
            let again = try connector.lendContext(host: "api.bulwark.test", sendsServerName: true, identity: identity)
            #expect(again.context === first.context, "a new context was made for each handshake")
            contexts.giveBack(again)
        }
        #expect(contexts.identityCount == 1)
    }

    @Test("a context is lent to one handshake at a time, and its signal starts clear")
    func oneHandshakeAtATime() throws {
        let connector = try self.connector()
        let first = try connector.lendContext(host: "a.bulwark.test", sendsServerName: true, identity: nil)
        let second = try connector.lendContext(host: "a.bulwark.test", sendsServerName: true, identity: nil)
        #expect(first.context !== second.context)
        first.certificateRequest.record()
        connector.handshakeContexts.giveBack(first)
        let third = try connector.lendContext(host: "b.bulwark.test", sendsServerName: true, identity: nil)
        #expect(third.context === first.context)
        #expect(!third.certificateRequest.wasSeen)
    }
}
