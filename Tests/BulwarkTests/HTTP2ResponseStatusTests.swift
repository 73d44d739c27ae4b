import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import Testing

@testable import Bulwark

/// An HTTP/2 response's `:status` on the stream pipeline the client uses (an `EmbeddedChannel` in place of the
/// stream channel). Issue 23's `http` fuzz target found that a `:status` of `-10` trapped the process: NIOHTTP2's
/// HTTP/1 codec reads it with `Int(_:radix:)`, which accepts a sign, and NIOHTTP1 then converts -10 to `UInt`. Any
/// HTTP/2 server could crash a client. A status must be exactly three digits; anything else is `invalid_response`.
@Suite("HTTP/2 response status: three digits, or a typed error")
struct HTTP2ResponseStatusTests {
    static let host = "api.bulwark.test"

    /// Runs one exchange on a fresh stream pipeline, feeds `status` as the response's `:status`, and returns how
    /// the exchange ended.
    func exchange(status: String, repeated: Bool = false) throws -> Result<HTTPResponseStatus, BulwarkError>? {
        let channel = EmbeddedChannel()
        let handler = try HTTP2Connection.addStreamHandlers(
            to: channel.pipeline.syncOperations,
            sensitiveHeaderNames: [],
            host: Self.host,
            usage: nil,
            decompression: nil,
            idleRead: .seconds(30)
        )
        let promise = channel.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyContent).self)
        let outcome = NIOLockedValueBox<Result<HTTPResponseStatus, BulwarkError>?>(nil)
        promise.futureResult.whenComplete { result in
            outcome.withLockedValue {
                $0 = result.map { $0.0.status }.mapError {
                    ($0 as? BulwarkError) ?? BulwarkError(.invalidResponse, host: Self.host, detail: "untyped")
                }
            }
        }
        let exchange = Exchange(host: Self.host, headPromise: promise, requestKeepAlive: true) { _ in }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/hello")
        head.headers.add(name: "host", value: Self.host)
        #expect(handler.start(exchange, head: head, body: nil, endsRequest: true, deadline: nil))
        while try channel.readOutbound(as: HTTP2Frame.FramePayload.self) != nil {}
        var headers = HPACKHeaders([(":status", status), ("content-length", "0")])
        if repeated { headers.add(name: ":status", value: status) }
        try? channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: headers, endStream: true)))
        _ = try? channel.finish()
        return outcome.withLockedValue { $0 }
    }

    @Test(arguments: ["-10", "+20", "20", "2000", "abc", "", " 200", "２００", "-0"])
    func aStatusThatIsNotThreeDigitsIsAnInvalidResponse(status: String) throws {
        guard case .failure(let error) = try self.exchange(status: status) else {
            Issue.record("status \(status.debugDescription) was accepted")
            return
        }
        #expect(error.code == .invalidResponse)
        #expect(String(describing: error).contains("status"), "\(error)")
    }

    @Test func aThreeDigitStatusIsDelivered() throws {
        guard case .success(let status) = try self.exchange(status: "200") else {
            Issue.record("a 200 was not delivered")
            return
        }
        #expect(status == .ok)
    }

    /// The check reads the header block without making an array of its statuses (it runs on every response): a
    /// second `:status`, even a valid one, is still refused.
    @Test(arguments: ["200", "-10"])
    func twoStatusesAreAnInvalidResponse(status: String) throws {
        guard case .failure(let error) = try self.exchange(status: status, repeated: true) else {
            Issue.record("two statuses \(status.debugDescription) were accepted")
            return
        }
        #expect(error.code == .invalidResponse)
    }

    @Test func theStatusCheckReadsOnlyStatusFields() {
        func read(_ fields: [(String, String)], isTrailers: Bool = false) -> HTTP2StreamCodec.ReceivedBlock {
            HTTP2StreamCodec.read(HPACKHeaders(fields), isTrailers: isTrailers)
        }
        #expect(
            read([(":status", "204"), ("x-status", "abc")])
                == .fields(status: 204, HTTPHeaders([("x-status", "abc")]), declaresLength: false)
        )
        #expect(
            read([("content-length", "0")], isTrailers: true)
                == .fields(status: nil, HTTPHeaders([("content-length", "0")]), declaresLength: true)
        )
        #expect(
            read([(":status", "2x4")])
                == .refused("the server sent an HTTP/2 status that is not three digits (\"2x4\")")
        )
        #expect(read([(":status", "200"), (":status", "404")]) == .refused("the server sent two HTTP/2 statuses"))
    }
}
