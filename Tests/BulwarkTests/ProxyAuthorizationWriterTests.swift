import BulwarkPolicy
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import Bulwark

/// Issue 39, item 11: a plain-HTTP request through an HTTP proxy carries `Proxy-Authorization: Basic` in every
/// request (the documentation says so), and the token never passes through a `String`: the head carries a marker,
/// and the connection's writer puts the token's bytes in its place below the HTTP encoder.
@Suite("The proxy's token is written below the HTTP encoder")
struct ProxyAuthorizationWriterTests {
    static let token = "YWxpY2U6aHVudGVyMg=="  // alice:hunter2

    static func route() throws -> ProxyRoute {
        ProxyRoute(
            endpoint: try ProxyEndpoint(kind: .http, host: "127.0.0.1", port: 3128),
            credentials: try ProxyCredentials(username: "alice", password: SecretBytes(utf8: "hunter2"))
        )
    }

    @Test("the request head holds the marker, never the token")
    func theHeadHoldsNoToken() throws {
        let head = RequestExecutor.absoluteFormHead(
            method: .GET,
            headers: ["Proxy-Authorization": "Basic forged-by-the-caller"],
            target: try RequestTarget(URL(string: "http://origin.bulwark.test/a?b")!),
            proxy: try Self.route()
        )
        #expect(head.uri == "http://origin.bulwark.test/a?b")
        #expect(head.headers["proxy-authorization"] == ["Basic " + ProxyAuthorizationWriter.marker])
        #expect(!"\(head.headers)".contains(Self.token))
    }

    /// What the writer below NIOHTTP1's encoder sends for a POST of `body` to `url` through the proxy.
    static func sent(url: String, headers: HTTPHeaders = [:], body: String) throws -> String {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            ProxyAuthorizationWriter(credentials: try Self.route().credentials!)
        )
        try channel.pipeline.syncOperations.addHandler(HTTPRequestEncoder())
        var headers = headers
        headers.add(name: "content-length", value: String(body.utf8.count))
        let head = RequestExecutor.absoluteFormHead(
            method: .POST,
            headers: headers,
            target: try RequestTarget(URL(string: url)!),
            proxy: try Self.route()
        )
        try channel.writeOutbound(HTTPClientRequestPart.head(head))
        try channel.writeOutbound(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: body))))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        var sent = ""
        while let part = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = part else { continue }
            sent += String(buffer: buffer)
        }
        _ = try channel.finish()
        return sent
    }

    @Test("below the encoder, the marker becomes the token; bodies pass untouched")
    func theWriterPutsTheTokenInTheHead() throws {
        let sent = try Self.sent(url: "http://origin.bulwark.test/", body: "body")
        #expect(sent.hasPrefix("POST http://origin.bulwark.test/ HTTP/1.1\r\n"), "\(sent)")
        #expect(sent.contains("proxy-authorization: Basic \(Self.token)\r\n"), "\(sent)")
        #expect(!sent.contains(ProxyAuthorizationWriter.marker))
        #expect(sent.hasSuffix("\r\n\r\nbody"), "\(sent)")
    }

    @Test("only the header line is replaced: the marker in the URL or in a body stays as it is")
    func onlyTheHeaderLine() throws {
        let marker = ProxyAuthorizationWriter.marker
        #expect(marker.count == 32)
        let sent = try Self.sent(
            url: "http://origin.bulwark.test/?q=\(marker)",
            headers: ["x-echo": marker],
            body: marker
        )
        // The review's finding: the first marker in the buffer (the URL's) took the token, and the header kept the
        // marker.
        #expect(sent.hasPrefix("POST http://origin.bulwark.test/?q=\(marker) HTTP/1.1\r\n"), "\(sent)")
        #expect(sent.contains("x-echo: \(marker)\r\n"), "\(sent)")
        #expect(sent.contains("proxy-authorization: Basic \(Self.token)\r\n"), "\(sent)")
        #expect(sent.components(separatedBy: Self.token).count == 2, "the token once, in its header: \(sent)")
        #expect(sent.hasSuffix("\r\n\r\n" + marker), "\(sent)")
    }
}
