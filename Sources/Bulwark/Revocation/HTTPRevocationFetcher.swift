import BulwarkPolicy
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Fetches CRLs and OCSP responses for revocation checking, over plain `http://` on Bulwark's own NIO transport.
///
/// Plain HTTP is allowed here and nowhere else in Bulwark: a CRL and an OCSP response are signed by the
/// certificate's issuer (or its delegated responder) and verified before they are used, so the transport adds
/// nothing, and fetching them over TLS would need a revocation check of its own. What a fetch may cost is bounded:
/// - one ``timeout`` covers connecting, sending and reading the whole response (3 s by default);
/// - the body is capped (``/BulwarkPolicy/RevocationFetchRequest/maximumResponseSize``); a larger one is abandoned as
///   soon as it is seen, from `Content-Length` or while reading;
/// - redirects are followed only within the same origin (scheme, host, port), at most ``maximumRedirects`` times;
/// - nothing is sent but the request: no cookies, no credentials (but an HTTP proxy's, after it answered 407), no
///   `User-Agent` beyond `Bulwark`.
///
/// The fetcher does not consult a client's allowlist: the URLs come from certificates that already verified to a
/// trusted root. Note that an OCSP query tells the responder which certificate is being checked.
public struct HTTPRevocationFetcher: RevocationFetching {
    /// The fetcher revocation evaluators use unless given another: NIO's shared event-loop group, 3 s.
    public static let shared = HTTPRevocationFetcher()

    /// The time allowed for one fetch, from connecting to the last byte of the response.
    public var timeout: TimeAmount
    /// How many same-origin redirects are followed.
    public var maximumRedirects: Int
    private let group: any EventLoopGroup

    /// A fetcher with a time limit per fetch, a number of same-origin redirects it follows, and the event loops it
    /// runs on.
    public init(
        timeout: TimeAmount = .seconds(3),
        maximumRedirects: Int = 3,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.timeout = timeout
        self.maximumRedirects = maximumRedirects
        self.group = eventLoopGroup
    }

    /// Fetches a CRL or an OCSP response over plain `http://`, within ``timeout`` and the request's size limit.
    ///
    /// - Throws: ``/BulwarkPolicy/RevocationFetchError`` naming the URL and what failed.
    /// The proxy of the connection being verified (its scheme, host and port), or an empty string when direct.
    public var route: String { RevocationFetchRoute.proxy.map { $0.endpoint.description } ?? "" }

    public func fetch(_ request: RevocationFetchRequest) async throws(RevocationFetchError) -> [UInt8] {
        var url = try Self.read(request.url, for: request.url)
        var body = request.body
        var hops = 0
        // A proxy's credentials go only to a proxy that asks (407), then on every hop of this fetch.
        var withCredentials = false
        while true {
            let response = try await self.exchange(url, body: body, request: request, withCredentials: withCredentials)
            switch response.status {
            case 200:
                return response.body
            case 407 where !withCredentials && RevocationFetchRoute.proxy?.credentials != nil:
                withCredentials = true
            case 301, 302, 303, 307, 308:
                guard let location = response.location,
                    let next = URL(string: location, relativeTo: url.url)?.absoluteURL,
                    let target = try? RequestURL(next)
                else {
                    throw .invalidResponse(request.url, detail: "a redirect without a usable Location")
                }
                guard target.origin == url.origin, hops < self.maximumRedirects else {
                    throw .redirectRefused(request.url, location: target.text)
                }
                if response.status == 303 { body = nil }
                url = target
                hops += 1
            default:
                throw .httpStatus(request.url, status: response.status)
            }
        }
    }

    /// Reads an `http://` URL (anything else is refused).
    static func read(_ text: String, for shown: String) throws(RevocationFetchError) -> RequestURL {
        guard let url = URL(string: text) else {
            throw .unsupportedURL(shown, why: "it is not a URL")
        }
        let read: RequestURL
        do {
            read = try RequestURL(url)
        } catch {
            throw .unsupportedURL(shown, why: String(describing: error))
        }
        guard read.scheme == "http" else {
            throw .unsupportedURL(
                shown,
                why: "revocation data is fetched over http:// only (it is signed; fetching it over TLS would need a "
                    + "revocation check of its own)"
            )
        }
        return read
    }

    struct Response: Sendable {
        var status: Int
        var location: String?
        var body: [UInt8]
    }

