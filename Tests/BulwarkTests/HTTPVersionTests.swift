import Bulwark
import Testing

/// ``HTTPVersion``: names, ALPN identifiers, order and equality.
@Suite struct HTTPVersionTests {
    @Test func namesAndIdentifiers() {
        #expect(HTTPVersion.http1_1.description == "HTTP/1.1")
        #expect(HTTPVersion.http2.description == "HTTP/2")
        #expect(HTTPVersion(major: 1, minor: 0).description == "HTTP/1.0")
        #expect(HTTPVersion(major: 3, minor: 0).description == "HTTP/3")
        #expect(HTTPVersion.http1_1.alpnIdentifier == "http/1.1")
        #expect(HTTPVersion.http2.alpnIdentifier == "h2")
        #expect((HTTPVersion.http2.major, HTTPVersion.http2.minor) == (2, 0))
        #expect((HTTPVersion.http1_1.major, HTTPVersion.http1_1.minor) == (1, 1))
    }

    @Test(arguments: ["http/1.0", "http/1.1", "h2", "h3"])
    func alpnIdentifiersRoundTrip(identifier: String) throws {
        let version = try #require(HTTPVersion(alpnIdentifier: identifier))
        #expect(version.alpnIdentifier == identifier)
    }

    @Test func unknownIdentifiersAreNotVersions() {
        #expect(HTTPVersion(alpnIdentifier: "spdy/3") == nil)
        #expect(HTTPVersion(alpnIdentifier: "H2") == nil)
        #expect(HTTPVersion(alpnIdentifier: "") == nil)
        #expect(HTTPVersion(alpnIdentifier: "h2") == .http2)
        #expect(HTTPVersion(alpnIdentifier: "http/1.1") == .http1_1)
    }

    @Test func orderAndEquality() {
        let http1_0 = HTTPVersion(major: 1, minor: 0)
        #expect(http1_0 < .http1_1)
        #expect(HTTPVersion.http1_1 < .http2)
        #expect(HTTPVersion.http2 < HTTPVersion(major: 2, minor: 1))
        #expect(HTTPVersion.http2 >= .http1_1)
        #expect([HTTPVersion.http2, http1_0, .http1_1].sorted() == [http1_0, .http1_1, .http2])
        #expect(HTTPVersion(major: 2, minor: 0) == .http2)
        #expect(HTTPVersion(major: 2, minor: 0).hashValue == HTTPVersion.http2.hashValue)
        #expect(Set([HTTPVersion.http2, HTTPVersion(major: 2, minor: 0), .http1_1]).count == 2)
    }
}
