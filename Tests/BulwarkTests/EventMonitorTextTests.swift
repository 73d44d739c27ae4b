import Bulwark
import BulwarkTestHelpers
import Foundation
import InMemoryLogging
import Logging
import Testing

/// Issue 17: the monitors that write text read typed details, and write each in its stable text form.
@Suite("Security-event monitors that write text")
struct EventMonitorTextTests {
    static let chain = ["sha256/AAAA: CN=leaf.example, O=Example, C=FR", "sha256/BBBB: CN=Example Root, O=Example"]

    @Test("the chain dump prints each certificate of the lists on its own line, commas and all")
    func chainDump() {
        let collected = SharedBox<[String]>([])
        let monitor = ChainDumpMonitor { collected.append($0) }
        monitor.record(
            SecurityEvent(
                kind: .trustEvaluated,
                host: "leaf.example",
                message: "chain trusted",
                details: [.presented: .lines(Self.chain), .verified: .lines(Self.chain), .cached: false]
            )
        )
        monitor.record(SecurityEvent(kind: .trustRefused, host: "x.example", reason: "expired", message: "refused"))
        monitor.record(SecurityEvent(kind: .signOut, message: "signed out", details: [.credentials: 1]))
        #expect(
            collected.value == [
                """
                start dump: leaf.example (trust_evaluated)
                presented chain:
                  sha256/AAAA: CN=leaf.example, O=Example, C=FR
                  sha256/BBBB: CN=Example Root, O=Example
                verified chain:
                  sha256/AAAA: CN=leaf.example, O=Example, C=FR
                  sha256/BBBB: CN=Example Root, O=Example
                ---- end ----
                """,
                """
                start dump: x.example (trust_refused:expired)
                ---- end ----
                """,
            ]
        )
    }

    @Test("the swift-log monitor writes each detail's stable text under bulwark.detail.CODE")
    func loggingMetadata() throws {
        let handler = InMemoryLogHandler()
        let monitor = LoggingEventMonitor(logger: Logger(label: "test") { _ in handler })
        monitor.record(
            SecurityEvent(
                kind: .credentialStripped,
                host: "b.example",
                requestID: 9,
                reason: "origin_change",
                message: "authorization, cookie removed",
                details: [
                    .from: "https://a.example/", .status: 302, .headers: .list(["authorization", "cookie"]),
                    .presented: .lines(Self.chain), .cached: true,
                ]
            )
        )
        let metadata = try #require(handler.entries.first?.metadata)
        #expect(metadata["bulwark.detail.from"]?.description == "https://a.example/")
        #expect(metadata["bulwark.detail.status"]?.description == "302")
        #expect(metadata["bulwark.detail.headers"]?.description == "authorization, cookie")
        #expect(metadata["bulwark.detail.presented"]?.description == Self.chain.joined(separator: "\n"))
        #expect(metadata["bulwark.detail.cached"]?.description == "true")
        #expect(metadata["bulwark.request_id"]?.description == "9")
    }
}
