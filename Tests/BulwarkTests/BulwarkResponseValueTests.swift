import BulwarkPolicy
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Bulwark

/// A response is a value: its fields live in one shared object (so that the request's async frames hold a reference,
/// not about 200 bytes per copy), and a copy that changes takes its own.
@Suite("BulwarkResponse is a value")
struct BulwarkResponseValueTests {
    static func response() throws -> BulwarkResponse {
        BulwarkResponse(
            url: try #require(URL(string: "https://api.example.com/a")),
            status: .ok,
            headers: ["Content-Type": "text/plain"],
            httpVersion: .http1_1,
            serverTrust: nil,
            body: BulwarkResponse.Body(producer: nil, host: "api.example.com")
        )
    }

    @Test("a copy that changes leaves the original as it was, field by field")
    func copiesAreIndependent() throws {
        let original = try Self.response()
        var copy = original
        copy.status = .notFound
        copy.headers.add(name: "X-Added", value: "1")
        copy.url = try #require(URL(string: "https://api.example.com/b"))
        copy.httpVersion = .http2
        #expect(original.status == .ok)
        #expect(original.headers["X-Added"].isEmpty)
        #expect(original.url.absoluteString == "https://api.example.com/a")
        #expect(original.httpVersion == .http1_1)
        #expect(copy.status == .notFound)
        #expect(copy.headers["X-Added"] == ["1"])
        #expect(copy.url.absoluteString == "https://api.example.com/b")
        #expect(copy.httpVersion == .http2)
    }

    @Test("changing the original after a copy leaves the copy as it was")
    func theOriginalChangesAlone() throws {
        var original = try Self.response()
        let copy = original
        original.status = .created
        original.headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        #expect(copy.status == .ok)
        #expect(copy.headers["Content-Type"] == ["text/plain"])
        #expect(original.status == .created)
        #expect(original.headers["Content-Type"] == ["application/json"])
    }
}
