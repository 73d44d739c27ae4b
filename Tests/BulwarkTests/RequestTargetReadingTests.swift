import Foundation
import Testing

@testable import Bulwark

/// Issue 17, item 2: the client's request target reads a URL's origin as the allowlist, credential scopes, the cookie
/// jar and the redirect rules do (see `URLReadingConsistencyTests` in BulwarkPolicyTests for those readers).
@Suite("The request target reads a URL as every other reader does")
struct RequestTargetReadingTests {
    /// URL text, then `scheme://host:port` as every reader reads it, or nil where every reader refuses the URL.
    static let cases: [(String, String?)] = [
        ("https://bücher.example/a/b", "https://xn--bcher-kva.example:443"),
        ("https://xn--bcher-kva.example/a/b", "https://xn--bcher-kva.example:443"),
        ("https://BÜCHER.example./a/b", "https://xn--bcher-kva.example:443"),
        ("HTTPS://API.Example.COM.:443/v1/x", "https://api.example.com:443"),
        ("http://api.example.com:8080/v1/x", "http://api.example.com:8080"),
        ("https://127.0.0.1:8443/x", "https://127.0.0.1:8443"),
        ("https://1.2.3.4./x", "https://1.2.3.4:443"),
        ("https://[0:0:0:0:0:0:0:1]:8443/x", "https://::1:8443"),
        ("https://[::ffff:127.0.0.1]/x", "https://::ffff:7f00:1:443"),
        ("https://127.1/x", nil),
        ("https://0x7f.0.0.1/x", nil),
        ("https://[fe80::1%25eth0]/x", nil),
        ("https://a%2eexample/x", nil),
        ("https://user:pass@a.example/x", nil),
        ("https://a.example:0/x", nil),
    ]

    @Test("origins", arguments: cases)
    func origin(text: String, expected: String?) throws {
        let url = try #require(URL(string: text))
        do throws(BulwarkError) {
            let target = try RequestTarget(url)
            #expect("\(target.scheme)://\(target.host):\(target.port)" == expected)
        } catch {
            #expect(expected == nil, "\(error)")
            #expect(error.code == .invalidURL)
            #expect(!String(describing: error).contains("pass"))
        }
    }

    @Test("the Host header and the request line")
    func requestLine() throws {
        let idn = try RequestTarget(try #require(URL(string: "https://BÜCHER.example.:8443/a/./b?q=1")))
        #expect(idn.hostHeader == "xn--bcher-kva.example:8443")
        // The request line carries the path as written; scopes and cookies decide on it without dot segments.
        #expect(idn.pathAndQuery == "/a/./b?q=1")
        let ipv6 = try RequestTarget(try #require(URL(string: "http://[::1]/")))
        #expect(ipv6.hostHeader == "[::1]")
        #expect(ipv6.pathAndQuery == "/")
    }
}
