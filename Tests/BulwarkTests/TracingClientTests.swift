import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import InMemoryTracing
import NIOHTTP1
import Testing
import Tracing
import X509

@Suite("Spans per request and per redirect hop, with the in-memory tracer")
struct TracingClientTests {
    private static func pinnedClient(
        _ server: TestHTTPSServer,
        _ chain: TestChain,
        tracer: InMemoryTracer,
        pinning pinned: Certificate? = nil,
        configure: (inout BulwarkClient.Configuration) -> Void = { _ in }
    ) throws -> BulwarkClient {
        let backup = try CertificateFactory.makeRoot(commonName: "Backup key")
        let pins = try PinSet([
            Pin.publicKey(of: pinned ?? chain.leaf.certificate), Pin.publicKey(of: backup.certificate),
        ])
        return try Harness.client(for: server, evaluator: .publicKeys(pins, roots: .custom([chain.root.certificate]))) {
            $0.tracing = BulwarkClient.TracingOptions(tracer: tracer)
            configure(&$0)
        }
    }

    private static func text(_ attribute: SpanAttribute?) -> String? {
        switch attribute {
        case .string(let text): return text
        case .int64(let number): return String(number)
        case .bool(let flag): return String(flag)
        case nil: return nil
        default: return "\(attribute!)"
        }
    }

    /// Every attribute value of every span, as text.
    private static func allValues(_ spans: [FinishedInMemorySpan]) -> [String] {
        var values: [String] = []
        for span in spans {
            // SpanAttributes is not a Sequence: forEach is its only walk.
            // swift-format-ignore: ReplaceForEachWithForLoop
            span.attributes.forEach { _, attribute in values.append(Self.text(attribute) ?? "") }
            values.append(span.operationName)
            values += span.errors.map { String(describing: $0.error) }
        }
        return values
    }

    @Test("a request span and a child span per hop, with trust, TLS and redirect attributes and nothing secret")
    func spansPerRequestAndHop() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        let tracer = InMemoryTracer()
        let client = try Self.pinnedClient(server, chain, tracer: tracer)
        let path = RedirectHarness.redirect(302, to: "/hello?token=hop-secret")
        var request = BulwarkRequest(url: Harness.url(server, path) + "&session=query-secret")
        request.headers.add(name: "authorization", value: "Bearer header-secret")
        request.headers.add(name: "x-api-key", value: "key-secret")
        let response = try await client.execute(request)
        #expect(String(buffer: try await response.body.collect(upTo: 1 << 20)) == "hello")

        let spans = tracer.finishedSpans
        try #require(spans.count == 3, "\(spans.map(\.operationName))")
        let requestSpan = try #require(spans.first { $0.parentSpanID == nil })
        let hops = spans.filter { $0.parentSpanID == requestSpan.spanID }
        try #require(hops.count == 2)
        #expect(spans.allSatisfy { $0.operationName == "GET" && $0.kind == .client })
        #expect(Set(spans.map(\.traceID)).count == 1)

        let origin = "https://\(Harness.host):\(server.port)"
        #expect(Self.text(requestSpan.attributes.get("http.response.status_code")) == "200")
        #expect(Self.text(requestSpan.attributes.get("bulwark.redirect.count")) == "1")
        #expect(Self.text(requestSpan.attributes.get("url.full")) == origin + "/redirect/302")
        #expect(Self.text(requestSpan.attributes.get("server.address")) == Harness.host)
        #expect(Self.text(requestSpan.attributes.get("server.port")) == String(server.port))
        #expect(requestSpan.status == nil)

        let first = hops[0]
        let second = hops[1]
        #expect(Self.text(first.attributes.get("http.response.status_code")) == "302")
        #expect(Self.text(first.attributes.get("bulwark.redirect.decision")) == "follow")
        #expect(Self.text(first.attributes.get("bulwark.redirect.location")) == origin + "/hello")
        #expect(first.attributes.get("http.request.resend_count") == nil)
        #expect(Self.text(second.attributes.get("http.request.resend_count")) == "1")
        #expect(Self.text(second.attributes.get("url.full")) == origin + "/hello")
        #expect(Self.text(second.attributes.get("http.response.status_code")) == "200")
        #expect(second.attributes.get("bulwark.redirect.decision") == nil)
        for hop in hops {
            #expect(Self.text(hop.attributes.get("bulwark.trust.verdict")) == "trusted")
            #expect(Self.text(hop.attributes.get("bulwark.trust.pin_matched")) == "true")
            #expect(Self.text(hop.attributes.get("tls.protocol.version")) == "1.3")
            #expect(Self.text(hop.attributes.get("network.protocol.version")) == "2")
        }

