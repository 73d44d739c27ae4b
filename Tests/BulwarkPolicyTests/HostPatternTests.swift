import Testing

@testable import BulwarkPolicy

// MARK: - Table rows

struct HostMatchCase: Sendable, CustomTestStringConvertible {
    let pattern: String
    let host: String
    let matches: Bool

    init(_ pattern: String, _ host: String, _ matches: Bool) {
        self.pattern = pattern
        self.host = host
        self.matches = matches
    }

    var testDescription: String {
        "\"\(self.pattern)\" \(self.matches ? "matches" : "does not match") \"\(self.host)\""
    }
}

struct HostCanonicalCase: Sendable, CustomTestStringConvertible {
    let input: String
    let canonical: String

    init(_ input: String, _ canonical: String) {
        self.input = input
        self.canonical = canonical
    }

    var testDescription: String { "\"\(self.input)\" -> \"\(self.canonical)\"" }
}

struct HostErrorCase: Sendable, CustomTestStringConvertible {
    let input: String
    let code: HostPatternError.Code
    /// How the input appears in the description, when control characters are escaped there.
    let quoted: String

    init(_ input: String, _ code: HostPatternError.Code, quoted: String? = nil) {
        self.input = input
        self.code = code
        self.quoted = quoted ?? input
    }

    var testDescription: String { "\"\(self.quoted)\" -> \(self.code)" }
}

struct PunycodeCase: Sendable, CustomTestStringConvertible {
    let name: String
    let unicode: String
    let encoded: String

    init(_ name: String, _ unicode: String, _ encoded: String) {
        self.name = name
        self.unicode = unicode
        self.encoded = encoded
    }

    var testDescription: String { "\(self.name): \(self.encoded)" }
}

// MARK: - Tables

enum HostPatternTables {
    /// Twenty CJK ideographs: short enough to pass as Unicode, but 64 octets once encoded as `xn--…`.
    static let cjkLabel = String(String.UnicodeScalarView((0..<20).map { Unicode.Scalar(0x4E00 + $0 * 997)! }))

