import Bulwark

/// Output encoder throughput on 1 MiB of user-generated-looking text in which about one byte in ten needs escaping
/// as HTML text (tags, quotes, ampersands, some non-ASCII), on prose and on plain ASCII: `HTMLEncoder.text(_:)`,
/// `HTMLEncoder.attribute(_:)`, `JavaScriptEncoder.stringLiteral(_:)` and `URLComponentEncoder.encode(_:)`. Input
/// bytes per second.
struct EncodeBenchmark {
    static let snippet = "Café review: the <b>best</b> croissant & \"flat white\" in town, isn't it? 5 > 3 — été. "

    /// Prose: one apostrophe in ~140 bytes.
    static let proseSnippet =
        "The committee's report, published on Monday, recommends that the city invest in cycle lanes and better bus services over the next five years. "

    let input: String
    let plain: String
    let prose: String

    init(bytes: Int = 1 << 20) {
        var input = ""
        while input.utf8.count < bytes { input += Self.snippet }
        self.input = input
        self.plain = String(repeating: "plain ascii text without any markup at all ", count: bytes / 43)
        var prose = ""
        while prose.utf8.count < bytes { prose += Self.proseSnippet }
        self.prose = prose
    }

    /// The encoder does what it says on a sample, so the timing is of real work.
    func verify() throws {
        let got = HTMLEncoder.text("<a href=\"x\">Tom & Jerry's</a>")
        let want = "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;"
        guard got == want else { throw BenchError("encode-html: HTMLEncoder.text gave \(got), expected \(want)") }
        let script = JavaScriptEncoder.stringLiteral("</script>'\u{2028}")
        guard script == "\\x3C/script\\x3E\\x27\\u2028" else {
            throw BenchError("encode-html: JavaScriptEncoder.stringLiteral gave \(script)")
        }
        let component = URLComponentEncoder.encode("a b&c")
        guard component == "a%20b%26c" else {
            throw BenchError("encode-html: URLComponentEncoder.encode gave \(component)")
        }
        let encoded = HTMLEncoder.text(self.input)
        guard !encoded.contains("<"), !encoded.contains("\""), encoded.utf8.count > self.input.utf8.count else {
            throw BenchError("encode-html: the 1 MiB input was not escaped")
        }
    }

    /// GB/s (10^9 input bytes per second) over about `seconds`.
    static func gigabytesPerSecond(_ text: String, seconds: Double, _ encode: (String) -> String) -> Double {
        let budget = UInt64(seconds * 1e9)
        let bytes = text.utf8.count
        var total = 0
        var sink = 0
        let start = nowNanos()
        var elapsed: UInt64 = 0
        repeat {
            let encoded = encode(text)
            sink &+= encoded.utf8.count
            total += bytes
            elapsed = nowNanos() - start
        } while elapsed < budget
        blackHole(sink)
        return Double(total) / Double(elapsed)
    }
}