        // No header value, credential, query or fragment in any span.
        for value in Self.allValues(spans) {
            #expect(!value.contains("secret"), "\(value)")
        }
        // Each hop carried its own span's context to the server.
        let sentSpanIDs = server.requests.map { request in
            request.headers.first { $0.name.lowercased() == InMemoryTracer.spanIDKey }?.value
        }
        #expect(sentSpanIDs == hops.map(\.spanID))
        await client.shutdown()
        try await server.shutdown()
    }

    @Test("a pin mismatch ends the hop span refused and both spans failed with trust_refused")
    func pinMismatchIsTraced() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        let tracer = InMemoryTracer()
        let other = try CertificateFactory.makeRoot(commonName: "Some other key")
        let client = try Self.pinnedClient(server, chain, tracer: tracer, pinning: other.certificate)
        await Harness.expectError(.trustRefused) {
            _ = try await client.execute(BulwarkRequest(url: Harness.url(server, "/hello")))
        }
        let spans = tracer.finishedSpans
        try #require(spans.count == 2)
        let requestSpan = try #require(spans.first { $0.parentSpanID == nil })
        let hop = try #require(spans.first { $0.parentSpanID == requestSpan.spanID })
        #expect(Self.text(hop.attributes.get("bulwark.trust.verdict")) == "refused")
        #expect(Self.text(hop.attributes.get("bulwark.trust.pin_matched")) == "false")
        #expect(Self.text(hop.attributes.get("bulwark.trust.refusal")) != nil)
        for span in spans {
            #expect(Self.text(span.attributes.get("error.type")) == "trust_refused")
            #expect(span.status?.code == .error)
            #expect((span.errors.first?.error as? BulwarkError)?.code == .trustRefused)
        }
        #expect(server.receivedApplicationBytes == 0)
        await client.shutdown()
        try await server.shutdown()
    }

    @Test("a refused redirect is the hop's decision and the request's error")
    func refusedRedirectIsTraced() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        let tracer = InMemoryTracer()
        let client = try Self.pinnedClient(server, chain, tracer: tracer)
        let path = RedirectHarness.redirect(302, to: "https://elsewhere.bulwark.test/next?code=redirect-secret")
        await Harness.expectError(.redirectRefused) {
            _ = try await client.execute(BulwarkRequest(url: Harness.url(server, path)))
        }
        let spans = tracer.finishedSpans
        try #require(spans.count == 2)
        let requestSpan = try #require(spans.first { $0.parentSpanID == nil })
        let hop = try #require(spans.first { $0.parentSpanID == requestSpan.spanID })
        let decision = Self.text(hop.attributes.get("bulwark.redirect.decision")) ?? ""
        #expect(decision.hasPrefix("refuse:"), "\(decision)")
        #expect(Self.text(hop.attributes.get("http.response.status_code")) == "302")
        #expect(hop.attributes.get("bulwark.redirect.location") == nil)
        #expect(Self.text(requestSpan.attributes.get("error.type")) == "redirect_refused")
        #expect(Self.text(requestSpan.attributes.get("bulwark.redirect.count")) == "1")
        for value in Self.allValues(spans) {
            #expect(!value.contains("secret"), "\(value)")
        }
        await client.shutdown()
        try await server.shutdown()
    }

    @Test("without a bootstrapped tracer a client has none and makes no span")
    func noTracerByDefault() throws {
        let configuration = BulwarkClient.Configuration(trust: ServerTrustManager(patterns: []))
        #expect(configuration.tracing.tracer == nil)
        #expect(BulwarkClient.TracingOptions(tracer: nil).tracer == nil)
    }
}
