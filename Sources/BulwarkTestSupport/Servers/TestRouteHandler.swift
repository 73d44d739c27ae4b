import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL

/// Serves the test routes for one HTTP/1.1 connection or one HTTP/2 stream (behind
/// `HTTP2FramePayloadToHTTP1ServerCodec`, so both protocols share this handler). See `TestHTTPSServer` for the routes.
final class TestRouteHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Body chunk size of `/bytes/N`.
    static let bytesChunkSize = 64 * 1024
    /// Chunk size of `/chunked/N` (smaller, so modest bodies still span several chunks).
    static let chunkedChunkSize = 16 * 1024

    /// 64 KiB of the body pattern (byte i is `i & 0xFF`); every chunk is a prefix of it.
    private static let pattern = ByteBuffer(bytes: (0..<TestRouteHandler.bytesChunkSize).map { UInt8($0 & 0xFF) })

    private enum Ending {
        /// Write the end of the response.
        case complete
        /// Close the connection cleanly without ending the response.
        case closeCleanly
        /// Reset the TCP connection.
        case reset
        /// Write nothing more and leave the connection open: the body never ends.
        case stall
    }

    private struct BodyStream {
        var remaining: Int
        let chunkSize: Int
        let ending: Ending
    }

    private let recorder: ServerRecorder
    private let behavior: TestHTTPSServer.Behavior
    private let connectionID: Int
    private var head: HTTPRequestHead?
    private var bodyByteCount = 0
    private var bodyPrefix: [UInt8] = []
    private var echoBody: ByteBuffer?
    private var stream: BodyStream?
    private var isHTTP2 = false
    private var keepAlive = true
    /// The request in progress was answered from its head (`/early`); its end only records it.
    private var answeredEarly = false

    init(recorder: ServerRecorder, behavior: TestHTTPSServer.Behavior, connectionID: Int) {
        self.recorder = recorder
        self.behavior = behavior
        self.connectionID = connectionID
    }

    // MARK: - Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            self.bodyByteCount = 0
            self.bodyPrefix = []
            self.echoBody = nil
            self.isHTTP2 = head.version.major == 2
            self.keepAlive = self.isHTTP2 || head.isKeepAlive
            let expectations = head.headers["expect"].map { $0.lowercased() }
            if expectations.contains("100-continue") {
                let interim = HTTPResponseHead(version: head.version, status: .continue)
                context.writeAndFlush(self.wrapOutboundOut(.head(interim)), promise: nil)
            }
            // `/early`: a 413 from the head alone, the connection kept open, the body still read (as a server that
            // refuses an upload without waiting for it may do).
            self.answeredEarly = Self.path(of: head.uri) == "/early"
            if self.answeredEarly {
                self.respond(
                    context: context,
                    head: head,
                    status: .payloadTooLarge,
                    body: ByteBuffer(string: "too large")
                )
            }
        case .body(var buffer):
            self.bodyByteCount += buffer.readableBytes
            if self.bodyPrefix.count < 65_536 {
                self.bodyPrefix += buffer.readableBytesView.prefix(65_536 - self.bodyPrefix.count)
            }
            if let head = self.head, Self.path(of: head.uri) == "/echo" {
                if self.echoBody == nil {
                    self.echoBody = buffer
                } else {
                    self.echoBody!.writeBuffer(&buffer)
                }
            }
        case .end:
            guard let head = self.head else { return }
            self.head = nil
            self.recorder.requestReceived(
                RecordedRequest(
                    method: head.method.rawValue,
                    uri: head.uri,
                    headers: head.headers.map { (name: $0.name, value: $0.value) },
                    bodyByteCount: self.bodyByteCount,
                    httpVersion: "HTTP/\(head.version.major).\(head.version.minor)",
                    connectionID: self.connectionID,
                    body: self.bodyPrefix
                )
            )
            if self.answeredEarly {
                self.answeredEarly = false
                return
            }
            self.route(context: context, head: head)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            self.pump(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.stream = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: - Routes

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let path = Self.path(of: head.uri)
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        let name = segments.first ?? ""
        let argument: Int? = segments.count == 2 ? Int(segments[1]).flatMap { $0 >= 0 ? $0 : nil } : nil

        switch (name, segments.count) {
        case ("hello", 1):
            self.respond(context: context, head: head, body: "hello")
        case ("bytes", 2) where argument != nil:
            let resets = self.behavior == .resetMidBody
            self.startStream(
                context: context,
                head: head,
                length: argument!,
                chunked: false,
                send: resets ? argument! / 2 : argument!,
                ending: resets ? .reset : .complete
            )
        case ("chunked", 2) where argument != nil:
            let truncates = self.behavior == .truncatedChunkedBody
            self.startStream(
                context: context,
                head: head,
                length: argument!,
                chunked: true,
                send: truncates ? argument! / 2 : argument!,
                ending: truncates ? .closeCleanly : .complete
            )
        case ("gzip", 1):
            self.respond(
                context: context,
                head: head,
                headers: [("content-type", "text/plain; charset=utf-8"), ("content-encoding", "gzip")],
                body: Self.gzipBody
            )
        case ("bomb", 1):
            self.respond(context: context, head: head, headers: [("content-encoding", "gzip")], body: Self.bombBody)
        case ("bomb", 2) where argument != nil && argument! > 0:
            let body = ByteBuffer(bytes: GzipEncoder.zeroBomb(inflatedSize: argument!))
            self.respond(context: context, head: head, headers: [("content-encoding", "gzip")], body: body)
        case ("echo", 1):
            let contentType = head.headers["content-type"].first ?? "application/octet-stream"
            self.respond(
                context: context,
                head: head,
                headers: [
                    ("content-type", contentType),
                    ("x-request-method", head.method.rawValue),
                    ("x-request-path", head.uri),
                ],
                body: self.echoBody ?? ByteBuffer()
            )
        case ("headers", 1):
            self.respond(
                context: context,
                head: head,
                headers: [("content-type", "application/json")],
                body: ByteBuffer(bytes: Self.headersJSON(head.headers))
            )
        case ("status", 2) where argument.map({ (200...599).contains($0) }) == true:
            self.respond(context: context, head: head, status: HTTPResponseStatus(statusCode: argument!), body: nil)
        case ("redirect", 2) where argument.map({ (300...399).contains($0) }) == true:
            var headers: [(String, String)] = []
            if let location = Self.redirectTarget(in: head.uri) {
                headers.append(("location", location))
            }
            self.respond(
                context: context,
                head: head,
                status: HTTPResponseStatus(statusCode: argument!),
                headers: headers,
                body: nil
            )
        case ("close", 1):
            self.sendGoAway(context: context)
            self.respond(context: context, head: head, body: "bye", closeConnection: true)
        case ("goaway", 1):
            // A server draining a connection: GOAWAY, the response, and the connection left open (as a server waiting
            // for its other streams, or for the client to close, does).
            self.sendGoAway(context: context)
            self.respond(context: context, head: head, body: "going away")
        case ("refused-stream", 1):
            // h2: RST_STREAM with REFUSED_STREAM, no response (the server did not process the request). h1: 200.
            if let streamID = self.http2StreamID(context), let connection = context.channel.parent {
                connection.writeAndFlush(
                    HTTP2Frame(streamID: streamID, payload: .rstStream(.refusedStream)),
                    promise: nil
                )
            } else {
                self.respond(context: context, head: head, body: "served")
            }
        case ("goaway-refused", 1):
            // h2: on a connection's first stream, 200 `served`. On a later one, GOAWAY naming the stream before it:
            // this one is refused, not processed (RFC 9113 section 6.8), and gets no response; the connection stays
            // open.
            if let streamID = self.http2StreamID(context), Int(streamID) > 1 {
                self.sendGoAway(context: context, lastStreamID: HTTP2StreamID(Int(streamID) - 2))
            } else {
                self.respond(context: context, head: head, body: "served")
            }
        case ("set-cookie", 1):
            let fields = Self.queryFields(in: head.uri).map { ("set-cookie", $0) }
            self.respond(context: context, head: head, headers: fields, body: ByteBuffer(string: "cookies set"))
        case ("set-cookie", 2) where argument != nil:
            // The same, answered after `argument` milliseconds (a response whose head arrives late).
            let fields = Self.queryFields(in: head.uri).map { ("set-cookie", $0) }
            context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(argument!))) {
                guard context.channel.isActive else { return }
                self.respond(context: context, head: head, headers: fields, body: ByteBuffer(string: "cookies set"))
            }
        case ("drop", 1):
            // The request was read; the connection closes with no response (as a server that crashed or closed an
            // idle connection while the request was in flight).
            self.closeConnection(context: context, abruptly: false)
        case ("fault", 2):
            self.fault(segments[1], context: context, head: head)
        case ("upgrade", 1):
            // 101 Switching Protocols to a protocol the client never asked for, then the connection stays open.
            var headers = HTTPHeaders([("connection", "upgrade"), ("upgrade", "bulwark-test")])
            if self.isHTTP2 { headers = [:] }
            let responseHead = HTTPResponseHead(
                version: self.responseVersion(for: head),
                status: .switchingProtocols,
                headers: headers
            )
            context.write(self.wrapOutboundOut(.head(responseHead)), promise: nil)
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        case ("auth", 3) where segments[1] == "bearer" && !segments[2].isEmpty:
            if head.headers["authorization"] == ["Bearer \(segments[2])"] {
                self.respond(context: context, head: head, body: "authorized")
            } else {
                self.respond(
                    context: context,
                    head: head,
                    status: .unauthorized,
                    headers: [("www-authenticate", "Bearer realm=\"test\""), ("content-type", "text/plain")],
                    body: ByteBuffer(string: "401 Unauthorized")
                )
            }
        case ("slow", 2) where argument != nil:
            context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(argument!))) {
                guard context.channel.isActive else { return }
                self.respond(context: context, head: head, body: "slow")
            }
        default:
            let takesNumber = ["bytes", "chunked", "bomb", "status", "redirect", "slow", "set-cookie"].contains(name)
            let status: HTTPResponseStatus = takesNumber && segments.count == 2 ? .badRequest : .notFound
            self.respond(
                context: context,
                head: head,
                status: status,
                headers: [("content-type", "text/plain; charset=utf-8")],
                body: ByteBuffer(string: "\(status.code) \(status.reasonPhrase)")
            )
        }
    }

    // MARK: - Faults

    /// One of ``TestHTTPSServer/faultNames``; unknown names get a 404.
    private func fault(_ name: String, context: ChannelHandlerContext, head: HTTPRequestHead) {
        let half = 4 * Self.bytesChunkSize
        switch name {
        case "reset-before-head":
            self.closeConnection(context: context, abruptly: true)
        case "close-before-head":
            self.closeConnection(context: context, abruptly: false)
        case "reset-mid-body":
            self.startStream(context: context, head: head, length: 2 * half, chunked: false, send: half, ending: .reset)
        case "truncate-chunked":
            self.startStream(
                context: context,
                head: head,
                length: 2 * half,
                chunked: true,
                send: half,
                ending: .closeCleanly
            )
        case "stall":
            break  // the request was read; no answer ever comes
        case "stall-mid-body":
            // The head and half the body, then nothing: the body never ends and the connection stays open.
            self.startStream(context: context, head: head, length: 2 * half, chunked: false, send: half, ending: .stall)
        case "huge-header":
            let value = String(repeating: "x", count: 256 * 1024)
            self.respond(context: context, head: head, headers: [("x-huge", value)], body: ByteBuffer(string: "huge"))
        case "garbage-head":
            // Bytes that are no HTTP response, written below the HTTP codec (inside TLS). On HTTP/2, a stream cannot
            // carry raw bytes: the stream is reset instead.
            if self.isHTTP2 {
                context.close(promise: nil)
            } else if let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
            {
                encoder.writeAndFlush(NIOAny(ByteBuffer(string: "\u{1}\u{2}NOT HTTP AT ALL\r\n\r\n")), promise: nil)
            } else {
                self.closeConnection(context: context, abruptly: true)
            }
        case "goaway-mid-body":
            // HTTP/2: head and part of the body, then GOAWAY naming an earlier stream (this one will not be finished)
            // and the connection closes. HTTP/1.1: the connection closes cleanly mid-body.
            self.startStream(
                context: context,
                head: head,
                length: 2 * half,
                chunked: false,
                send: half,
                ending: .complete
            )
            if self.isHTTP2, let connection = context.channel.parent {
                self.stream = nil
                let frame = HTTP2Frame(
                    streamID: .rootStream,
                    payload: .goAway(lastStreamID: .rootStream, errorCode: .internalError, opaqueData: nil)
                )
                connection.writeAndFlush(frame).assumeIsolated().whenComplete { _ in connection.close(promise: nil) }
            } else {
                self.stream = nil
                context.flush()
                self.closeConnection(context: context, abruptly: false)
            }
        case "rst-stream-mid-body":
            // HTTP/2: head and part of the body, then RST_STREAM (closing a stream channel resets it). HTTP/1.1: a TCP
            // reset mid-body.
            self.startStream(
                context: context,
                head: head,
                length: 2 * half,
                chunked: false,
                send: half,
                ending: .complete
            )
            self.stream = nil
            context.flush()
            if self.isHTTP2 {
                context.close(promise: nil)
            } else {
                self.closeConnection(context: context, abruptly: true)
            }
        default:
            self.respond(context: context, head: head, status: .notFound, body: ByteBuffer(string: "no such fault"))
        }
    }

    // MARK: - Writing

    private func respond(
        context: ChannelHandlerContext,
        head: HTTPRequestHead,
        body: String,
        closeConnection: Bool = false
    ) {
        self.respond(
            context: context,
            head: head,
            headers: [("content-type", "text/plain; charset=utf-8")],
            body: ByteBuffer(string: body),
            closeConnection: closeConnection
        )
    }

    private func respond(
        context: ChannelHandlerContext,
        head: HTTPRequestHead,
        status: HTTPResponseStatus = .ok,
        headers: [(String, String)] = [],
        body: ByteBuffer?,
        closeConnection: Bool = false
    ) {
        let close = closeConnection || !self.keepAlive
        var responseHeaders = HTTPHeaders(headers)
        if status.code >= 200, status != .noContent, status != .notModified {
            responseHeaders.replaceOrAdd(name: "content-length", value: String(body?.readableBytes ?? 0))
        }
        self.addConnectionHeader(to: &responseHeaders, request: head, close: close)
        let responseHead = HTTPResponseHead(
            version: self.responseVersion(for: head),
            status: status,
            headers: responseHeaders
        )
        context.write(self.wrapOutboundOut(.head(responseHead)), promise: nil)
        if let body, body.readableBytes > 0, head.method != .HEAD {
            context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        context.writeAndFlush(self.wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            if close {
                self.closeConnection(context: context, abruptly: false)
            }
        }
    }

    private func startStream(
        context: ChannelHandlerContext,
        head: HTTPRequestHead,
        length: Int,
        chunked: Bool,
        send: Int,
        ending: Ending
    ) {
        var headers = HTTPHeaders([("content-type", "application/octet-stream")])
        if !chunked {
            headers.add(name: "content-length", value: String(length))
        } else if !self.isHTTP2 {
            headers.add(name: "transfer-encoding", value: "chunked")
        }
        self.addConnectionHeader(to: &headers, request: head, close: !self.keepAlive)
        let responseHead = HTTPResponseHead(version: self.responseVersion(for: head), status: .ok, headers: headers)
        context.write(self.wrapOutboundOut(.head(responseHead)), promise: nil)
        let isHead = head.method == .HEAD
        self.stream = BodyStream(
            remaining: isHead ? 0 : send,
            chunkSize: chunked ? Self.chunkedChunkSize : Self.bytesChunkSize,
            ending: isHead ? .complete : ending
        )
        self.pump(context: context)
    }

    /// Writes body chunks while the channel is writable; resumes from `channelWritabilityChanged`.
    private func pump(context: ChannelHandlerContext) {
        guard var stream = self.stream else { return }
        while stream.remaining > 0, context.channel.isWritable {
            let count = min(stream.remaining, stream.chunkSize)
            stream.remaining -= count
            let part = self.wrapOutboundOut(.body(.byteBuffer(Self.pattern.getSlice(at: 0, length: count)!)))
            if stream.remaining == 0 {
                self.stream = nil
                self.finish(context: context, ending: stream.ending, lastWrite: context.writeAndFlush(part))
                return
            }
            context.write(part, promise: nil)
        }
        if stream.remaining == 0 {
            self.stream = nil
            context.flush()
            self.finish(context: context, ending: stream.ending, lastWrite: nil)
            return
        }
        self.stream = stream
        context.flush()
    }

    private func finish(context: ChannelHandlerContext, ending: Ending, lastWrite: EventLoopFuture<Void>?) {
        switch ending {
        case .complete:
            let close = !self.keepAlive
            context.writeAndFlush(self.wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                if close {
                    self.closeConnection(context: context, abruptly: false)
                }
            }
        case .stall:
            break
        case .closeCleanly, .reset:
            let written = lastWrite ?? context.eventLoop.makeSucceededVoidFuture()
            written.assumeIsolated().whenComplete { _ in
                self.closeConnection(context: context, abruptly: ending == .reset)
            }
        }
    }

    /// On HTTP/2, sends GOAWAY naming this stream as the last one the server processes, so the client opens a new
    /// connection for its next requests (sent before the response, so the client reads it before reusing the
    /// connection).
    /// (`lastStreamID`: the last stream the server processes, this one when nil.)
    private func sendGoAway(context: ChannelHandlerContext, lastStreamID: HTTP2StreamID? = nil) {
        guard self.isHTTP2, let connection = context.channel.parent else { return }
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(
                lastStreamID: lastStreamID ?? self.http2StreamID(context) ?? .maxID,
                errorCode: .noError,
                opaqueData: nil
            )
        )
        connection.writeAndFlush(frame, promise: nil)
    }

    /// On HTTP/2, the stream's ID.
    private func http2StreamID(_ context: ChannelHandlerContext) -> HTTP2StreamID? {
        guard self.isHTTP2 else { return nil }
        return try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
    }

    private func closeConnection(context: ChannelHandlerContext, abruptly: Bool) {
        let connection = self.isHTTP2 ? (context.channel.parent ?? context.channel) : context.channel
        if abruptly {
            Self.reset(connection)
        } else if self.isHTTP2 {
            connection.close(promise: nil)
        } else {
            context.close(promise: nil)
        }
    }

    /// Resets a TLS connection: `SO_LINGER` 0, then a close issued below the TLS handler so no close_notify is sent.
    private static func reset(_ connection: any Channel) {
        let closeBelowTLS: @Sendable () -> Void = {
            if let tls = try? connection.pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self) {
                tls.close(promise: nil)
            } else {
                connection.close(promise: nil)
            }
        }
        guard let provider = connection as? any SocketOptionProvider else {
            closeBelowTLS()
            return
        }
        provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in closeBelowTLS() }
    }

    private func addConnectionHeader(to headers: inout HTTPHeaders, request: HTTPRequestHead, close: Bool) {
        guard !self.isHTTP2 else { return }
        if close {
            headers.replaceOrAdd(name: "connection", value: "close")
        } else if request.version == .http1_0 {
            headers.replaceOrAdd(name: "connection", value: "keep-alive")
        }
    }

    private func responseVersion(for request: HTTPRequestHead) -> HTTPVersion {
        request.version.major == 2 ? request.version : .http1_1
    }

    // MARK: - Bodies

    static let gzipBody = ByteBuffer(bytes: GzipEncoder.compress(Array(TestHTTPSServer.gzipText.utf8)))

    static let bombBody = ByteBuffer(bytes: GzipEncoder.zeroBomb(inflatedSize: TestHTTPSServer.bombInflatedSize))

    static func path(of uri: String) -> String {
        String(uri.prefix { $0 != "?" })
    }

    /// Everything after `?to=`, percent-decoded (so the target may itself hold `?` and `&`); nil without `to=`.
    static func redirectTarget(in uri: String) -> String? {
        guard let range = uri.range(of: "?to=") else { return nil }
        let raw = String(uri[range.upperBound...])
        return raw.removingPercentEncoding ?? raw
    }

    /// The `&`-separated items after `?`, each percent-decoded.
    static func queryFields(in uri: String) -> [String] {
        guard let question = uri.firstIndex(of: "?") else { return [] }
        return uri[uri.index(after: question)...].split(separator: "&").map { $0.removingPercentEncoding ?? String($0) }
    }

    static func headersJSON(_ headers: HTTPHeaders) -> [UInt8] {
        var object: [String: String] = [:]
        for (name, value) in headers {
            let key = name.lowercased()
            object[key] = object[key].map { "\($0), \(value)" } ?? value
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(object)) ?? Data("{}".utf8))
    }
}
