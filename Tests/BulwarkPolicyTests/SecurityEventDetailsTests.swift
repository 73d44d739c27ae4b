import Foundation
import Testing

@testable import BulwarkPolicy

/// Issue 17: event details are typed values under named keys, with one stable text form for logs.
@Suite("Typed security-event details")
struct SecurityEventDetailsTests {
    /// Every key and its code. The codes are what the tamper-evident log writes: changing one changes the log format.
    @Test("every detail key has the code logs write")
    func keyCodes() {
        let table: [(SecurityEvent.DetailKey, String)] = [
            (.from, "from"), (.to, "to"), (.target, "target"), (.location, "location"), (.status, "status"),
            (.method, "method"), (.reason, "reason"), (.headers, "headers"), (.scheme, "scheme"),
            (.pattern, "pattern"), (.port, "port"), (.ambiguity, "ambiguity"), (.presented, "presented"),
            (.verified, "verified"), (.cached, "cached"), (.certificate, "certificate"),
            (.serialNumber, "serial_number"), (.fingerprint, "fingerprint"), (.revocationMethod, "revocation_method"),
            (.source, "source"),
            (.fetchedFrom, "fetched_from"), (.revocationStatus, "revocation_status"), (.nextUpdate, "next_update"),
            (.revokedAt, "revoked_at"), (.revocationReason, "revocation_reason"),
            (.credentials, "credentials"), (.cookies, "cookies"),
            (.connectionsClosed, "connections_closed"), (.clientIdentities, "client_identities"), (.version, "version"),
            (.expires, "expires"), (.signers, "signers"), (.bytes, "bytes"),
            (.failures, "failures"),
            (.dropped, "dropped"), (.capacity, "capacity"), (.proxy, "proxy"), (.schemes, "schemes"),
            (.sctsCounted, "scts_counted"), (.sctsFound, "scts_found"), (.logOperators, "log_operators"),
            (.ctVerdict, "ct_verdict"),
        ]
        #expect(SecurityEvent.DetailKey.all == table.map(\.0))
        for (key, code) in table {
            #expect(key.code == code)
            #expect(key.description == code)
        }
        #expect(Set(SecurityEvent.DetailKey.all.map(\.code)).count == table.count, "codes are unique")
        #expect(SecurityEvent.urlDetailKeys == [.from, .to, .target, .location])
    }

    @Test("each kind of value reads back through its own accessor only")
    func typedRoundTrips() {
        let text = SecurityEvent.DetailValue.text("https://a.example/x")
        #expect(text.text == "https://a.example/x")
        #expect(text.number == nil && text.list == nil && text.flag == nil)
        #expect(text.description == "https://a.example/x")

        let number = SecurityEvent.DetailValue.number(302)
        #expect(number.number == 302)
        #expect(number.text == nil && number.list == nil && number.flag == nil)
        #expect(number.description == "302")

        let list = SecurityEvent.DetailValue.list(["authorization", "cookie"])
        #expect(list.list == ["authorization", "cookie"])
        #expect(list.text == nil && list.number == nil && list.flag == nil)
        #expect(list.description == "authorization, cookie")

        let lines = SecurityEvent.DetailValue.lines(["sha256/AAAA: CN=a, O=b", "sha256/BBBB: CN=c"])
        #expect(lines.list == ["sha256/AAAA: CN=a, O=b", "sha256/BBBB: CN=c"], "items keep their commas")
        #expect(lines.description == "sha256/AAAA: CN=a, O=b\nsha256/BBBB: CN=c")
        #expect(lines != .list(["sha256/AAAA: CN=a, O=b", "sha256/BBBB: CN=c"]))

        let flag = SecurityEvent.DetailValue.flag(true)
        #expect(flag.flag == true)
        #expect(flag.text == nil && flag.number == nil && flag.list == nil)
        #expect(flag.description == "true")
        #expect(SecurityEvent.DetailValue.flag(false).description == "false")

        let literals: [SecurityEvent.DetailValue] = ["GET", 8443, false]
        #expect(literals == [.text("GET"), .number(8443), .flag(false)])
        #expect(SecurityEvent.DetailValue.list([]).description == "")
        #expect(SecurityEvent.DetailValue.list([]).list == [])
    }

    @Test("details keep their order; setting replaces in place, nil removes; merging appends new keys")
    func orderedDetails() {
        var details: SecurityEvent.Details = [.to: "https://b.example/", .from: "https://a.example/", .status: 301]
        #expect(details.keys == [.to, .from, .status])
        #expect(details.values == ["https://b.example/", "https://a.example/", 301])
        #expect(details.count == 3 && !details.isEmpty)
        details[.from] = "https://c.example/"
        #expect(details.keys == [.to, .from, .status])
        details[.to] = nil
        #expect(details.keys == [.from, .status])
        #expect(details[.to] == nil)
        details[.method] = "GET"
        #expect(details.map(\.key) == [.from, .status, .method])
        let merged = details.merging([.status: 302, .headers: .list(["authorization"])])
        #expect(merged.keys == [.from, .status, .method, .headers])
        #expect(merged[.status]?.number == 302)
        #expect(details[.status]?.number == 301, "merging leaves the original alone")
        #expect(merged != details)
        #expect(SecurityEvent.Details() == [:])
        #expect(SecurityEvent.Details().isEmpty)
        #expect(merged.description == "[from: https://c.example/, status: 302, method: GET, headers: authorization]")
        let reordered: SecurityEvent.Details = [.status: 301, .from: "https://c.example/", .method: "GET"]
        #expect(reordered != details, "order is part of equality")
        #expect(reordered.textByCode == details.textByCode)
    }

