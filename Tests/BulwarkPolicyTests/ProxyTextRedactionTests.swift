import BulwarkPolicy
import Foundation
import Testing

// Every text that may hold a proxy URL goes through one redaction: no password in a description, a dump, an error
// or a policy file's problem, whatever shape the text has.
@Suite("Proxy text redaction")
struct ProxyTextRedactionTests {
    static let secret = "hunter2"

    @Test("the environment's description and dump never show a proxy password")
    func environmentDescriptionAndDump() {
        let environment = ProxyEnvironment([
            "https_proxy": "http://alice:\(Self.secret)@proxy.example:3128",
            "ALL_PROXY": "socks5h://bob:\(Self.secret)@127.0.0.1:1080",
            "no_proxy": "localhost",
        ])
        var dumped = ""
        dump(environment, to: &dumped)
        for text in [String(describing: environment), String(reflecting: environment), dumped] {
            #expect(!text.contains(Self.secret), "\(text)")
            #expect(!text.contains("alice"), "\(text)")
        }
        #expect(String(describing: environment).contains("proxy.example:3128"))
    }

    @Test(
        "a proxy text whose scheme is not a scheme does not echo what precedes ://",
        arguments: [
            "alice:\(Self.secret)@proxy.example:3128/x://", "alice:\(Self.secret)://proxy.example",
            "ftp user:\(Self.secret)://proxy",
        ]
    )
    func schemeIsNotEchoed(_ text: String) {
        #expect(throws: ProxyURLError.self) { try ProxyEndpoint.parse(text) }
        do {
            _ = try ProxyEndpoint.parse(text)
        } catch {
            #expect(!error.description.contains(Self.secret), "\(error.description)")
        }
    }

    @Test(
        "a policy file's proxy URL problem never quotes a password",
        arguments: [
            "http://alice:\(Self.secret)@[::1", "http://alice:\(Self.secret)@", "http://alice:\(Self.secret)@h/p",
            "alice:\(Self.secret)@proxy:3128 x", "http://alice:\(Self.secret)@h:1?q",
        ]
    )
    func policyProblemIsRedacted(_ text: String) throws {
        let problem = try #require(PolicyFile.Proxy.problem(withURL: text))
        #expect(!problem.detail.contains(Self.secret), "\(problem.detail)")
    }
}