    static let matching: [HostMatchCase] = [
        // OkHttp CertificatePinner semantics.
        HostMatchCase("*.foo.com", "bar.foo.com", true),
        HostMatchCase("*.foo.com", "foo.com", false),
        HostMatchCase("*.foo.com", "a.bar.foo.com", false),
        HostMatchCase("*.foo.com", "bar.foo.com.notfoo.com", false),  // OkHttp #3324
        HostMatchCase("*.foo.com", "barfoo.com", false),
        HostMatchCase("*.foo.com", "bar.notfoo.com", false),
        HostMatchCase("**.foo.com", "foo.com", true),
        HostMatchCase("**.foo.com", "a.foo.com", true),
        HostMatchCase("**.foo.com", "a.b.foo.com", true),
        HostMatchCase("**.foo.com", "a.b.c.d.e.foo.com", true),
        HostMatchCase("**.foo.com", "notfoo.com", false),
        HostMatchCase("**.foo.com", "foo.com.evil.com", false),
        HostMatchCase("**.foo.com", "foo.co", false),
        HostMatchCase("foo.com", "foo.com", true),
        HostMatchCase("foo.com", "www.foo.com", false),
        HostMatchCase("foo.com", "fo.com", false),
        HostMatchCase("foo.com", "foo.com.au", false),
        HostMatchCase("*.com", "example.com", true),
        HostMatchCase("*.com", "a.example.com", false),
        HostMatchCase("*.com", "com", false),
        HostMatchCase("**.com", "com", true),
        // Deep labels.
        HostMatchCase("**.a.b.c.d.e.example.com", "x.y.z.a.b.c.d.e.example.com", true),
        HostMatchCase("*.a.b.c.example.com", "z.a.b.c.example.com", true),
        HostMatchCase("*.a.b.c.example.com", "z.b.c.example.com", false),
        // Case.
        HostMatchCase("www.example.com", "WWW.Example.COM", true),
        HostMatchCase("WWW.EXAMPLE.COM", "www.example.com", true),
        HostMatchCase("*.Example.COM", "API.example.com", true),
        HostMatchCase("**.EXAMPLE.com", "Example.Com", true),
        // IDN: Unicode and punycode spellings are the same host.
        HostMatchCase("bücher.example", "xn--bcher-kva.example", true),
        HostMatchCase("xn--bcher-kva.example", "bücher.example", true),
        HostMatchCase("XN--BCHER-KVA.example", "BÜCHER.example", true),
        HostMatchCase("*.bücher.example", "www.xn--bcher-kva.example", true),
        HostMatchCase("**.xn--bcher-kva.example", "shop.bücher.example", true),
        HostMatchCase("münchen.de", "xn--mnchen-3ya.de", true),
        HostMatchCase("bucher.example", "bücher.example", false),
        HostMatchCase("例え.テスト", "xn--r8jz45g.xn--zckzah", true),
        // Fullwidth letters and the fullwidth full stop map to ASCII (NFKC).
        HostMatchCase("example.com", "ｅｘａｍｐｌｅ．ｃｏｍ", true),
        HostMatchCase("*.example.com", "ＡＰＩ.example.com", true),
        HostMatchCase("ｅｘａｍｐｌｅ.com", "example.com", true),
        // Trailing dot on the host and on the pattern.
        HostMatchCase("example.com", "example.com.", true),
        HostMatchCase("example.com.", "example.com", true),
        HostMatchCase("example.com.", "example.com.", true),
        HostMatchCase("*.example.com", "a.example.com.", true),
        HostMatchCase("**.example.com.", "example.com", true),
        HostMatchCase("example.com", "example.com..", false),
        // IP literals: exact only.
        HostMatchCase("127.0.0.1", "127.0.0.1", true),
        HostMatchCase("127.0.0.1", "127.0.0.2", false),
        HostMatchCase("127.0.0.1", "127.0.0.1.", true),
        HostMatchCase("127.0.0.1", "127.1", false),
        HostMatchCase("127.0.0.1", "2130706433", false),
        HostMatchCase("::1", "[::1]", true),
        HostMatchCase("[::1]", "::1", true),
        HostMatchCase("[::1]", "0:0:0:0:0:0:0:1", true),
        HostMatchCase("[2001:DB8::1]", "2001:db8:0:0:0:0:0:1", true),
        HostMatchCase("2001:db8::1", "2001:db8::2", false),
        HostMatchCase("**.com", "127.0.0.1", false),
        HostMatchCase("*.com", "::1", false),
        // Hosts that cannot be canonicalized never match.
        HostMatchCase("example.com", "example.com:443", false),
        HostMatchCase("example.com", "user@example.com", false),
        HostMatchCase("example.com", " example.com", false),
        HostMatchCase("example.com", "example.com/", false),
        HostMatchCase("*.example.com", "a..example.com", false),
        HostMatchCase("*.example.com", ".example.com", false),
    ]