    private func exchange(
        _ url: RequestURL,
        body: [UInt8]?,
        request: RevocationFetchRequest,
        withCredentials: Bool
    ) async throws(RevocationFetchError) -> Response {
        // The proxy of the connection being verified, if any: never around it. An HTTP proxy takes the request in
        // absolute form (RFC 9112 section 3.2.2); other kinds do not carry these fetches yet, so none is made.
        let route = RevocationFetchRoute.proxy
        if let route, route.endpoint.kind != .http {
            throw .unreachable(
                request.url,
                detail: "not fetched: the connection goes through the proxy at \(route.endpoint), which revocation "
                    + "fetches cannot use yet, and they never go around it"
            )
        }
        let loop = self.group.next()
        let promise = loop.makePromise(of: Response.self)
        let handler = RevocationResponseHandler(
            url: request.url,
            maximumSize: request.maximumResponseSize,
            promise: promise
        )
        let target = route == nil ? url.pathAndQuery : "http://" + url.origin.authority + url.pathAndQuery
        var head = HTTPRequestHead(version: .http1_1, method: body == nil ? .GET : .POST, uri: target)
        head.headers.add(name: "Host", value: url.origin.authority)
        // The token itself is written by the connection's ProxyAuthorizationWriter, never into a String.
        let credentials = withCredentials ? route?.credentials : nil
        if credentials != nil {
            head.headers.add(
                name: ProxyAuthorizationWriter.headerName,
                value: "Basic " + ProxyAuthorizationWriter.marker
            )
        }
        head.headers.add(name: "User-Agent", value: "Bulwark")
        head.headers.add(name: "Accept", value: request.accept)
        head.headers.add(name: "Connection", value: "close")
        if let body, let contentType = request.contentType {
            head.headers.add(name: "Content-Type", value: contentType)
            head.headers.add(name: "Content-Length", value: String(body.count))
        }
        let timeout = self.timeout
        let seconds = Double(timeout.nanoseconds) / 1e9
        let deadline = loop.scheduleTask(in: timeout) {
            promise.fail(RevocationFetchError.timedOut(request.url, seconds: seconds))
        }
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let credentials {
                        try channel.pipeline.syncOperations.addHandler(
                            ProxyAuthorizationWriter(credentials: credentials)
                        )
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        let host = url.host.hasPrefix("[") ? String(url.host.dropFirst().dropLast()) : url.host
        let (connectHost, connectPort) = route.map { ($0.endpoint.host, $0.endpoint.port) } ?? (host, url.port)
        bootstrap.connect(host: connectHost, port: connectPort).whenComplete { result in
            switch result {
            case .failure(let error):
                promise.fail(RevocationFetchError.unreachable(request.url, detail: Self.describe(error)))
            case .success(let channel):
                promise.futureResult.whenComplete { _ in channel.close(promise: nil) }
                channel.write(HTTPClientRequestPart.head(head), promise: nil)
                if let body {
                    channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
                }
                channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
            }
        }
        do {
            let response = try await promise.futureResult.get()
            deadline.cancel()
            return response
        } catch let error as RevocationFetchError {
            deadline.cancel()
            throw error
        } catch {
            deadline.cancel()
            throw .unreachable(request.url, detail: Self.describe(error))
        }
    }

    /// A connection error in words, without type names or raw error numbers.
    static func describe(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return Self.describe(first.error) }
            return "the host name could not be resolved"
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED: return "connection refused"
            case ECONNRESET: return "connection reset"
            case ENETUNREACH, EHOSTUNREACH: return "no route to the host"
            default: return "the connection failed"
            }
        }
        if let error = error as? ChannelError, case .connectTimeout = error { return "connecting timed out" }
        return "the connection failed"
    }
}

/// Collects one HTTP/1.1 response into a ``HTTPRevocationFetcher/Response``, abandoning it when the body exceeds
/// the cap, and failing when the connection ends before the response does.
final class RevocationResponseHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart

    private let url: String
    private let maximumSize: Int
    private let promise: EventLoopPromise<HTTPRevocationFetcher.Response>
    private var status = 0
    private var location: String?
    private var body: [UInt8] = []
    private var finished = false

    init(url: String, maximumSize: Int, promise: EventLoopPromise<HTTPRevocationFetcher.Response>) {
        self.url = url
        self.maximumSize = maximumSize
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.finished else { return }
        switch Self.unwrapInboundIn(data) {
        case .head(let head):
            self.status = Int(head.status.code)
            self.location = head.headers.first(name: "Location")
            if let length = head.headers.first(name: "Content-Length").flatMap(Int.init), length > self.maximumSize {
                self.fail(.tooLarge(self.url, limit: self.maximumSize), context: context)
            }
        case .body(let buffer):
            guard buffer.readableBytes <= self.maximumSize - self.body.count else {
                self.fail(.tooLarge(self.url, limit: self.maximumSize), context: context)
                return
            }
            self.body.append(contentsOf: buffer.readableBytesView)
        case .end:
            self.finished = true
            self.promise.succeed(.init(status: self.status, location: self.location, body: self.body))
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail(.invalidResponse(self.url, detail: "the response could not be read as HTTP/1.1"), context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.fail(
            .invalidResponse(self.url, detail: "the connection closed before the response ended"),
            context: context
        )
        context.fireChannelInactive()
    }

    private func fail(_ error: RevocationFetchError, context: ChannelHandlerContext) {
        guard !self.finished else { return }
        self.finished = true
        self.promise.fail(error)
        context.close(promise: nil)
    }
}
