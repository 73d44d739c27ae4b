extension TestHTTPSServer {
    /// How a test server misbehaves, for robustness tests. Everything not named here stays normal.
    public enum Behavior: Sendable, Hashable {
        /// A well-behaved HTTPS server.
        case normal
        /// Accepts TCP connections and never answers the ClientHello: no TLS handler is installed; the socket stays
        /// open until the client gives up or the server shuts down.
        case stallHandshake
        /// Writes plain bytes (`HTTP/1.1 200 OK` and junk, no TLS record) as soon as a connection is accepted, ignores
        /// what the client sends and closes the connection 250 ms later.
        case garbageInsteadOfTLS
        /// On `/bytes/N`: sends the head and the first half of the body, then resets the TCP connection
        /// (`SO_LINGER` 0 and a close that bypasses TLS, so no close_notify: the client sees an RST and receives at
        /// most half the body, as the RST discards what the kernel had not sent yet). On HTTP/2 the whole connection
        /// is reset.
        case resetMidBody
        /// On `/chunked/N`: sends the head and chunks worth half the body, then closes the connection cleanly
        /// (TLS close_notify and FIN) without the terminating zero-length chunk. On HTTP/2 the connection closes
        /// without END_STREAM.
        case truncatedChunkedBody
        /// Closes a connection (close_notify, then FIN; no GOAWAY on HTTP/2) once it has seen no application
        /// reads or writes for this long, counted from the end of the TLS handshake. The clock also runs while a
        /// request waits for its response (`/slow/MS`).
        case closeIdleConnectionsAfter(milliseconds: Int)
    }
}