    static let canonical: [HostCanonicalCase] = [
        HostCanonicalCase("example.com", "example.com"),
        HostCanonicalCase("WWW.Example.COM", "www.example.com"),
        HostCanonicalCase("example.com.", "example.com"),
        HostCanonicalCase("under_score-and-hyphen.example", "under_score-and-hyphen.example"),
        HostCanonicalCase("localhost", "localhost"),
        HostCanonicalCase("1.2.example.com", "1.2.example.com"),
        HostCanonicalCase("0x.com", "0x.com"),
        HostCanonicalCase("bücher.example", "xn--bcher-kva.example"),
        HostCanonicalCase("München.DE", "xn--mnchen-3ya.de"),
        HostCanonicalCase("XN--MNCHEN-3YA.de", "xn--mnchen-3ya.de"),
        HostCanonicalCase("ß.de", "xn--zca.de"),
        HostCanonicalCase("例え。テスト", "xn--r8jz45g.xn--zckzah"),
        HostCanonicalCase("ｅｘａｍｐｌｅ．ｃｏｍ", "example.com"),
        HostCanonicalCase("ＥＸＡＭＰＬＥ.com", "example.com"),
        HostCanonicalCase(String(repeating: "a", count: 63) + ".com", String(repeating: "a", count: 63) + ".com"),
        HostCanonicalCase("127.0.0.1", "127.0.0.1"),
        HostCanonicalCase("0.0.0.0", "0.0.0.0"),
        HostCanonicalCase("255.255.255.255.", "255.255.255.255"),
        HostCanonicalCase("１２７.0.0.1", "127.0.0.1"),
        HostCanonicalCase("::1", "::1"),
        HostCanonicalCase("[::1]", "::1"),
        HostCanonicalCase("[::]", "::"),
        HostCanonicalCase("0:0:0:0:0:0:0:0", "::"),
        HostCanonicalCase("1::", "1::"),
        HostCanonicalCase("[2001:DB8:0:0:0:0:0:1]", "2001:db8::1"),
        HostCanonicalCase("2001:0db8:0000:0000:0000:ff00:0042:8329", "2001:db8::ff00:42:8329"),
        HostCanonicalCase("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        HostCanonicalCase("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        HostCanonicalCase("2001:db8:0:0:1:0:0:0", "2001:db8:0:0:1::"),
        HostCanonicalCase("::ffff:192.0.2.1", "::ffff:c000:201"),
    ]

    static let hostErrors: [HostErrorCase] = [
        HostErrorCase("", .empty),
        HostErrorCase("a..b", .emptyLabel),
        HostErrorCase(".example.com", .emptyLabel),
        HostErrorCase("example.com..", .emptyLabel),
        HostErrorCase(".", .emptyLabel),
        HostErrorCase(String(repeating: "a", count: 64) + ".com", .labelTooLong),
        HostErrorCase(String(repeating: "ü", count: 60) + ".com", .labelTooLong),
        HostErrorCase(cjkLabel + ".com", .labelTooLong),  // 20 code points, 64 octets once punycode-encoded
        HostErrorCase(
            Array(repeating: String(repeating: "a", count: 63), count: 4).joined(separator: "."),
            .nameTooLong
        ),
        HostErrorCase("exa%6Dple.com", .percentEncoding),
        HostErrorCase("fe80::1%eth0", .percentEncoding),
        HostErrorCase("user@example.com", .userInfo),
        HostErrorCase("example.com＠evil.com", .userInfo),  // fullwidth commercial at, mapped by NFKC
        HostErrorCase("example.com:443", .urlComponent),
        HostErrorCase("https://example.com", .urlComponent),
        HostErrorCase("example.com/path", .urlComponent),
        HostErrorCase("example.com\\evil.com", .urlComponent, quoted: "example.com\\\\evil.com"),
        HostErrorCase("example.com?q", .urlComponent),
        HostErrorCase("example.com#f", .urlComponent),
        HostErrorCase("1.2.3.4:80", .urlComponent),
        HostErrorCase("[::1]:443", .urlComponent),
        HostErrorCase(" example.com", .whitespaceOrControl),
        HostErrorCase("exa\tmple.com", .whitespaceOrControl, quoted: "exa\\u{9}mple.com"),
        HostErrorCase("example.com\n", .whitespaceOrControl, quoted: "example.com\\u{A}"),
        HostErrorCase("exa\u{200B}mple.com", .whitespaceOrControl, quoted: "exa\\u{200B}mple.com"),
        HostErrorCase("\u{202E}moc.example", .whitespaceOrControl, quoted: "\\u{202E}moc.example"),
        HostErrorCase("exam\u{00AD}ple.com", .whitespaceOrControl, quoted: "exam\\u{AD}ple.com"),
        // NBSP maps to a space under NFKC.
        HostErrorCase("exa\u{00A0}mple.com", .whitespaceOrControl, quoted: "exa\\u{A0}mple.com"),
        HostErrorCase("exa$mple.com", .invalidCharacter),
        HostErrorCase("*.example.com", .invalidCharacter),
        HostErrorCase("ex☃.com", .invalidCharacter),
        HostErrorCase("a[b].com", .invalidCharacter),
        HostErrorCase("2130706433", .invalidIPv4),
        HostErrorCase("127.1", .invalidIPv4),
        HostErrorCase("0x7f.0.0.1", .invalidIPv4),
        HostErrorCase("0x7f000001", .invalidIPv4),
        HostErrorCase("0X7F.0.0.1", .invalidIPv4),
        HostErrorCase("a.0XFF", .invalidIPv4),
        HostErrorCase("A.0x", .invalidIPv4),
        HostErrorCase("0177.0.0.1", .invalidIPv4),
        HostErrorCase("127.0.0.01", .invalidIPv4),
        HostErrorCase("1.2.3.4.5", .invalidIPv4),
        HostErrorCase("256.1.1.1", .invalidIPv4),
        HostErrorCase("example.123", .invalidIPv4),
        HostErrorCase("1.2.3.0x4", .invalidIPv4),
        HostErrorCase("１２７.1", .invalidIPv4),  // fullwidth digits map to ASCII digits first
        HostErrorCase("[example.com]", .invalidIPv6),
        HostErrorCase("[1.2.3.4]", .invalidIPv6),
        HostErrorCase("[::1", .invalidIPv6),
        HostErrorCase("1::2::3", .invalidIPv6),
        HostErrorCase("12345::1", .invalidIPv6),
        HostErrorCase("1:2:3:4:5:6:7:8:9", .invalidIPv6),
        HostErrorCase("1:2:3:4:5:6:7", .invalidIPv6),
        HostErrorCase("::ffff:1.2.3.04", .invalidIPv6),
    ]

    static let patternErrors: [HostErrorCase] = [
        HostErrorCase("", .empty),
        HostErrorCase("a*.example.com", .misplacedWildcard),
        HostErrorCase("*example.com", .misplacedWildcard),
        HostErrorCase("example.*.com", .misplacedWildcard),
        HostErrorCase("example.com*", .misplacedWildcard),
        HostErrorCase("*", .misplacedWildcard),
        HostErrorCase("**", .misplacedWildcard),
        HostErrorCase("*.*.com", .misplacedWildcard),
        HostErrorCase("**.*.com", .misplacedWildcard),
        HostErrorCase("***.x.com", .misplacedWildcard),
        HostErrorCase("*.", .wildcardWithoutBase),
        HostErrorCase("**.", .wildcardWithoutBase),
        HostErrorCase("*..com", .emptyLabel),
        HostErrorCase("*.example.com..", .emptyLabel),
        HostErrorCase("a..b", .emptyLabel),
        HostErrorCase(".example.com", .emptyLabel),
        HostErrorCase("*.0.0.1", .wildcardOverIPAddress),
        HostErrorCase("**.127.0.0.1", .wildcardOverIPAddress),
        HostErrorCase("*.1", .wildcardOverIPAddress),
        HostErrorCase("*.[::1]", .wildcardOverIPAddress),
        HostErrorCase("*.::1", .wildcardOverIPAddress),
        HostErrorCase("*." + String(repeating: "a", count: 64) + ".com", .labelTooLong),
        HostErrorCase("%2A.example.com", .percentEncoding),
        HostErrorCase("user@example.com", .userInfo),
        HostErrorCase("example.com:443", .urlComponent),
        HostErrorCase("https://example.com", .urlComponent),
        HostErrorCase("*.example.com/", .urlComponent),
        HostErrorCase("*.exa mple.com", .whitespaceOrControl),
        HostErrorCase(" *.example.com", .whitespaceOrControl),
        HostErrorCase("*.example.com\r\n", .whitespaceOrControl, quoted: "*.example.com\\u{D}\\u{A}"),
        HostErrorCase("*.exa$mple.com", .invalidCharacter),
        HostErrorCase("127.1", .invalidIPv4),
        HostErrorCase("[example.com]", .invalidIPv6),
    ]

    /// RFC 3492 section 7.1 sample strings, plus well-known labels.
    static let punycode: [PunycodeCase] = [
        PunycodeCase(
            "(A) Arabic (Egyptian)",
            "\u{644}\u{64A}\u{647}\u{645}\u{627}\u{628}\u{62A}\u{643}\u{644}\u{645}\u{648}\u{634}\u{639}\u{631}"
                + "\u{628}\u{64A}\u{61F}",
            "egbpdaj6bu4bxfgehfvwxn"
        ),
        PunycodeCase(
            "(B) Chinese (simplified)",
            "\u{4ED6}\u{4EEC}\u{4E3A}\u{4EC0}\u{4E48}\u{4E0D}\u{8BF4}\u{4E2D}\u{6587}",
            "ihqwcrb4cv8a8dqg056pqjye"
        ),
        PunycodeCase(
            "(C) Chinese (traditional)",
            "\u{4ED6}\u{5011}\u{7232}\u{4EC0}\u{9EBD}\u{4E0D}\u{8AAA}\u{4E2D}\u{6587}",
            "ihqwctvzc91f659drss3x8bo0yb"
        ),
        PunycodeCase(
            "(D) Czech",
            "Pro\u{10D}prost\u{11B}nemluv\u{ED}\u{10D}esky",
            "Proprostnemluvesky-uyb24dma41a"
        ),
        PunycodeCase(
            "(E) Hebrew",
            "\u{5DC}\u{5DE}\u{5D4}\u{5D4}\u{5DD}\u{5E4}\u{5E9}\u{5D5}\u{5D8}\u{5DC}\u{5D0}\u{5DE}\u{5D3}\u{5D1}"
                + "\u{5E8}\u{5D9}\u{5DD}\u{5E2}\u{5D1}\u{5E8}\u{5D9}\u{5EA}",
            "4dbcagdahymbxekheh6e0a7fei0b"
        ),
        PunycodeCase("(L) 3<nen>B<gumi><kinpachi><sensei>", "3年B組金八先生", "3B-ww4c5e180e575a65lsy2b"),
        PunycodeCase("(O) <hitotsu><yane><no><shita>2", "ひとつ屋根の下2", "2-u9tlzr9756bt3uc0v"),
        PunycodeCase("(Q) <pafii>de<runba>", "パフィーdeルンバ", "de-jg4avhby1noc0d"),
        PunycodeCase("(R) <sono><supiido><de>", "そのスピードで", "d9juau41awczczp"),
        PunycodeCase("(S) -> $1.00 <-", "-> $1.00 <-", "-> $1.00 <--"),
        PunycodeCase("bücher", "bücher", "bcher-kva"),
        PunycodeCase("münchen", "münchen", "mnchen-3ya"),
        PunycodeCase("ß", "ß", "zca"),
    ]
}

// MARK: - Tests

@Suite("Host patterns")
struct HostPatternTests {
    @Test("pattern matching", arguments: HostPatternTables.matching)
    func matching(_ row: HostMatchCase) throws {
        let pattern = try HostPattern(row.pattern)
        #expect(pattern.matches(row.host) == row.matches)
        // The matcher agrees with the pattern.
        let matcher = HostMatcher([(pattern, 1)])
        #expect((matcher.match(row.host) != nil) == row.matches)
        // And so does the fast path on the canonical host.
        if let canonical = try? HostName.canonicalize(row.host) {
            #expect(pattern.matches(canonicalHost: canonical) == row.matches)
            #expect((matcher.match(canonicalHost: canonical) != nil) == row.matches)
        }
    }

