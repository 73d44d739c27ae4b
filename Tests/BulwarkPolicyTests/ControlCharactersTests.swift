import Testing

@testable import BulwarkPolicy

@Suite("Control characters in messages")
struct ControlCharactersTests {
    @Test("escaped as \\u{HEX}; the ASCII space and visible text kept")
    func escaping() {
        #expect(ControlCharacters.escaped("a\r\nb") == "a\\u{D}\\u{A}b")
        #expect(ControlCharacters.escaped("x\u{202E}y\u{200B}z\u{7F}") == "x\\u{202E}y\\u{200B}z\\u{7F}")
        #expect(ControlCharacters.escaped("a b\u{A0}c\u{3000}") == "a b\\u{A0}c\\u{3000}")
        #expect(ControlCharacters.escaped("bücher \"q\" \\") == "bücher \"q\" \\")
        #expect(ControlCharacters.escaped("\"q\" \\", quotingDelimiters: true) == "\\\"q\\\" \\\\")
    }

    @Test("control characters are invisible; whitespace is invisible but not a control character")
    func classes() {
        for scalar: Unicode.Scalar in [
            "\0", "\t", "\n", "\u{7F}", "\u{85}", "\u{200B}", "\u{202E}", "\u{2028}", "\u{AD}",
        ] {
            #expect(ControlCharacters.isControl(scalar), "\(scalar.value)")
            #expect(ControlCharacters.isInvisible(scalar), "\(scalar.value)")
        }
        for scalar: Unicode.Scalar in [" ", "\u{A0}", "\u{3000}", "\u{2003}"] {
            #expect(!ControlCharacters.isControl(scalar), "\(scalar.value)")
            #expect(ControlCharacters.isInvisible(scalar), "\(scalar.value)")
        }
        for scalar: Unicode.Scalar in ["a", "ü", "/", "%", "\u{4E2D}"] {
            #expect(!ControlCharacters.isInvisible(scalar), "\(scalar.value)")
        }
    }

    @Test("host errors, allowlist refusals and redacted URLs use the one escaping")
    func users() throws {
        let error = #expect(throws: HostPatternError.self) { try HostName.canonicalize("a\r\n\"b") }
        #expect(error?.description.contains("a\\u{D}\\u{A}\\\"b") == true)
        let refusal = try #require(HostAllowlist([]).decision(scheme: "https", host: "a\u{0}b", port: nil).refusal)
        #expect(refusal.target == "https://a\\u{0}b:443")
        #expect(URLRedaction.redacted("/x\r\ny") == "/x\\u{D}\\u{A}y")
    }
}
