import Bulwark
@_spi(Benchmarks) import BulwarkEncoding

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

// MARK: - Vector paths (issue 24, item 5)

extension EncodeBenchmark {
    /// The name of the vector path the encoders use in this process (`BULWARK_VECTOR_ENCODING` takes the same names).
    static var selectedPath: String { VectorPath.selected.name }

    /// The encoders measured on each vector path, on the 10 % input: name, JSON key, encoder.
    static let pathEncoders: [(name: String, key: String, encode: @Sendable (String, VectorPath) -> String)] = [
        ("text", "text", { HTMLEncoder.text($0, path: $1) }),
        ("attribute", "attribute", { HTMLEncoder.attribute($0, path: $1) }),
        ("JavaScript", "javascript", { JavaScriptEncoder.stringLiteral($0, path: $1) }),
        ("URL component", "url_component", { URLComponentEncoder.encode($0, path: $1) }),
    ]

    /// The `encode-paths` row: `HTMLEncoder.text`, `HTMLEncoder.attribute`, `JavaScriptEncoder.stringLiteral` and
    /// `URLComponentEncoder.encode` on the 10 % input on every vector path this processor has (AVX-512 VBMI, AVX2,
    /// SSE2, NEON, the Swift engine alone), rounds interleaved path by path; medians in GB/s. The goal is that of
    /// issue 24: every encoder at 1 GB/s or more on the path used with `BULWARK_NO_VECTOR_ENCODING=1`.
    func pathsResult(rounds: Int, seconds: Double) -> BenchResult {
        let paths = VectorPath.allCases.filter(\.isSupported).sorted { $0.rawValue > $1.rawValue }
        var samples: [VectorPath: [String: [Double]]] = [:]
        for round in 0..<rounds {
            // Alternate the order, so that no path always runs in the same phase of a round.
            for path in round % 2 == 0 ? paths : paths.reversed() {
                for encoder in Self.pathEncoders {
                    let rate = Self.gigabytesPerSecond(self.input, seconds: seconds) { encoder.encode($0, path) }
                    samples[path, default: [:]][encoder.key, default: []].append(rate)
                }
            }
        }
        let portable = VectorPath.choose(environment: ["BULWARK_NO_VECTOR_ENCODING": "1"])
        func rate(_ path: VectorPath, _ key: String) -> Double { median(samples[path]![key]!) }
        func rounded(_ value: Double) -> Double { (value * 100).rounded() / 100 }
        var result = BenchResult(name: "encode-paths", unit: "GB/s", bulwark: nil, ahc: nil)
        let slowest = Self.pathEncoders.map { rate(portable, $0.key) }.min()!
        result.bulwark = slowest
        result.goal = "≥ 1 GB/s (text, attribute, JavaScript, URL component) without the AVX-512 kernel"
        result.met = slowest >= 1
        result.extra = [
            ("input", .string("1 MiB of text, ~1 byte in 10 escaped (tags, quotes, &, non-ASCII)")),
            ("path_without_avx512", .string(portable.name)),
            ("paths", .array(paths.map { .string($0.name) })),
        ]
        for path in paths {
            for encoder in Self.pathEncoders {
                result.extra.append(
                    ("bulwark_\(path.name)_\(encoder.key)_gbps", .number(rounded(rate(path, encoder.key))))
                )
            }
        }
        let table = paths.map { path in
            "\(path.name): "
                + Self.pathEncoders.map { "\($0.name) \(format(rate(path, $0.key)))" }.joined(separator: ", ")
        }
        result.details =
            "the slowest encoder on the path used without the AVX-512 kernel (\(portable.name)); GB/s per path: "
            + table.joined(separator: "; ")
        for line in table { log("   encode-paths: \(line)") }
        return result
    }
}
