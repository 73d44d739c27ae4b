import Foundation
import Testing

@testable import Bulwark

/// Issue 17: the client's URL redaction cut at the first `?` before removing user information, so a password holding
/// `?` was shown in part (`https://u:p?w@h` as `https://u:p`).
@Suite("URL redaction in the client's errors and descriptions")
struct URLRedactionTests {
    @Test(arguments: [
        "https://user:pa?ss@api.bulwark.test/v1",
        "https://user:pa#ss@api.bulwark.test/v1",
        "https://user:pa/ss@api.bulwark.test/v1",
        "https://user:pass@api.bulwark.test/v1?token=abc",
    ])
    func userInformationIsGoneWhateverItHolds(text: String) {
        let redacted = RequestTarget.redacted(text)
        #expect(!redacted.contains("user"), "\(redacted)")
        #expect(!redacted.contains("pa"), "\(redacted)")
        #expect(!redacted.contains("token"), "\(redacted)")
        #expect(redacted.hasPrefix("https://"))
    }

    @Test func aRequestDescriptionShowsNoPartOfAPassword() throws {
        let url = try #require(URL(string: "https://user:pa%3Fss@api.bulwark.test/v1?q=1"))
        let text = String(describing: BulwarkRequest(url: url))
        #expect(!text.contains("user"))
        #expect(!text.contains("pa%3Fss"))
        #expect(text.contains("api.bulwark.test/v1"))
    }
}
