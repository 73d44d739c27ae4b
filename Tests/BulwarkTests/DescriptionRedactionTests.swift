import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Bulwark

/// Issue 16, defect 13: requests and responses print credential-bearing header values, query strings and bodies as
/// redacted, through every way Swift prints a value.
@Suite("Redaction in request and response descriptions")
struct DescriptionRedactionTests {
    static let secret = "TOPSECRET-42"

    static func texts(of value: Any) -> [String] {
        var dumpedText = ""
        dump(value, to: &dumpedText)
        return [String(describing: value), String(reflecting: value), "\(value)", dumpedText]
    }

    @Test("a request prints its method, URL without query, header names and body size, never a credential")
    func request() throws {
        var headers: HTTPHeaders = [
            "Authorization": "Bearer \(Self.secret)",
            "Cookie": "sid=\(Self.secret)",
            "Proxy-Authorization": "Basic \(Self.secret)",
            "Accept": "application/json",
        ]
        headers.add(name: "X-Trace", value: "trace-1")
        let request = BulwarkRequest(
            url: try #require(URL(string: "https://api.example.com/v1/items?token=\(Self.secret)")),
            method: .POST,
            headers: headers,
            body: .string("password=\(Self.secret)")
        )
        for text in Self.texts(of: request) {
            #expect(!text.contains(Self.secret), "\(text)")
        }
        let text = String(describing: request)
        #expect(text.contains("POST https://api.example.com/v1/items"))
        #expect(text.contains("Authorization: <redacted>"))
        #expect(text.contains("Accept: application/json"))
    }

    @Test("a response prints its status, URL without query and headers, with Set-Cookie redacted")
    func response() throws {
        let response = BulwarkResponse(
            url: try #require(URL(string: "https://api.example.com/login?code=\(Self.secret)")),
            status: .ok,
            headers: ["Set-Cookie": "sid=\(Self.secret); Secure", "Content-Type": "text/plain"],
            httpVersion: .http2,
            serverTrust: nil,
            body: BulwarkResponse.Body(producer: nil, host: "api.example.com")
        )
        for text in Self.texts(of: response) {
            #expect(!text.contains(Self.secret), "\(text)")
        }
        let text = String(describing: response)
        #expect(text.contains("200"))
        #expect(text.contains("Set-Cookie: <redacted>"))
        #expect(text.contains("Content-Type: text/plain"))
    }
}
