import Foundation
import Testing

@testable import BulwarkPolicy

/// Issue 16, defect 13: event URLs keep their paths by default; ``PathRedactingEventMonitor`` drops them from every
/// URL an event carries.
@Suite("URL paths in security events")
struct EventURLRedactionTests {
    static let token = "RESET-TOKEN-9f8e7d"

    /// The events of a refused and a followed redirect, and of the credential store, whose URLs hold a token in their
    /// paths.
    static func events() throws -> [SecurityEvent] {
        let from = try #require(URL(string: "https://a.example/reset/\(Self.token)?q=1"))
        var events: [SecurityEvent] = []
        let policy = try RedirectPolicy(allowing: ["a.example"])
        let locations = ["https://evil.example/steal/\(Self.token)", "/next/\(Self.token)/", "https://a.example:8443/"]
        for location in locations {
            let hop = RedirectHop(
                request: RedirectRequest(method: "GET", url: from, headers: [], body: .none),
                status: 302,
                locations: [location],
                chain: RedirectChain(startingAt: from)
            )
            events += RedirectRecord(url: from, status: 302, decision: policy.decide(hop)).securityEvents()
        }
        let inside = try #require(URL(string: "https://a.example/v1/\(Self.token)"))
        events.append(.credentialsLeftBehind(headers: ["authorization"], from: from, to: inside))
        events.append(.requestRefusedOutOfScope(url: inside, host: "a.example"))
        return events
    }

    /// Every text an event shows.
    static func texts(of event: SecurityEvent) -> [String] {
        [event.description, event.message] + event.details.values.map(\.description)
    }

    @Test("by default the path stays (documented): the token is visible")
    func pathsKeptByDefault() throws {
        let events = try Self.events()
        #expect(events.count >= 5)
        #expect(events.contains { Self.texts(of: $0).contains { $0.contains(Self.token) } })
        // Queries never appear.
        #expect(!events.contains { Self.texts(of: $0).contains { $0.contains("q=1") } })
    }

    @Test("PathRedactingEventMonitor removes every path from every URL, keeping scheme, host and port")
    func pathsRedacted() throws {
        let recorder = RecordingEventMonitor()
        let monitor = PathRedactingEventMonitor(recorder)
        let events = try Self.events()
        for event in events { monitor.record(event) }
        let redacted = recorder.events
        #expect(redacted.count == events.count)
        for (original, event) in zip(events, redacted) {
            for text in Self.texts(of: event) {
                #expect(!text.contains(Self.token), "\(text)")
                #expect(!text.contains("/reset"), "\(text)")
            }
            #expect(event.kind == original.kind)
            #expect(event.reason == original.reason)
            #expect(event.host == original.host)
            #expect(event.time == original.time)
            #expect(Set(event.details.keys) == Set(original.details.keys))
        }
        let texts = redacted.flatMap(Self.texts(of:))
        #expect(texts.contains { $0.contains("https://a.example/…") })
        #expect(texts.contains { $0.contains("https://evil.example/…") })
        #expect(texts.contains { $0.contains("https://a.example:8443/") }, "a bare / is kept")
    }

    @Test("the path of URLs in free text: punctuation after a URL stays, a bare slash stays")
    func freeText() {
        let text = "from https://a.example/x/y: to http://[::1]:8080/a, then https://b.example/ and https://c.example"
        #expect(
            SecurityEvent.redactingPaths(inText: text, placeholder: "/…")
                == "from https://a.example/…: to http://[::1]:8080/…, then https://b.example/ and https://c.example"
        )
        #expect(SecurityEvent.redactingPath(ofURLText: "/relative/TOKEN", placeholder: "/…") == "/…")
        let absolute = SecurityEvent.redactingPath(ofURLText: "https://a.example:1/p", placeholder: "/…")
        #expect(absolute == "https://a.example:1/…")
        #expect(SecurityEvent.redactingPath(ofURLText: "", placeholder: "/…") == "")
    }
}
