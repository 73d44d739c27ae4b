import BulwarkPolicy
import Foundation
import NIOCore
import NIOHTTP1

/// An HTTP request: a URL, a method, headers and an optional body.
///
/// A request prints (``description``, `String(reflecting:)`, `dump`, `Mirror`) its method, its URL without query,
/// fragment or user information, its header fields with credential values as `<redacted>` (see
/// ``HeaderField/redactedNames``) and the size of its body, never the body.
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
        /// A streamed body. `length` sets `content-length`; without it the body is sent chunked. A streamed body is
        /// consumed by sending it, so it is never replayed on a redirect.
        public static func stream(
            length: Int? = nil,
            _ producer: @escaping @Sendable (BodyWriter) async throws -> Void
        ) -> Body {
            Body(storage: .stream(length: length, producer))
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

        /// Sends one chunk; suspends while the connection cannot take more.
        public func write(_ buffer: ByteBuffer) async throws { try await self.writeChunk(buffer) }
    }

    public var url: URL
    public var method: HTTPMethod
    public var headers: HTTPHeaders
    public var body: Body?

    /// Creates a request. The URL is checked when the request is executed.
    public init(url: URL, method: HTTPMethod = .GET, headers: HTTPHeaders = [:], body: Body? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }

    /// `POST https://api.example.com/v1/items [Accept: application/json, Authorization: <redacted>] body: 21 bytes`:
    /// the URL without query, fragment or user information, credential header values redacted, no body contents.
    public var description: String {
        var text = "\(self.method.rawValue) \(RequestTarget.redacted(self.url.absoluteString)) ["
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
                "url": RequestTarget.redacted(self.url.absoluteString),
                "headers": self.headers.map { HeaderField(name: $0.name, value: $0.value) },
                "body": self.body.map(\.description) as Any,
            ],
            displayStyle: .struct
        )
    }

    /// Creates a request from URL text.
    ///
    /// - Throws: ``BulwarkError`` with ``BulwarkError/Code/invalidURL`` when the text is not a URL.
    public init(url: String, method: HTTPMethod = .GET, headers: HTTPHeaders = [:], body: Body? = nil) throws {
        guard let parsed = URL(string: url) else {
            throw BulwarkError(.invalidURL, host: nil, detail: "\"\(RequestTarget.redacted(url))\" is not a URL")
        }
        self.init(url: parsed, method: method, headers: headers, body: body)
    }
}
