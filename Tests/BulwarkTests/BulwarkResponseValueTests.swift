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

    @Test("every field of a copy changes alone, and the original stays as it was")
    func everyField() throws {
        let original = try Self.response()
        var copy = original
        copy.status = .notFound
        copy.headers.add(name: "X-Added", value: "1")
        copy.url = try #require(URL(string: "https://api.example.com/b"))
        copy.httpVersion = .http2
        copy.serverTrust = ServerTrustInfo(presentedChain: [], trustedChain: nil, applicationProtocol: "h2")
        copy.body = BulwarkResponse.Body(producer: nil, host: "other.example")
        let from = try #require(URL(string: "https://api.example.com/a"))
        let hop = RedirectHop(
            request: RedirectRequest(method: "GET", url: from, headers: [], body: .none),
            status: 302,
            locations: ["https://api.example.com/b"],
            chain: RedirectChain(startingAt: from)
        )
        copy.redirects = [RedirectRecord(url: from, status: 302, decision: RedirectPolicy.doNotFollow.decide(hop))]
        #expect(original.status == .ok)
        #expect(original.headers["X-Added"].isEmpty)
        #expect(original.url.absoluteString == "https://api.example.com/a")
        #expect(original.httpVersion == .http1_1)
        #expect(original.serverTrust == nil)
        #expect(original.body.host == "api.example.com")
        #expect(original.redirects.isEmpty)
        #expect(copy.status == .notFound)
        #expect(copy.headers["X-Added"] == ["1"])
        #expect(copy.url.absoluteString == "https://api.example.com/b")
        #expect(copy.httpVersion == .http2)
        #expect(copy.serverTrust?.applicationProtocol == "h2")
        #expect(copy.body.host == "other.example")
        #expect(copy.redirects.count == 1)
    }

    @Test("headers changed in place on a response no copy shares, and on one a copy shares")
    func inPlace() throws {
        var response = try Self.response()
        for index in 0..<100 { response.headers.add(name: "X-\(index)", value: "\(index)") }
        #expect(response.headers.count == 101)
        let copy = response
        response.headers.remove(name: "X-0")
        #expect(response.headers.count == 100)
        #expect(copy.headers.count == 101)
    }

    @Test("many tasks read copies while one task changes its own")
    func concurrentReaders() async throws {
        let shared = try Self.response()
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var same = true
                    for _ in 0..<1_000 {
                        same = same && shared.status == .ok && shared.headers["Content-Type"] == ["text/plain"]
                    }
                    return same
                }
            }
            group.addTask {
                var mine = shared
                for index in 0..<1_000 { mine.headers.replaceOrAdd(name: "Content-Type", value: "x/\(index)") }
                return mine.headers["Content-Type"] == ["x/999"]
            }
            for await result in group { #expect(result) }
        }
        #expect(shared.headers["Content-Type"] == ["text/plain"])
    }
}