    @Test("canonical host names", arguments: HostPatternTables.canonical)
    func canonicalization(_ row: HostCanonicalCase) throws {
        let canonical = try HostName.canonicalize(row.input)
        #expect(canonical == row.canonical)
        // Canonicalization is idempotent.
        #expect(try HostName.canonicalize(canonical) == canonical)
        // An exact pattern built from the input has the canonical base.
        #expect(try HostPattern.exact(row.input).base == row.canonical)
        #expect(try HostPattern(row.input) == HostPattern.exact(row.canonical))
    }

    @Test("refused host names", arguments: HostPatternTables.hostErrors)
    func hostErrors(_ row: HostErrorCase) throws {
        let error = #expect(throws: HostPatternError.self) {
            try HostName.canonicalize(row.input)
        }
        #expect(error?.code == row.code)
        #expect(error?.input == row.input)
        #expect(error?.isPattern == false)
        #expect(error?.description.hasPrefix("invalid host \"\(row.quoted)\": ") == true)
        // A refused host matches nothing.
        #expect(try HostPattern("**.com").matches(row.input) == false)
    }

    @Test("refused host patterns", arguments: HostPatternTables.patternErrors)
    func patternErrors(_ row: HostErrorCase) {
        let error = #expect(throws: HostPatternError.self) {
            try HostPattern(row.input)
        }
        #expect(error?.code == row.code)
        #expect(error?.input == row.input)
        #expect(error?.isPattern == true)
        #expect(error?.description.hasPrefix("invalid host pattern \"\(row.quoted)\": ") == true)
    }

    @Test("error descriptions name the input and the rule")
    func errorDescriptions() {
        let error = #expect(throws: HostPatternError.self) {
            try HostPattern("a*.example.com")
        }
        #expect(
            error?.description
                == "invalid host pattern \"a*.example.com\": an asterisk is only allowed as the whole leftmost label "
                + "(\"*.\" or \"**.\")"
        )
        #expect(error?.code.description == "misplacedWildcard")
    }

    @Test("exact patterns do not read wildcards")
    func exactFactory() throws {
        #expect(try HostPattern.exact("Example.COM.") == HostPattern("example.com"))
        #expect(try HostPattern.exact("Example.COM.").kind == .exact)
        let error = #expect(throws: HostPatternError.self) {
            try HostPattern.exact("*.example.com")
        }
        #expect(error?.code == .invalidCharacter)
    }

    @Test("kind, base and canonical description")
    func parsedForm() throws {
        let single = try HostPattern("*.EXAMPLE.com.")
        #expect(single.kind == .singleLabelWildcard)
        #expect(single.base == "example.com")
        #expect(single.description == "*.example.com")

        let any = try HostPattern("**.Bücher.example")
        #expect(any.kind == .anyDepthWildcard)
        #expect(any.base == "xn--bcher-kva.example")
        #expect(any.description == "**.xn--bcher-kva.example")

        let ip = try HostPattern("[2001:DB8::0:1]")
        #expect(ip.kind == .exact)
        #expect(ip.description == "2001:db8::1")

        #expect(try HostPattern("bücher.example") == HostPattern("xn--bcher-kva.example"))
        #expect(try HostPattern("*.example.com") != HostPattern("**.example.com"))
    }

    @Test("specificity orders exact, deeper bases, and single-label wildcards first")
    func specificity() throws {
        let ordered = try [
            "a.b.example.com", "example.com", "com", "*.a.b.example.com", "**.a.b.example.com", "*.b.example.com",
            "**.b.example.com", "*.example.com", "**.example.com", "*.com", "**.com",
        ].map { try HostPattern($0) }
        for (higher, lower) in zip(ordered, ordered.dropFirst()) {
            if higher.kind == .exact && lower.kind == .exact {
                continue  // exact patterns never compete for the same host
            }
            #expect(higher.specificity > lower.specificity, "\(higher) should be more specific than \(lower)")
        }
        #expect(try HostPattern("com").specificity > HostPattern("*.a.b.c.d.example.com").specificity)
    }

    @Test("IP addresses")
    func ipAddresses() throws {
        for address in ["127.0.0.1", "0.0.0.0", "255.255.255.255", "::1", "::", "2001:db8::1", "::ffff:c000:201"] {
            #expect(HostName.isIPAddress(address), "\(address)")
        }
        for name in ["example.com", "localhost", "127.1", "1.2.3.4.5", "[::1]", "256.0.0.1", "01.2.3.4", "", "::g"] {
            #expect(!HostName.isIPAddress(name), "\(name)")
        }
        // No wildcard pattern matches an IP address, even when handed to the fast path.
        for pattern in ["*.com", "**.com", "*.example.com", "**.example.com"] {
            let parsed = try HostPattern(pattern)
            for host in ["127.0.0.1", "::1", "[::1]", "10.0.0.1."] {
                #expect(!parsed.matches(host), "\(pattern) vs \(host)")
                #expect(!parsed.matches(canonicalHost: host), "\(pattern) vs \(host)")
            }
        }
    }

    @Test("the fast path expects canonical hosts")
    func fastPathIsByteExact() throws {
        let pattern = try HostPattern("*.example.com")
        #expect(pattern.matches(canonicalHost: "www.example.com"))
        #expect(!pattern.matches(canonicalHost: "WWW.example.com."))
        #expect(!pattern.matches(canonicalHost: ".example.com"))
        let any = try HostPattern("**.example.com")
        #expect(!any.matches(canonicalHost: ".example.com"))
        #expect(!any.matches(canonicalHost: "xexample.com"))
    }
}

