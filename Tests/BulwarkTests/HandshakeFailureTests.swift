import NIOCore
import Testing

@testable import Bulwark

// The pieces behind the handshake-failure sentences, without a server: reading BoringSSL's reason out of NIOSSL's
// text, and reading the version out of a server's first record. InteropErrorMessageTests checks the whole path
// against real openssl s_server peers.

@Suite("Handshake failures in words: BoringSSL reasons and the version probe")
struct HandshakeFailureTests {
    @Test("the reason name is read from NIOSSL's text of a BoringSSL error, path and numbers left out")
    func reasonName() {
        // As NIOSSL 2.37 prints one BoringSSL error (seen against a TLS 1.0-only openssl s_server).
        let text =
            "Error: 268436526 error:1000042e:SSL routines:OPENSSL_internal:TLSV1_ALERT_PROTOCOL_VERSION at "
            + "/work/x/.build/checkouts/swift-nio-ssl/Sources/CNIOBoringSSL/ssl/tls_record.cc:491"
        #expect(HandshakeFailure.reasonName(text) == "TLSV1_ALERT_PROTOCOL_VERSION")
        let short = "Error: 1 error:10000100:SSL routines:f:UNSUPPORTED_PROTOCOL"
        #expect(HandshakeFailure.reasonName(short) == "UNSUPPORTED_PROTOCOL")
        #expect(HandshakeFailure.reasonName("something else entirely") == nil)
    }

    @Test("a closed connection during the handshake is said in words")
    func closedDuringHandshake() {
        let failure = HandshakeFailure(ChannelError.ioOnClosedChannel, host: "example.com", port: 443)
        let text = String(describing: failure.error(minimum: .tls12))
        #expect(
            text == "tls_handshake_failed (example.com): the server at example.com:443 closed the connection "
                + "during the TLS handshake"
        )
        let ipv6 = HandshakeFailure(ChannelError.eof, host: "::1", port: 8443)
        #expect(String(describing: ipv6.error(minimum: .tls12)).contains("the server at [::1]:8443 closed"))
    }

    @Test("the probe reads the version a ServerHello carries, and stops at an alert")
    func probeParsesFirstRecord() {
        let allocator = ByteBufferAllocator()
        // Handshake record (TLS 1.0 record version), ServerHello of length 0x46, server_version 3.1.
        let serverHello: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x4A, 0x02, 0x00, 0x00, 0x46, 0x03, 0x01]
        #expect(TLSVersionProbe.parse(allocator.buffer(bytes: serverHello)) == .some(.init(wire: 0x0301)))
        #expect(TLSVersionProbe.parse(allocator.buffer(bytes: Array(serverHello.prefix(7)))) == nil)  // need more
        let alert: [UInt8] = [0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46]  // fatal protocol_version
        #expect(TLSVersionProbe.parse(allocator.buffer(bytes: alert)) == .some(nil))
        let http = Array("HTTP/1.1 400 Bad Request\r\n".utf8)
        #expect(TLSVersionProbe.parse(allocator.buffer(bytes: http)) == .some(nil))
    }

    @Test("versions below the minimum, by name")
    func versionNames() {
        let tls10 = TLSVersionProbe.Version(wire: 0x0301)
        let tls12 = TLSVersionProbe.Version(wire: 0x0303)
        #expect(tls10.name == "TLS 1.0" && tls12.name == "TLS 1.2")
        #expect(tls10.isBelow(.tls12) && !tls12.isBelow(.tls12) && tls12.isBelow(.tls13))
    }

    @Test("the probe's hello is one well-formed handshake record without supported_versions, with SNI")
    func probeHello() {
        let hello = TLSVersionProbe.clientHello(serverName: "example.com")
        #expect(hello[0] == 0x16 && hello[5] == 0x01)
        #expect(Int(hello[3]) << 8 | Int(hello[4]) == hello.count - 5)
        #expect(Int(hello[6]) << 16 | Int(hello[7]) << 8 | Int(hello[8]) == hello.count - 9)
        #expect(hello[9] == 0x03 && hello[10] == 0x03)  // legacy_version TLS 1.2
        // Walk the extensions: after version, random, session id, suites and compression methods.
        var index = 11 + 32
        index += 1 + Int(hello[index])
        index += 2 + (Int(hello[index]) << 8 | Int(hello[index + 1]))
        index += 1 + Int(hello[index])
        let end = index + 2 + (Int(hello[index]) << 8 | Int(hello[index + 1]))
        #expect(end == hello.count)
        index += 2
        var types: [Int] = []
        while index + 4 <= end {
            types.append(Int(hello[index]) << 8 | Int(hello[index + 1]))
            index += 4 + (Int(hello[index + 2]) << 8 | Int(hello[index + 3]))
        }
        #expect(index == end)
        #expect(types == [0x0000, 0x000A, 0x000B, 0x000D])
        #expect(!types.contains(0x002B))  // no supported_versions: the server answers with its own version
        #expect(!TLSVersionProbe.clientHello(serverName: nil).isEmpty)
    }
}
