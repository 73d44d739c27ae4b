/// A request a test server received completely (head and body), as it saw it.
public struct RecordedRequest: Sendable {
    /// The method, as sent (`GET`, `POST`, …).
    public let method: String
    /// The request target as sent: path and query (`/redirect/302?to=%2Fhello`).
    public let uri: String
    /// The header fields in arrival order, names as sent. On HTTP/2 `:authority` arrives as `host`.
    public let headers: [(name: String, value: String)]
    /// How many body bytes the request carried.
    public let bodyByteCount: Int
    /// `HTTP/1.1`, `HTTP/1.0` or `HTTP/2.0`.
    public let httpVersion: String
    /// Which connection carried the request: 1 for the server's first accepted connection, and so on.
    public let connectionID: Int
    /// The first 64 KiB of the body.
    public let body: [UInt8]

    /// A recorded request (public so tests can build expectations).
    public init(
        method: String,
        uri: String,
        headers: [(name: String, value: String)],
        bodyByteCount: Int,
        httpVersion: String,
        connectionID: Int,
        body: [UInt8] = []
    ) {
        self.body = body
        self.method = method
        self.uri = uri
        self.headers = headers
        self.bodyByteCount = bodyByteCount
        self.httpVersion = httpVersion
        self.connectionID = connectionID
    }

    /// The path without the query.
    public var path: String {
        String(self.uri.prefix { $0 != "?" })
    }

    /// Every value of the header `name` (case-insensitive), in arrival order.
    public func values(forHeader name: String) -> [String] {
        let wanted = name.lowercased()
        return self.headers.filter { $0.name.lowercased() == wanted }.map(\.value)
    }

    /// The first value of the header `name` (case-insensitive), or nil.
    public func value(forHeader name: String) -> String? {
        self.values(forHeader: name).first
    }
}