@Suite("Punycode (RFC 3492)")
struct PunycodeTests {
    @Test("sample strings encode and decode", arguments: HostPatternTables.punycode)
    func roundTrip(_ row: PunycodeCase) {
        #expect(Punycode.encode(row.unicode) == row.encoded)
        let decoded = Punycode.decode(row.encoded)
        #expect(decoded.map { Array($0.unicodeScalars) } == Array(row.unicode.unicodeScalars))
    }

    @Test("decoding is case-insensitive for digits")
    func decodeUpperCase() {
        #expect(Punycode.decode("BCHER-KVA").map { Array($0.unicodeScalars) } == Array("BüCHER".unicodeScalars))
        #expect(Punycode.decode("MNCHEN-3YA").map { Array($0.unicodeScalars) } == Array("MüNCHEN".unicodeScalars))
    }

    @Test("invalid input does not decode", arguments: ["bcher-kv!", "bcher-kv", "ü", "99999999999999999999"])
    func invalid(_ input: String) {
        #expect(Punycode.decode(input) == nil)
    }
}

@Suite("Host matcher")
struct HostMatcherTests {
    static let entries: [(String, String)] = [
        ("api.example.com", "exact"),
        ("*.example.com", "single"),
        ("**.example.com", "any"),
        ("**.a.example.com", "deep-any"),
        ("*.com", "tld-single"),
        ("**.com", "tld-any"),
        ("127.0.0.1", "loopback"),
        ("[::1]", "loopback6"),
    ]