    /// The events built in BulwarkPolicy write the same text as when details were `[String: String]`: the
    /// tamper-evident log's records of them do not change.
    @Test("the text form of every policy event is the one logs wrote before details were typed")
    func textFormsUnchanged() throws {
        let from = try #require(URL(string: "https://a.example/login?secret=1"))
        let to = try #require(URL(string: "https://b.example/next"))
        let left = SecurityEvent.credentialsLeftBehind(headers: ["authorization", "cookie"], from: from, to: to)
        #expect(
            left.details.textByCode == [
                "from": "https://a.example/login", "to": "https://b.example/next", "headers": "authorization, cookie",
            ]
        )
        let ambiguous = SecurityEvent.credentialsWithheldForAmbiguousPath(url: to, ambiguity: .emptySegmentBeforeDotDot)
        #expect(
            ambiguous.details.textByCode == [
                "target": "https://b.example/next", "ambiguity": "empty_segment_before_dot_dot",
            ]
        )

        let policy = try RedirectPolicy(allowing: ["**.example.com"])
        let hop = Hops.hop(
            "https://a.example.com/login?secret=1",
            location: "https://b.example.com/next",
            method: "POST"
        )
        let events = RedirectRecord(url: hop.request.url, status: 302, decision: policy.decide(hop)).securityEvents()
        let stripped = try #require(events.first { $0.kind == .credentialStripped })
        #expect(stripped.details[.headers]?.list == ["authorization", "cookie", "proxy-authorization"])
        #expect(
            stripped.details.textByCode == [
                "from": "https://a.example.com/login", "to": "https://b.example.com/next", "status": "302",
                "method": "GET", "headers": "authorization, cookie, proxy-authorization",
            ]
        )
        let followed = try #require(events.last)
        #expect(followed.kind == .redirectFollowed)
        #expect(followed.details[.status]?.number == 302)
        #expect(followed.details[.method]?.text == "GET")

        let downgrade = Hops.hop("https://a.example.com/login", status: 307, location: "http://b.example.com/plain")
        let refused = RedirectRecord(url: downgrade.request.url, status: 307, decision: policy.decide(downgrade))
            .securityEvents()
        #expect(refused.count == 1)
        #expect(
            refused.first?.details.textByCode == [
                "from": "https://a.example.com/login", "to": "http://b.example.com/plain", "status": "307",
                "reason": "scheme_downgrade",
            ]
        )

        let refusal = try #require(
            try HostAllowlistTests.allowlist().decision(for: url("http://api.example.com/login")).refusal
        )
        let event = refusal.securityEvent()
        #expect(event.details[.port]?.number == 80)
        #expect(
            event.details.textByCode == [
                "scheme": "http", "target": "http://api.example.com:80", "pattern": "**.example.com", "port": "80",
            ]
        )
    }

    /// A monitor reads a list as the list the event was built with: no string is split again, so an item that holds
    /// the separator stays whole.
    @Test("a monitor reads a list without splitting strings")
    func monitorReadsLists() {
        struct HeaderCounter: EventMonitor {
            let counts: RecordingEventMonitor
            func record(_ event: SecurityEvent) {
                guard let headers = event.details[.headers]?.list else { return }
                self.counts.record(
                    SecurityEvent(kind: event.kind, message: "\(headers.count)", details: [.headers: .list(headers)])
                )
            }
        }
        let recorder = RecordingEventMonitor()
        let monitor = HeaderCounter(counts: recorder)
        let chain = ["sha256/AAAA: CN=leaf, O=Example, C=FR", "sha256/BBBB: CN=root, O=Example"]
        monitor.record(
            SecurityEvent(
                kind: .credentialStripped,
                message: "removed",
                details: [.headers: .list(["authorization", "x-odd, name"]), .presented: .lines(chain)]
            )
        )
        monitor.record(SecurityEvent(kind: .trustEvaluated, message: "trusted", details: [.presented: .lines(chain)]))
        #expect(recorder.events.map(\.message) == ["2"], "two headers, though the text form shows three commas")
        #expect(recorder.events.first?.details[.headers]?.list == ["authorization", "x-odd, name"])
    }

    @Test("path redaction applies to text and to each item of a list, and leaves numbers and flags")
    func redactionOfTypedValues() throws {
        let event = SecurityEvent(
            kind: .redirectFollowed,
            message: "302 from https://a.example/reset/TOKEN to https://b.example/",
            details: [
                .from: "https://a.example/reset/TOKEN", .to: "https://b.example/", .status: 302,
                .presented: .lines(["sha256/A: CN=https://a.example/reset/TOKEN"]), .cached: true,
            ]
        )
        let redacted = event.redactingURLPaths()
        #expect(redacted.details.keys == event.details.keys)
        #expect(redacted.details[.from]?.text == "https://a.example/…")
        #expect(redacted.details[.to]?.text == "https://b.example/")
        #expect(redacted.details[.status] == 302)
        #expect(redacted.details[.cached] == true)
        #expect(redacted.details[.presented]?.list == ["sha256/A: CN=https://a.example/…"])
        #expect(!redacted.message.contains("TOKEN"))
    }
}
