import BulwarkPolicy
import Foundation
import NIOCore
import NIOHTTP1

/// A response: status and headers at once, the body as it arrives.
///
/// A response prints (``description``, `String(reflecting:)`, `dump`, `Mirror`) its status, its URL without query,
/// fragment or user information, and its header fields with credential values such as `Set-Cookie` as `<redacted>`
/// (see ``/BulwarkPolicy/HeaderField/redactedNames``).
public struct BulwarkResponse: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The URL that produced this response: after redirects, the last one.
    public var url: URL {
        get { self.fields.url }
        _modify { yield &self.fields.url }
    }
    /// The response status.
    public var status: HTTPResponseStatus {
        get { self.fields.status }
        _modify { yield &self.fields.status }
    }
    /// The response's header fields, as the server sent them.
    public var headers: HTTPHeaders {
        get { self.fields.headers }
        _modify { yield &self.fields.headers }
    }
    /// The version of HTTP the response arrived over: ``HTTPVersion/http1_1`` or ``HTTPVersion/http2``.
    public var httpVersion: HTTPVersion {
        get { self.fields.httpVersion }
        _modify { yield &self.fields.httpVersion }
    }
    /// What the handshake established: presented and verified chains. Nil for plain HTTP.
    public var serverTrust: ServerTrustInfo? {
        get { self.fields.serverTrust }
        _modify { yield &self.fields.serverTrust }
    }
    /// The body. Read it to the end (or drop the response) so the connection can be reused.
    public var body: Body {
        get { self.fields.body }
        _modify { yield &self.fields.body }
    }
    /// The redirects that led here, oldest first: the URL that answered with a redirect, its status and the
    /// policy's decision. Empty when the first response was final. When the policy refused a hop and returned the
    /// redirect response (``/BulwarkPolicy/RedirectPolicy/RefusalAction/returnRedirectResponse``, or a 307/308 whose
    /// streamed body cannot be resent), the refusal is the last entry and this response is that redirect.
    public var redirects: [RedirectRecord] {
        get { self.fields.redirects }
        _modify { yield &self.fields.redirects }
    }

    /// The fields of a response.
    private struct Fields {
        var url: URL
        var status: HTTPResponseStatus
        var headers: HTTPHeaders
        var httpVersion: HTTPVersion
        var serverTrust: ServerTrustInfo?
        var body: Body
        var redirects: [RedirectRecord]
    }

    /// The fields, in one object shared by the copies until one of them changes: a response is passed up through
    /// the request's async functions, and each keeps its copies in an async frame that stays allocated while the
    /// request is in flight, so a copy costs a reference rather than about 200 bytes. Unlike stored fields, two
    /// fields cannot be passed `inout` in one call (`f(&response.headers, &response.redirects)`).
    private final class Storage: @unchecked Sendable {
        // Changed only through `fields`' `_modify`, by the one response that holds it.
        var fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    private var storage: Storage

    /// The fields; changing one first gives this response a storage of its own if another response shares it, then
    /// changes it in place (`response.headers.add(…)` copies no header).
    private var fields: Fields {
        get { self.storage.fields }
        _modify {
            if !isKnownUniquelyReferenced(&self.storage) {
                self.storage = Storage(self.storage.fields)
            }
            yield &self.storage.fields
        }
    }

    init(
        url: URL,
        status: HTTPResponseStatus,
        headers: HTTPHeaders,
        httpVersion: HTTPVersion,
        serverTrust: ServerTrustInfo?,
        body: Body,
        redirects: [RedirectRecord] = []
    ) {
        self.storage = Storage(
            Fields(
                url: url,
                status: status,
                headers: headers,
                httpVersion: httpVersion,
                serverTrust: serverTrust,
                body: body,
                redirects: redirects
            )
        )
    }

    /// `200 OK h2 https://api.example.com/login [Content-Type: text/plain, Set-Cookie: <redacted>]`, then the number
    /// of redirects that led here, if any.
    public var description: String {
        var text = "\(self.status.code) \(self.status.reasonPhrase) \(self.httpVersion.alpnIdentifier) "
        text += RequestTarget.redacted(self.url.absoluteString) + " ["
        text += self.headers.map { HeaderField(name: $0.name, value: $0.value).description }.joined(separator: ", ")
        text += "]"
        if !self.redirects.isEmpty { text += " after \(self.redirects.count) redirects" }
        return text
    }

    /// Same as ``description``.
    public var debugDescription: String { self.description }

    /// The status, the redacted URL, the header fields (credential values `<redacted>`), the protocol, the redirects
    /// as their (redacted) descriptions, and whether trust information is present; not the body.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "status": "\(self.status.code) \(self.status.reasonPhrase)",
                "url": RequestTarget.redacted(self.url.absoluteString),
                "headers": self.headers.map { HeaderField(name: $0.name, value: $0.value) },
                "httpVersion": self.httpVersion.alpnIdentifier,
                "serverTrust": self.serverTrust.map { "\($0.presentedChain.count) certificates presented" } as Any,
                "redirects": self.redirects.map(\.description),
            ],
            displayStyle: .struct
        )
    }

    /// The response body as an async sequence of buffers, backpressured: while you do not read, the socket is not
    /// read either.
    public struct Body: AsyncSequence, Sendable {
        /// Each element is a chunk of the body as it arrived (a body that arrived whole with the head is one chunk).
        public typealias Element = ByteBuffer
        let producer: ResponseBodyProducer?
        let host: String
        /// A body already read whole (a short page Bulwark had to look at), given instead of a producer.
        var buffered: ByteBuffer? = nil

        /// Reads the body's chunks in order; each `next()` lets the connection read more.
        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: ResponseBodyProducer.AsyncIterator?
            let host: String
            var buffered: ByteBuffer?

            /// The next chunk of the body, or nil at its end.
            ///
            /// - Throws: ``BulwarkError`` when the body cannot be read to its end (``BulwarkError/Code/cancelled`` when
            ///   the task is cancelled).
            public mutating func next() async throws -> ByteBuffer? {
                if let buffered = self.buffered {
                    self.buffered = nil
                    if buffered.readableBytes > 0 { return buffered }
                }
                guard let base = self.base else { return nil }
                do {
                    let element = try await base.next()
                    self.base = element == nil ? nil : base
                    return element
                } catch let error as BulwarkError {
                    throw error
                } catch is CancellationError {
                    throw BulwarkError(.cancelled, host: self.host)
                }
            }
        }

        /// An iterator over the body. Iterate the body once: its chunks are not kept.
        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(base: self.producer?.makeAsyncIterator(), host: self.host, buffered: self.buffered)
        }

        /// Reads the whole body into one buffer.
        ///
        /// - Throws: ``BulwarkError`` with ``BulwarkError/Code/bodyTooLarge`` as soon as more than `maxBytes`
        ///   arrive (the connection is then closed, not drained).
        public func collect(upTo maxBytes: Int) async throws -> ByteBuffer {
            var result = ByteBuffer()
            for try await buffer in self {
                guard result.readableBytes + buffer.readableBytes <= maxBytes else {
                    throw BulwarkError(.bodyTooLarge, host: self.host, detail: "more than \(maxBytes) bytes")
                }
                var buffer = buffer
                result.writeBuffer(&buffer)
            }
            return result
        }
    }
}

extension BulwarkResponse.Body {
    /// The body an exchange handed out: a stream, or the whole body read with the head.
    init(_ content: ResponseBodyContent, host: String) {
        switch content {
        case .stream(let producer): self.init(producer: producer, host: host)
        case .whole(let buffer): self.init(producer: nil, host: host, buffered: buffer)
        }
    }
}