    static func makeMatcher() throws -> HostMatcher<String> {
        HostMatcher(try entries.map { (try HostPattern($0.0), $0.1) })
    }

    @Test(
        "the most specific pattern wins",
        arguments: [
            ("api.example.com", "exact"),
            ("API.Example.COM.", "exact"),
            ("www.example.com", "single"),
            ("example.com", "any"),  // "**.example.com" (deeper base) beats "*.com"
            ("x.y.example.com", "any"),
            ("a.example.com", "deep-any"),  // "**.a.example.com" (deeper base) beats "*.example.com"
            ("b.a.example.com", "deep-any"),
            ("other.com", "tld-single"),  // "*." beats "**." over the same base
            ("x.other.com", "tld-any"),
            ("com", "tld-any"),
            ("127.0.0.1", "loopback"),
            ("::1", "loopback6"),
            ("[0:0::1]", "loopback6"),
            ("example.org", nil),
            ("127.0.0.2", nil),
            ("api.example.com:443", nil),
            ("", nil),
        ] as [(String, String?)]
    )
    func mostSpecific(host: String, expected: String?) throws {
        let matcher = try Self.makeMatcher()
        let result = matcher.match(host)
        #expect(result?.value == expected)
        // The winner is the pattern of highest specificity among all patterns that match.
        let best = matcher.patterns.filter { $0.matches(host) }.max { $0.specificity < $1.specificity }
        #expect(result?.pattern == best)
    }

