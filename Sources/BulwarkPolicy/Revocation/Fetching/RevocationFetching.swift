/// Fetches the revocation data a certificate points at: a CRL from a distribution point, or an OCSP response from
/// a responder.
///
/// The `Bulwark` module provides the implementation a client uses (`HTTPRevocationFetcher`: plain `http://` over
/// Bulwark's own NIO transport, with its own timeout and size cap, no redirects except to the same origin, and no
/// revocation check of its own). Plain HTTP is acceptable here and only here, because what is fetched is signed by
/// the issuer and verified before use; a fetcher must never be handed the URL of anything else.
///
/// Conform to feed revocation data from elsewhere (a cache service, a stapled response once NIOSSL exposes it).
///
/// > Note: Bulwark's own fetcher sends each fetch the way of the connection being verified (through its HTTP proxy;
/// > none at all through a SOCKS5 or HTTPS proxy). A fetcher of your own is not told that way: it must choose its
/// > own, and should say which in ``route``. The checks of an HTTPS proxy's own certificate fetch directly.
public protocol RevocationFetching: Sendable {
    /// Fetches `request` and returns the response body.
    ///
    /// - Throws: ``RevocationFetchError`` when there is no body to return; the check then treats the status as
    ///   unknown.
    func fetch(_ request: RevocationFetchRequest) async throws(RevocationFetchError) -> [UInt8]

    /// The way a fetch made now would go (a proxy's scheme, host and port; never its credentials), or an empty
    /// string when it goes direct. Read in the task of the evaluation, before fetching: failures remembered and
    /// fetches in flight are kept apart by it, so what happened on one route never answers for another.
    var route: String { get }
}

extension RevocationFetching {
    /// Direct: a fetcher that knows of no proxy.
    public var route: String { "" }
}

/// One fetch of revocation data.
public struct RevocationFetchRequest: Hashable, Sendable, CustomStringConvertible {
    /// What is fetched.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        /// A certificate revocation list (`GET`, `application/pkix-crl`).
        public static let crl = Kind(name: "CRL")
        /// An OCSP response (`GET` with the request in the path, or `POST` of `application/ocsp-request`).
        public static let ocsp = Kind(name: "OCSP")

        /// `crl` or `ocsp`.
        public var description: String { self.name }
    }

    /// What is fetched.
    public var kind: Kind
    /// The `http://` URL.
    public var url: String
    /// The body of a `POST` (a DER OCSP request); `nil` for a `GET`.
    public var body: [UInt8]?
    /// The largest response body accepted.
    public var maximumResponseSize: Int

    /// A fetch of `url` (a `GET`, or a `POST` of `body`), refused past `maximumResponseSize` bytes.
    public init(kind: Kind, url: String, body: [UInt8]? = nil, maximumResponseSize: Int) {
        self.kind = kind
        self.url = url
        self.body = body
        self.maximumResponseSize = maximumResponseSize
    }

    /// `GET` or `POST`.
    public var method: String { self.body == nil ? "GET" : "POST" }

    /// The `Content-Type` of the body, for a `POST`.
    public var contentType: String? { self.body == nil ? nil : "application/ocsp-request" }

    /// The media type expected back.
    public var accept: String { self.kind == .crl ? "application/pkix-crl" : "application/ocsp-response" }

    /// The kind, the method and the URL (shortened when it is long).
    public var description: String {
        // An OCSP GET carries the encoded request in its path: long and meaningless to a reader.
        let shown = self.url.count > 120 ? String(self.url.prefix(100)) + "…" : self.url
        return "\(self.kind) \(self.method) \(shown)"
    }
}
