import Foundation
import NIOCore
import NIOHTTP1

/// nginx's answer to a client certificate it refuses, read as the refusal it is.
///
/// nginx (`ssl_verify_client on`), and the servers built on it (OpenResty, Tengine, Angie), never fail the TLS
/// handshake over a client certificate: they complete it and answer every request with a 400 page of their own,
/// internally 496 when no certificate was sent and 495 when the certificate could not be verified (another CA, expired,
/// revoked, a broken chain; nginx logs which, and does not say). The page is fixed text:
///
/// ```
/// <html>
/// <head><title>400 No required SSL certificate was sent</title></head>
/// <body>
/// <center><h1>400 Bad Request</h1></center>
/// <center>No required SSL certificate was sent</center>
/// ```
///
/// A response is read as that refusal only when all of this holds: status 400, an HTML content type, a declared
/// length of at most ``maximumLength`` bytes, and a body that carries both the page's title and its centred line for
/// one of the two reasons. Any other 400, nginx's own `400 Bad Request` page included, stays a response. A pure
/// function of the response: tested without sockets.
enum ClientCertificateRefusalPage {
    /// What nginx said.
    enum Refusal: Equatable {
        /// 496: the server requires a certificate and none was sent.
        case noCertificate
        /// 495: the certificate sent could not be verified.
        case certificateError

        /// nginx's words, as its page shows them.
        var words: String {
            switch self {
            case .noCertificate: return "No required SSL certificate was sent"
            case .certificateError: return "The SSL certificate error"
            }
        }
    }

    /// The longest page read (nginx's are under 250 bytes).
    static let maximumLength = 1024

    /// Whether the response to `method` may be the page, so its body is worth reading (at most ``maximumLength``
    /// bytes, as declared).
    static func mayBe(_ head: HTTPResponseHead, method: HTTPMethod) -> Bool {
        guard head.status == .badRequest, method != .HEAD,
            let type = head.headers.first(name: "content-type"),
            type.lowercased().hasPrefix("text/html"),
            head.headers["content-length"].count == 1,
            let length = head.headers.first(name: "content-length").flatMap({ Int($0) }),
            (0...Self.maximumLength).contains(length),
            !head.headers.contains(name: "transfer-encoding")
        else { return false }
        return true
    }

    /// The refusal `body` states, if it is one of nginx's two pages.
    static func refusal(in body: ByteBuffer) -> Refusal? {
        let text = String(buffer: body)
        for refusal in [Refusal.noCertificate, .certificateError]
        where text.contains("<title>400 \(refusal.words)</title>") && text.contains("<center>\(refusal.words)</center>")
        {
            return refusal
        }
        return nil
    }

    /// The ``BulwarkError/Code/clientCertificateRejected`` error for `refusal` by the server at `authority`, to a
    /// connection that offered `identity` (nil: none). When the identity's certificate has expired by `now`, the
    /// error says so, the likeliest of the reasons nginx does not give.
    static func error(
        _ refusal: Refusal,
        host: String,
        authority: String,
        identity: ClientIdentity?,
        now: Date = Date()
    ) -> BulwarkError {
        let answer = "nginx's answer: 400 \"\(refusal.words)\""
        let sentence: String
        switch (refusal, identity) {
        case (.noCertificate, nil):
            sentence =
                "the server at \(authority) requires a client certificate and none was sent (\(answer)); "
                + "configure one for this host in clientIdentities"
        case (.noCertificate, let identity?):
            sentence =
                "the server at \(authority) requires a client certificate and received none, though "
                + "\"\(identity.subject)\" is configured for this host (\(answer))"
        case (.certificateError, nil):
            sentence = "the server at \(authority) rejected the client certificate (\(answer))"
        case (.certificateError, let identity?):
            let leaf = identity.leaf
            let why: String
            if leaf.notValidAfter < now {
                why = "; the certificate expired on \(Self.format(leaf.notValidAfter))"
            } else {
                why =
                    "; nginx does not say why: a certificate it cannot verify is one from a CA it does not "
                    + "trust, an expired or revoked one, or one sent without the intermediates it needs"
            }
            sentence =
                "the server at \(authority) rejected the client certificate \"\(identity.subject)\" (\(answer))"
                + why
        }
        return BulwarkError(.clientCertificateRejected, host: host, detail: sentence)
    }

    private static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
