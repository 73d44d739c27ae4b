import Testing

@testable import BulwarkPolicy

/// RFC 9110's token, as the package's one definition reads it.
@Suite("HTTP tokens (RFC 9110 5.6.2)")
struct HTTPTokenTests {
    static let tokens = ["GET", "x-request-id", "Content-Type", "!#$%&'*+-.^_`|~", "a", "0"]
    static let notTokens = ["", " ", "x y", "name:", "a\r\nb", "caf\u{E9}", "\"q\"", "(x)", "a/b", "a\u{0}b", "{", "@"]

    @Test(arguments: tokens)
    func tokensAreTokens(_ text: String) {
        #expect(HTTPToken.isToken(text))
    }

    @Test(arguments: notTokens)
    func othersAreNot(_ text: String) {
        #expect(!HTTPToken.isToken(text))
    }

    @Test func everyByteAgreesWithTheGrammar() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(HTTPToken.isTokenByte(byte) == tchar.contains(byte), "byte \(byte)")
        }
    }
}
