import Foundation
import Testing

@testable import BulwarkPolicy

/// Issue 16, defect 13: header fields and redirect decisions print credential-bearing header values as `<redacted>`,
/// through every way Swift prints a value.
@Suite("Header redaction in descriptions and dumps")
struct HeaderRedactionTests {
    static let secret = "TOPSECRET-42"

    /// Every text a value prints as: `description`, `String(reflecting:)`, interpolation and `dump`.
    static func texts(of value: Any) -> [String] {
        [String(describing: value), String(reflecting: value), "\(value)", dumped(value)]
    }

    @Test("credential-bearing fields print their name and <redacted>; others print their value")
    func headerFields() {
        for name in ["Authorization", "cookie", "Set-Cookie", "PROXY-AUTHORIZATION"] {
            let field = HeaderField(name: name, value: "Bearer " + Self.secret)
            for text in Self.texts(of: field) {
                #expect(!text.contains(Self.secret), "\(name): \(text)")
            }
            #expect(field.description == "\(name): <redacted>")
        }
        #expect(HeaderField(name: "Accept", value: "text/plain").description == "Accept: text/plain")
        // One list: the redirect policy's credential headers, and Set-Cookie.
        #expect(HeaderField.redactedNames == RedirectPolicy.defaultCredentialHeaders.union(["set-cookie"]))
        #expect(HeaderField(name: "Cookie", value: "a=b").value == "a=b", "the value itself is unchanged")
    }

    @Test("a redirect decision and its record print no credential value")
    func redirectFollow() throws {
        let follow = RedirectFollow(
            url: try #require(URL(string: "https://a.example/next")),
            method: "GET",
            headers: [
                HeaderField(name: "Authorization", value: "Bearer " + Self.secret),
                HeaderField(name: "Cookie", value: "sid=" + Self.secret),
                HeaderField(name: "Accept", value: "text/plain"),
            ]
        )
        for value in [follow, RedirectDecision.follow(follow)] as [Any] {
            for text in Self.texts(of: value) {
                #expect(!text.contains(Self.secret), "\(text)")
            }
        }
        #expect(String(describing: follow).contains("Accept: text/plain"))
        #expect(String(describing: follow).contains("Authorization: <redacted>"))
        let record = RedirectRecord(url: follow.url, status: 302, decision: .follow(follow))
        for text in Self.texts(of: record) {
            #expect(!text.contains(Self.secret), "\(text)")
        }
    }
}
