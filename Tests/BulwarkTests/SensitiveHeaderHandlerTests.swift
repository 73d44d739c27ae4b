import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import Bulwark

/// The HTTP/2 stream's credential headers on an `EmbeddedChannel`: exactly the sensitive names go out never indexed,
/// whatever their length, and a request without them passes as it was written.
@Suite("Sensitive headers: never indexed on HTTP/2")
struct SensitiveHeaderHandlerTests {
    static let long = "x-" + String(repeating: "credential-", count: 7)

    func written(_ fields: [(String, String)]) throws -> [(name: String, indexing: HPACKIndexing)] {
        let channel = EmbeddedChannel()
        let names: Set<String> = ["authorization", "cookie", "proxy-authorization", Self.long]
        try channel.pipeline.syncOperations.addHandler(
            HTTP2StreamHeadersHandler(sensitiveNames: names, host: "example.com")
        )
        try channel.writeOutbound(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders(fields))))
        guard case .headers(let payload) = try channel.readOutbound(as: HTTP2Frame.FramePayload.self) else {
            Issue.record("no HEADERS payload went out")
            return []
        }
        _ = try channel.finish()
        return payload.headers.map { ($0.name, $0.indexable) }
    }

    @Test func credentialHeadersGoOutNeverIndexedAndNothingElse() throws {
        let fields = try self.written([
            (":path", "/"), ("authorization", "Bearer secret"), ("x-abcdefghijk", "same length"), ("cookie", "a=b"),
            ("accept", "*/*"), (Self.long, "long name"), ("x-" + String(repeating: "other-", count: 12), "long too"),
        ])
        let neverIndexed = fields.filter { $0.indexing == .neverIndexed }.map(\.name)
        #expect(neverIndexed == ["authorization", "cookie", Self.long])
        #expect(fields.count == 7)
    }

    @Test func aRequestWithoutCredentialsPassesUnchanged() throws {
        let fields = try self.written([(":path", "/"), (":authority", "example.com"), ("accept", "*/*")])
        #expect(fields.map(\.name) == [":path", ":authority", "accept"])
        #expect(fields.allSatisfy { $0.indexing == .indexable })
    }
}