    @Test("an empty matcher matches nothing")
    func empty() {
        let matcher = HostMatcher<Int>()
        #expect(matcher.isEmpty)
        #expect(matcher.count == 0)
        #expect(matcher.patterns.isEmpty)
        #expect(matcher.match("example.com") == nil)
    }

    @Test("duplicates replace earlier values and keep their place")
    func duplicates() throws {
        var matcher = HostMatcher([
            (try HostPattern("*.example.com"), 1),
            (try HostPattern("example.org"), 2),
            (try HostPattern("*.EXAMPLE.com."), 3),
        ])
        #expect(matcher.count == 2)
        #expect(matcher.patterns.map(\.description) == ["*.example.com", "example.org"])
        #expect(matcher.match("a.example.com")?.value == 3)
        matcher.insert(4, for: try HostPattern("example.org"))
        #expect(matcher.count == 2)
        #expect(matcher.match("example.org")?.value == 4)
        matcher.insert(5, for: try HostPattern("**.example.com"))
        #expect(matcher.count == 3)
        #expect(!matcher.isEmpty)
        #expect(matcher.match("example.com")?.value == 5)
        #expect(matcher.match("a.example.com")?.value == 3)
    }

    @Test("10,000 patterns still match correctly")
    func manyPatterns() throws {
        var matcher = HostMatcher<Int>()
        for index in 0..<10_000 {
            switch index % 3 {
            case 0: matcher.insert(index, for: try HostPattern("host\(index).example.com"))
            case 1: matcher.insert(index, for: try HostPattern("*.svc\(index).example.net"))
            default: matcher.insert(index, for: try HostPattern("**.zone\(index).example.org"))
            }
        }
        #expect(matcher.count == 10_000)
        #expect(matcher.match("host0.example.com")?.value == 0)
        #expect(matcher.match("host9999.example.com")?.value == 9_999)
        #expect(matcher.match("a.svc1.example.net")?.value == 1)
        #expect(matcher.match("svc1.example.net") == nil)
        #expect(matcher.match("a.b.svc1.example.net") == nil)
        #expect(matcher.match("zone2.example.org")?.value == 2)
        #expect(matcher.match("a.b.c.zone9998.example.org")?.value == 9_998)
        #expect(matcher.match("host1.example.com") == nil)
        #expect(matcher.match("host10000.example.com") == nil)
        #expect(matcher.match("example.com") == nil)
        for index in stride(from: 0, to: 10_000, by: 7) {
            let host: String
            switch index % 3 {
            case 0: host = "host\(index).example.com"
            case 1: host = "x.svc\(index).example.net"
            default: host = "y.z.zone\(index).example.org"
            }
            #expect(matcher.match(canonicalHost: host)?.value == index)
        }
    }
}
