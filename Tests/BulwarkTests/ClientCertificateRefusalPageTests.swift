import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Bulwark

/// nginx's client-certificate refusal pages, read without sockets (against nginx itself:
/// `ClientCertificateInteropTests`).
@Suite("nginx's client-certificate refusal page")
struct ClientCertificateRefusalPageTests {
    /// nginx 1.22's page, byte for byte as it sends it.
    static func page(_ words: String, title: String? = nil) -> String {
        "<html>\r\n<head><title>400 \(title ?? words)</title></head>\r\n<body>\r\n"
            + "<center><h1>400 Bad Request</h1></center>\r\n<center>\(words)</center>\r\n"
            + "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    }

    static func head(
        status: HTTPResponseStatus = .badRequest,
        _ headers: [(String, String)] = [("Content-Type", "text/html"), ("Content-Length", "234")]
    ) -> HTTPResponseHead {
        HTTPResponseHead(version: .http1_1, status: status, headers: HTTPHeaders(headers))
    }

    @Test("only a short, declared-length HTML 400 to a request other than HEAD is read")
    func mayBe() {
        #expect(ClientCertificateRefusalPage.mayBe(Self.head(), method: .GET))
        #expect(ClientCertificateRefusalPage.mayBe(Self.head(), method: .POST))
        let charset = Self.head([("content-type", "text/html; charset=utf-8"), ("content-length", "1024")])
        #expect(ClientCertificateRefusalPage.mayBe(charset, method: .GET))
        let refused: [(HTTPResponseHead, HTTPMethod)] = [
            (Self.head(), .HEAD),
            (Self.head(status: .ok), .GET),
            (Self.head(status: .forbidden), .GET),
            (Self.head([("Content-Type", "application/json"), ("Content-Length", "234")]), .GET),
            (Self.head([("Content-Type", "text/html")]), .GET),
            (Self.head([("Content-Type", "text/html"), ("Content-Length", "1025")]), .GET),
            (Self.head([("Content-Type", "text/html"), ("Content-Length", "-1")]), .GET),
            (Self.head([("Content-Type", "text/html"), ("Content-Length", "x")]), .GET),
            (
                Self.head(
                    [("Content-Type", "text/html"), ("Content-Length", "234"), ("Content-Length", "12")]
                ), .GET
            ),
            (
                Self.head(
                    [("Content-Type", "text/html"), ("Content-Length", "234"), ("Transfer-Encoding", "chunked")]
                ), .GET
            ),
        ]
        for (head, method) in refused {
            #expect(!ClientCertificateRefusalPage.mayBe(head, method: method), "\(method) \(head)")
        }
    }

    @Test("nginx's 496 and 495 pages are refusals; its ordinary 400 page and look-alikes are not")
    func refusal() {
        let noCertificate = Self.page("No required SSL certificate was sent")
        let certificateError = Self.page("The SSL certificate error")
        #expect(ClientCertificateRefusalPage.refusal(in: ByteBuffer(string: noCertificate)) == .noCertificate)
        #expect(ClientCertificateRefusalPage.refusal(in: ByteBuffer(string: certificateError)) == .certificateError)
        let notRefusals = [
            Self.page("Bad Request", title: "Bad Request"),
            Self.page("The plain HTTP request was sent to HTTPS port"),
            // The title alone, or the line alone, is not the page.
            Self.page("something else", title: "No required SSL certificate was sent"),
            Self.page("The SSL certificate error", title: "Bad Request"),
            "No required SSL certificate was sent",
            "",
        ]
        for text in notRefusals {
            #expect(ClientCertificateRefusalPage.refusal(in: ByteBuffer(string: text)) == nil, "\(text)")
        }
    }

    @Test("the error names the server, nginx's words, the certificate, and an expiry the client can see")
    func error() throws {
        let ca = try CertificateFactory.makeRoot(commonName: "Refusal Page CA")
        let identity = try ClientCertificates.identity(try ClientCertificates.leaf(ca))
        let expiredLeaf = try ClientCertificates.leaf(ca, validity: .expired, commonName: "old-device")
        let expired = try ClientIdentity.pem(
            certificateChain: Array(expiredLeaf.certificatePEM.utf8),
            privateKey: SecretBytes(utf8: expiredLeaf.privateKeyPEM),
            now: expiredLeaf.certificate.notValidAfter - 60
        )
        func text(_ refusal: ClientCertificateRefusalPage.Refusal, _ identity: ClientIdentity?) -> BulwarkError {
            ClientCertificateRefusalPage.error(
                refusal,
                host: "api.example",
                authority: "api.example:8443",
                identity: identity
            )
        }
        let none = text(.noCertificate, nil)
        #expect(none.code == .clientCertificateRejected)
        #expect(none.host == "api.example")
        #expect(
            none.description.contains(
                "the server at api.example:8443 requires a client certificate and none was sent (nginx's answer: 400 "
                    + "\"No required SSL certificate was sent\"); configure one for this host in clientIdentities"
            ),
            "\(none)"
        )
        let ignored = text(.noCertificate, identity)
        #expect(ignored.description.contains("received none, though \"CN=device-42\" is configured"), "\(ignored)")
        let unverified = text(.certificateError, identity)
        #expect(
            unverified.description.contains(
                "rejected the client certificate \"CN=device-42\" (nginx's answer: 400 \"The SSL certificate error\")"
            ),
            "\(unverified)"
        )
        #expect(unverified.description.contains("nginx does not say why"), "\(unverified)")
        let old = text(.certificateError, expired)
        let date = expiredLeaf.certificate.notValidAfter.formatted(.iso8601)
        #expect(old.description.contains("\"CN=old-device\""), "\(old)")
        #expect(old.description.contains("the certificate expired on \(date)"), "\(old)")
        for error in [none, ignored, unverified, old] {
            #expect(!error.description.contains("PRIVATE KEY"))
            #expect(!error.description.contains("Refusal"))
        }
    }

    @Test("a body read whole is given back once, as one chunk")
    func bufferedBody() async throws {
        let body = BulwarkResponse.Body(producer: nil, host: "api.example", buffered: ByteBuffer(string: "page"))
        var chunks: [String] = []
        for try await chunk in body { chunks.append(String(buffer: chunk)) }
        #expect(chunks == ["page"])
        let empty = BulwarkResponse.Body(producer: nil, host: "api.example", buffered: ByteBuffer())
        let collected = try await empty.collect(upTo: 10)
        #expect(collected.readableBytes == 0)
    }
}
