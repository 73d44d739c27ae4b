import BulwarkPolicy
import Foundation
import NIOCore
import NIOHTTP1

/// An HTTP request: a URL, a method, headers and an optional body.
///
/// A request prints (``description``, `String(reflecting:)`, `dump`, `Mirror`) its method, its URL without query,
/// fragment or user information, its header fields with credential values as `<redacted>` (see
/// ``/BulwarkPolicy/HeaderField/redactedNames``) and the size of its body, never the body.
public struct BulwarkRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The request body: bytes in memory, or a producer that writes chunks as they become available. It prints its
    /// size only.
    public struct Body: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        enum Storage: Sendable {
            case bytes(ByteBuffer)
            case stream(length: Int?, @Sendable (BodyWriter) async throws -> Void)
        }

        let storage: Storage

        /// A body held in memory. It can be sent again, so 307/308 redirects may replay it.
        public static func bytes(_ buffer: ByteBuffer) -> Body { Body(storage: .bytes(buffer)) }
        /// A body held in memory.
        public static func bytes(_ bytes: some Sequence<UInt8>) -> Body {
            Body(storage: .bytes(ByteBuffer(bytes: bytes)))
        }
        /// A UTF-8 string body.
        public static func string(_ string: String) -> Body { Body(storage: .bytes(ByteBuffer(string: string))) }
        /// A streamed body, written by `producer` chunk by chunk. `length` sets `content-length`, and the body must
        /// then be exactly that long (a producer that writes more or fewer bytes fails the request with
        /// ``BulwarkError/Code/requestBodyFailed`` and closes the connection); without it the body is sent chunked
        /// over HTTP/1.1. A streamed body is consumed by sending it, so it is never replayed on a redirect.
        ///
        /// A server may answer before it has read the whole body (a 413 from the head alone, for example). Its answer
        /// is then the request's response: the writer's later ``BodyWriter/write(_:)`` calls throw
        /// ``BulwarkError/Code/requestBodyFailed``, the rest is not sent, and the connection is closed, never reused
        /// while it still carries the body. A body with a `length` ends on the wire with its last byte: a server
        /// answering once it has every byte, even before `producer` returns, answers a whole request, and the
        /// connection stays reusable.
        public static func stream(
            length: Int? = nil,
            _ producer: @escaping @Sendable (BodyWriter) async throws -> Void
        ) -> Body {
            Body(storage: .stream(length: length, producer))
        }

        /// A streamed body, the buffers of `sequence` in order, each sent as it arrives: the connection's back
        /// pressure paces the iteration. `length` sets `content-length`, and the sequence must then hold exactly
        /// that many bytes (more or fewer fail the request with ``BulwarkError/Code/requestBodyFailed`` and close
        /// the connection); without it the body is sent chunked over HTTP/1.1. An error the sequence throws fails
        /// the request with ``BulwarkError/Code/requestBodyFailed``. The sequence is iterated once, so the body is
        /// never replayed on a redirect. A server's answer before the whole body is sent is the request's response,
        /// and the iteration stops, as for ``stream(length:_:)``.
        public static func stream<Bytes: AsyncSequence & Sendable>(
            _ sequence: Bytes,
            length: Int? = nil
        ) -> Body where Bytes.Element == ByteBuffer {
            Body(
                storage: .stream(length: length) { writer in
                    for try await buffer in sequence {
                        try await writer.write(buffer)
                    }
                }
            )
        }

        var knownLength: Int? {
            switch self.storage {
            case .bytes(let buffer): return buffer.readableBytes
            case .stream(let length, _): return length
            }
        }

        /// Whether the body can be sent a second time.
        public var isReplayable: Bool {
            if case .bytes = self.storage { return true }
            return false
        }

        /// `21 bytes`, `streamed, 4096 bytes` or `streamed`: never the contents.
        public var description: String {
            switch self.storage {
            case .bytes(let buffer): return "\(buffer.readableBytes) bytes"
            case .stream(let length?, _): return "streamed, \(length) bytes"
            case .stream(nil, _): return "streamed"
            }
        }

        /// Same as ``description``.
        public var debugDescription: String { self.description }

        /// No children: reflection shows the size only.
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
    }

    /// Writes chunks of a streamed request body.
    public struct BodyWriter: Sendable {
        let writeChunk: @Sendable (ByteBuffer) async throws -> Void

        /// Sends one chunk; suspends while the connection cannot take more. Throws
        /// ``BulwarkError/Code/requestBodyFailed`` once the exchange has ended: it failed, or the server answered
        /// before the whole body was sent (the request then returns that answer).
        ///
        /// The chunk is handed to the connection and the call returns at once while the connection keeps up. Once
        /// more than 1 MiB handed over waits to be written, or the connection's buffers are full, the call suspends
        /// until 256 KiB or less waits: the client holds at most about 1 MiB of the body beyond what the connection
        /// itself buffers, however fast the producer is.
        public func write(_ buffer: ByteBuffer) async throws { try await self.writeChunk(buffer) }
    }

    /// The URL the request goes to: `https`, or `http` when the configuration allows plain HTTP. For a request made
    /// from text that is not a URL, `about:blank` until it is set.
    public var url: URL {
        didSet { self.unparsedURL = nil }
    }
    /// The request method.
    public var method: HTTPMethod
    /// The header fields, sent as they are, after the ones the client adds (`host`, `accept-encoding`, the body's
    /// length) unless they are set here, and before the credentials and cookies the client attaches.
    public var headers: HTTPHeaders
    /// The body, if the request has one.
    public var body: Body?
    /// The text the request was made from, when it is not a URL: ``BulwarkClient/execute(_:deadline:logger:)``
    /// then fails with ``BulwarkError/Code/invalidURL``.
    private var unparsedURL: String?

    /// Creates a request. The URL is checked when the request is executed.
    public init(url: URL, method: HTTPMethod = .GET, headers: HTTPHeaders = [:], body: Body? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.unparsedURL = nil
    }

    /// Creates a request from URL text. The text is checked when the request is executed: text that is not a URL
    /// fails it with ``BulwarkError/Code/invalidURL``.
    public init(url: String, method: HTTPMethod = .GET, headers: HTTPHeaders = [:], body: Body? = nil) {
        if let parsed = URL(string: url) {
            self.init(url: parsed, method: method, headers: headers, body: body)
        } else {
            self.init(url: Self.placeholderURL, method: method, headers: headers, body: body)
            self.unparsedURL = url
        }
    }

    private static let placeholderURL = URL(string: "about:blank")!

    /// The error of a request made from text that is not a URL; nil for every other request.
    var urlError: BulwarkError? {
        self.unparsedURL.map {
            BulwarkError(.invalidURL, host: nil, detail: "\"\(RequestTarget.redacted($0))\" is not a URL")
        }
    }

    /// The URL as printed: without user information, query or fragment.
    private var redactedURL: String {
        RequestTarget.redacted(self.unparsedURL ?? self.url.absoluteString)
    }

    /// `POST https://api.example.com/v1/items [Accept: application/json, Authorization: <redacted>] body: 21 bytes`:
    /// the URL without query, fragment or user information, credential header values redacted, no body contents.
    public var description: String {
        var text = "\(self.method.rawValue) \(self.redactedURL) ["
        text += self.headers.map { HeaderField(name: $0.name, value: $0.value).description }.joined(separator: ", ")
        text += "]"
        if let body = self.body { text += " body: \(body)" }
        return text
    }

    /// Same as ``description``.
    public var debugDescription: String { self.description }

    /// The method, the redacted URL, the header fields (credential values `<redacted>`) and the body's size.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "method": self.method.rawValue,
                "url": self.redactedURL,
                "headers": self.headers.map { HeaderField(name: $0.name, value: $0.value) },
                "body": self.body.map(\.description) as Any,
            ],
            displayStyle: .struct
        )
    }

}
