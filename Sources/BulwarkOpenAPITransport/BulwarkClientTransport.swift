import Bulwark
import Foundation
import HTTPTypes
import NIOCore
import OpenAPIRuntime

/// A `ClientTransport` of swift-openapi-runtime that sends a generated client's requests through a
/// `BulwarkClient`: every handshake judged by its trust manager, redirects decided by its policy,
/// credentials and cookies attached at send time, every security event reported.
///
/// ```swift
/// let bulwark = BulwarkClient(configuration: .init(trust: try ServerTrustManager(evaluators: [
///     "api.example.com": .publicKeys(try PinSet(["sha256/…", "sha256/…"])),
/// ])))
/// let client = Client(serverURL: URL(string: "https://api.example.com")!,
///                     transport: BulwarkClientTransport(client: bulwark))
/// let greeting = try await client.getGreeting()
/// ```
///
/// Bodies stream both ways. A request body is sent chunk by chunk as the generated client's `HTTPBody` yields it,
/// paced by the connection; only a body that can be iterated more than once and is at most
/// ``Configuration/maximumBufferedRequestBodySize`` long is gathered in memory first, so that a 307 or 308 redirect or a
/// retry on a stale keep-alive connection may send it again. The response body is handed over as it arrives, and
/// the socket is read only as fast as the caller reads it.
///
/// Errors: whatever Bulwark refuses or fails reaches the caller as the `ClientError`'s `underlyingError`, a
/// `BulwarkError` (a pin mismatch is `BulwarkError.Code.trustRefused`, with its
/// `BulwarkError.trustRefusal`). An error while the response body is read is a `BulwarkError` too.
///
/// > Warning: `ClientError`'s own description (swift-openapi-runtime's) prints the request's path with its query and
/// > every request and response header field, `Set-Cookie` included. Credentials and cookies that Bulwark attaches
/// > (`BulwarkClient.Configuration.credentials`, `BulwarkClient.Configuration.cookies`) are
/// > added after the transport and never appear there; headers that a middleware adds do. Log the `underlyingError`,
/// > whose description Bulwark keeps free of secrets.
public struct BulwarkClientTransport: ClientTransport {
    /// The Bulwark client and time limit of a transport.
    public var configuration: Configuration

    /// A transport with `configuration`.
    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// A transport sending through `client`, each exchange (redirects and the response body included) limited to
    /// `timeout`.
    public init(client: BulwarkClient, timeout: TimeAmount = .minutes(1)) {
        self.init(configuration: Configuration(client: client, timeout: timeout))
    }

    /// Sends `request` with `body` to `baseURL` joined with the request's path, and returns the response as soon as
    /// its head has arrived, with its body still streaming.
    ///
    /// - Throws: `BulwarkError` for every failure: a URL that `baseURL` and the path do not make
    ///   (`BulwarkError.Code.invalidURL`), a refused chain, a refused redirect, a timeout, a cancellation.
    public func send(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let bulwarkRequest = try await Self.makeRequest(
            request,
            body: body,
            baseURL: baseURL,
            maximumBufferedBodySize: self.configuration.maximumBufferedRequestBodySize
        )
        let response = try await self.configuration.client.execute(bulwarkRequest, timeout: self.configuration.timeout)
        return Self.makeResponse(response, method: request.method)
    }
}
