import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing

@testable import Bulwark

/// Issue 38 (Hardening II a): the policy updater under attack. An entry point called before ``PolicyUpdater/start()``
/// must not forget what is stored; a withheld bundle must not undo a tightening at its expiry; one version must not
/// carry two payloads; a bundle for another channel, a signed policy with a lint error, relative paths and files that
/// are not regular files are refused.
@Suite("Policy updater under attack")
struct PolicyUpdaterHardeningTests {
    static let policy = Array(#"{"format":"bulwark-policy/1","hosts":{"a.bulwark.test":{"evaluator":"default"}}}"#.utf8)
    static let otherPolicy = Array(
        #"{"format":"bulwark-policy/1","hosts":{"b.bulwark.test":{"evaluator":"default"}}}"#.utf8
    )

    func reason(_ outcome: PolicyUpdater.Outcome) -> PolicyBundleRefusal.Reason? {
        if case .refused(let refusal) = outcome { return refusal.reason }
        return nil
    }

    @Test("install() and update() before start() load the stored version and keys first")
    func entryPointsBeforeStartLoadTheStoredState() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let client = try PolicyUpdaterFixture.client(pinning: [])
        let first = try fixture.updater(for: client)
        first.start()
        let next = try PolicyTrustedKeys(keys: [fixture.b.publicKey], threshold: 1)
        let rotation = try fixture.bundle(Self.policy, version: 5, by: [fixture.a, fixture.b], trustedKeys: next)
        #expect(first.install(rotation) == .applied(version: 5))
        await first.shutdown()

        // A new process: the application calls install() without start(). The stored highest version (5) and the
        // rotated keys (b) hold; the configured key a no longer signs alone, and version 3 is a rollback.
        let restarted = try fixture.updater(for: client)
        #expect(
            self.reason(restarted.install(try fixture.bundle(Self.policy, version: 6, by: [fixture.a]))) == .unknownKey
        )
        #expect(
            self.reason(restarted.install(try fixture.bundle(Self.policy, version: 3, by: [fixture.b]))) == .rollback
        )
        #expect(restarted.status.highestVersion == 5)
        #expect(restarted.status.trustedKeys == next)
        let state = try #require(fixture.files()[PolicyUpdaterStorage.stateName])
        #expect(String(decoding: state, as: UTF8.self).contains("\"highestVersion\":5"))
        await restarted.shutdown()

        // update() first, too.
        let third = try fixture.updater(for: client)
        fixture.bundleServer.serve(try fixture.bundle(Self.policy, version: 4, by: [fixture.b]))
        #expect(self.reason(await third.update()) == .rollback)
        #expect(third.status.trustedKeys == next)
        await third.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("by default the last verified policy stays in force past its expiry, with policy_stale events")
    func expiryKeepsTheLastVerifiedPolicy() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        let updater = try fixture.updater(for: client)
        updater.start()
        let bundle = try fixture.bundle(Self.policy, version: 4, expires: PolicyUpdaterFixture.day(2))
        #expect(updater.install(bundle) == .applied(version: 4))
        let generation = client.policies.current.generation
        // Five days later the attacker still withholds new bundles.
        updater.fixedNow.withLockedValue { $0 = Date().addingTimeInterval(5 * 86_400) }
        let outcome = updater.checkExpiry()
        guard case .stale(let version, let since)? = outcome else {
            Issue.record("expected the policy to stay in force as stale, got \(String(describing: outcome))")
            return
        }
        #expect(version == 4)
        #expect(since > 2 * 86_400 && since < 4 * 86_400, "\(since)")
        #expect(client.policyBundleVersion == 4)
        #expect(client.policies.current.generation == generation)
        let event = try #require(monitor.events.last)
        #expect(event.shortDescription == "policy_stale")
        #expect(event.details[.version] == .number(4))
        #expect(event.message.contains("expired"), "\(event.message)")

        // At the next start, still expired: the stored bundle applies again, stale, and never the built-in policy.
        let restarted = try fixture.updater(for: client)
        restarted.fixedNow.withLockedValue { $0 = Date().addingTimeInterval(5 * 86_400) }
        let atStart = restarted.start()
        #expect(atStart == .applied(version: 4), "\(atStart)")
        #expect(client.policyBundleVersion == 4)
        #expect(monitor.events.map(\.shortDescription).suffix(2) == ["policy_updated", "policy_stale"])
        await updater.shutdown()
        await restarted.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("falling back to the built-in policy at expiry stays an option")
    func expiryCanFallBack() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        var configuration = try fixture.updater(for: client).configuration
        configuration.whenBundleExpires = .fallBackToBuiltIn
        let updater = PolicyUpdater(client: client, configuration: configuration)
        updater.start()
        #expect(
            updater.install(try fixture.bundle(Self.policy, version: 4, expires: PolicyUpdaterFixture.day(2)))
                == .applied(version: 4)
        )
        updater.fixedNow.withLockedValue { $0 = Date().addingTimeInterval(5 * 86_400) }
        guard case .fellBack(let refusal)? = updater.checkExpiry() else {
            Issue.record("expected a fallback")
            return
        }
        #expect(refusal.reason == .expired)
        #expect(client.policyBundleVersion == nil)
        #expect(monitor.events.last?.shortDescription == "policy_fallback:expired")
        await updater.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("one version, one payload: another payload at the version in force is version_reused, the same is a no-op")
    func versionReused() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        let updater = try fixture.updater(for: client, keys: [fixture.a, fixture.b], threshold: 1)
        updater.start()
        #expect(updater.install(try fixture.bundle(Self.policy, version: 5, by: [fixture.a])) == .applied(version: 5))
        let generation = client.policies.current.generation
        let files = fixture.files()
        let reused = try fixture.bundle(Self.otherPolicy, version: 5, by: [fixture.a])
        #expect(self.reason(updater.install(reused)) == .versionReused)
        #expect(monitor.events.last?.shortDescription == "policy_update_refused:version_reused")
        // The same payload signed by another trusted key: the same bundle, nothing drained, nothing stored.
        let events = monitor.events.count
        let resigned = try fixture.bundle(Self.policy, version: 5, by: [fixture.b])
        #expect(updater.install(resigned) == .unchanged(version: 5))
        #expect(monitor.events.count == events)
        #expect(client.policies.current.generation == generation)
        #expect(fixture.files() == files)
        await updater.shutdown()

        // After a restart the digest of version 5 is still known.
        let restarted = try fixture.updater(for: client, keys: [fixture.a, fixture.b], threshold: 1)
        restarted.start()
        #expect(self.reason(restarted.install(reused)) == .versionReused)
        await restarted.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("a bundle for another channel is refused")
    func channel() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let client = try PolicyUpdaterFixture.client(pinning: [])
        var configuration = try fixture.updater(for: client).configuration
        configuration.channel = "production"
        let updater = PolicyUpdater(client: client, configuration: configuration)
        updater.start()
        var staging = PolicyBundle(policy: Self.policy, version: 2, expires: PolicyUpdaterFixture.day(30))
        staging.channel = "staging"
        #expect(self.reason(updater.install(try staging.signed(by: [fixture.a]))) == .wrongChannel)
        var production = staging
        production.channel = "production"
        #expect(updater.install(try production.signed(by: [fixture.a])) == .applied(version: 2))
        await updater.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("a signed policy with a lint error is refused without insecure, whoever signed it")
    func lintErrorsInABundle() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        let updater = try fixture.updater(for: client)
        updater.start()
        let expiredPins = Array(
            #"{"format":"bulwark-policy/1","hosts":{"a.bulwark.test":{"evaluator":"publicKeys","pins":["sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg=","sha256/LOUIbIk5ZUo2ZAFZukZzDCNVkKbhZRzx/hdUqBhjs6U="],"expires":"2020-01-01","revocation":{"mode":"soft"}}}}"#
                .utf8
        )
        let outcome = updater.install(try fixture.bundle(expiredPins, version: 2))
        #expect(self.reason(outcome) == .insecurePolicy)
        if case .refused(let refusal) = outcome {
            #expect(refusal.description.contains("BWP003"), "\(refusal)")
            #expect(refusal.description.contains("/hosts/a.bulwark.test/expires"), "\(refusal)")
        }
        let broad = Array(#"{"format":"bulwark-policy/1","hosts":{"**.test":{"evaluator":"default"}}}"#.utf8)
        #expect(self.reason(updater.install(try fixture.bundle(broad, version: 2))) == .insecurePolicy)
        #expect(client.policyBundleVersion == nil)
        await updater.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("every lint rule of severity error, in a signed bundle without insecure, is refused")
    func everyLintErrorInABundle() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let client = try PolicyUpdaterFixture.client(pinning: [])
        let updater = try fixture.updater(for: client)
        updater.start()
        let pins =
            #"["sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg=","sha256/LOUIbIk5ZUo2ZAFZukZzDCNVkKbhZRzx/hdUqBhjs6U="]"#
        let host = #""a.bulwark.test":"#
        let policies: [PolicyLintRule: String] = [
            .singlePin:
                #"{\#(host){"evaluator":"publicKeys","pins":["sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg="],"allowSinglePin":true,"revocation":{"mode":"soft"}}}"#,
            .pinSetExpired:
                #"{\#(host){"evaluator":"publicKeys","pins":\#(pins),"expires":"2020-01-01","revocation":{"mode":"soft"}}}"#,
            .validationDisabled: #"{\#(host){"evaluator":"disabled"}}"#,
            .hostNotValidated: #"{\#(host){"evaluator":"default","validateHost":false}}"#,
            .httpsToHTTPRedirect: #"{\#(host){"evaluator":"default"}},"redirects":{"allowHTTPSToHTTP":true}"#,
            .broadPattern: #"{"**.test":{"evaluator":"default"}}"#,
        ]
        let rules = PolicyLintRule.all.filter(\.requiresInsecure)
        #expect(Set(rules.map(\.code)) == Set(policies.keys.map(\.code)))
        for (index, rule) in rules.enumerated() {
            let hosts = try #require(policies[rule])
            let text = #"{"format":"bulwark-policy/1","hosts":"# + hosts + "}"
            let outcome = updater.install(try fixture.bundle(Array(text.utf8), version: UInt64(2 + index)))
            guard case .refused(let refusal) = outcome else {
                Issue.record("\(rule): \(outcome)")
                continue
            }
            // Options that weaken by construction do not even decode without the flag; the others are lint errors.
            #expect([.insecurePolicy, .invalidPolicy].contains(refusal.reason), "\(rule): \(refusal)")
            #expect(refusal.description.contains(rule.code) || refusal.description.contains("insecure"), "\(refusal)")
        }
        #expect(client.policyBundleVersion == nil)
        await updater.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("relative paths and files that are not regular files in a bundle's policy are invalid_policy, never a hang")
    func filesABundleNames() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let client = try PolicyUpdaterFixture.client(pinning: [])
        let updater = try fixture.updater(for: client)
        updater.start()
        let fifo = FileManager.default.temporaryDirectory.appending(path: "bulwark-fifo-\(UUID())").path
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let policies = [
            #"{"format":"bulwark-policy/1","hosts":{"a.bulwark.test":{"evaluator":"default"}},"clientCertificates":{"a.bulwark.test":{"certificate":"client.pem","key":"client.key"}}}"#,
            #"{"format":"bulwark-policy/1","hosts":{"a.bulwark.test":{"evaluator":"default"}},"proxy":{"use":"https://proxy.bulwark.test:3128","caFile":"proxy-ca.pem"}}"#,
            #"{"format":"bulwark-policy/1","hosts":{"a.bulwark.test":{"evaluator":"default","roots":{"system":false,"certificates":[{"file":"\#(fifo)"}]}}}}"#,
            #"{"format":"bulwark-policy/1","hosts":{"a.bulwark.test":{"evaluator":"default","roots":{"system":false,"certificates":[{"file":"/dev/zero"}]}}}}"#,
        ]
        for (index, policy) in policies.enumerated() {
            let bundle = try fixture.bundle(Array(policy.utf8), version: UInt64(2 + index))
            let outcome = try await Self.withinSeconds(10) { updater.install(bundle) }
            #expect(outcome != nil, "\(index): install() did not return within 10 s")
            #expect(outcome.flatMap(self.reason) == .invalidPolicy, "\(index): \(String(describing: outcome))")
        }
        await updater.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    /// `body`'s result, or nil when it has not returned within `seconds` (run on a thread of its own, so a blocked
    /// read cannot hold up the test).
    static func withinSeconds<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () -> T) async throws -> T? {
        let box = NIOLockedValueBoxForTests<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let value = body()
            box.set(value)
            done.signal()
        }
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if done.wait(timeout: .now()) == .success { return box.get() }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Once more after the deadline: a sleep can overrun it when other suites keep the cooperative pool busy.
        return done.wait(timeout: .now()) == .success ? box.get() : nil
    }
}

/// A value behind a lock, for a thread to hand a result to a test.
final class NIOLockedValueBoxForTests<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func set(_ value: T) { self.lock.withLock { self.value = value } }
    func get() -> T { self.lock.withLock { self.value } }
}

/// The attack review of issue 38: the updater's findings, each failing before its fix.
@Suite("Policy updater: the review's findings")
struct PolicyUpdaterReviewTests {
    func reason(_ outcome: PolicyUpdater.Outcome) -> PolicyBundleRefusal.Reason? {
        if case .refused(let refusal) = outcome { return refusal.reason }
        return nil
    }

    /// Finding 1: a stored bundle whose pin set expired since it was accepted was refused at the next start
    /// (`insecure_policy`, BWP003 judged at the restart's date) and the built-in policy applied: withholding the next
    /// bundle until the pins' date, then any restart, undid every tightening.
    @Test("a stored bundle whose pin set has since expired stays in force at restart")
    func pinSetExpiryAtRestartKeepsTheBundle() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let pins = PolicyUpdaterFixture.backupPins.map(\.description)
        let policy = Array(
            ("{\"format\":\"bulwark-policy/1\",\"hosts\":{\"a.bulwark.test\":{\"evaluator\":\"publicKeys\","
                + "\"pins\":[\"\(pins[0])\",\"\(pins[1])\"],\"expires\":\"\(PolicyUpdaterFixture.day(40))\","
                + "\"revocation\":{\"mode\":\"soft\"}}},\"allowlist\":[\"a.bulwark.test\"]}").utf8
        )
        let client1 = try PolicyUpdaterFixture.client(pinning: [])
        let first = try fixture.updater(for: client1)
        first.start()
        let bundle = try fixture.bundle(policy, version: 4, expires: PolicyUpdaterFixture.day(60))
        #expect(first.install(bundle) == .applied(version: 4))
        await first.shutdown()
        await client1.shutdown()
        // Day 45: version 4 is valid for 15 more days, its pin set expired, version 5 is withheld; a restart.
        let client2 = try PolicyUpdaterFixture.client(pinning: [])
        let restarted = try fixture.updater(for: client2)
        restarted.fixedNow.withLockedValue { $0 = Date().addingTimeInterval(45 * 86_400) }
        #expect(restarted.start() == .applied(version: 4))
        #expect(client2.policyBundleVersion == 4)
        // A new bundle with an expired pin set is still refused.
        let stalePins = try fixture.bundle(policy, version: 5, expires: PolicyUpdaterFixture.day(60))
        #expect(self.reason(restarted.install(stalePins)) == .insecurePolicy)
        await restarted.shutdown()
        await client2.shutdown()
        try await fixture.tearDown()
    }

    /// Finding 4: two updaters sharing a directory wrote their own in-memory state last: one still at version 5
    /// stored version 6 and its old keys over another's version 7 rotation.
    @Test("an updater never lowers the stored highest version or brings back rotated-out keys")
    func updatersSharingADirectory() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let client = try PolicyUpdaterFixture.client(pinning: [])
        let policy = Array(#"{"format":"bulwark-policy/1","hosts":{"a.bulwark.test":{"evaluator":"default"}}}"#.utf8)
        let one = try fixture.updater(for: client)
        let two = try fixture.updater(for: client)
        one.start()
        two.start()
        #expect(two.install(try fixture.bundle(policy, version: 5)) == .applied(version: 5))
        let next = try PolicyTrustedKeys(keys: [fixture.b.publicKey], threshold: 1)
        let rotation = try fixture.bundle(policy, version: 7, by: [fixture.a, fixture.b], trustedKeys: next)
        #expect(one.install(rotation) == .applied(version: 7))
        // The second updater, still at version 5 with key a, is handed version 6 signed by a.
        let late = try fixture.bundle(policy, version: 6)
        let outcome = two.install(late)
        #expect(self.reason(outcome) != nil, "\(outcome)")
        let bytes = try #require(fixture.files()[PolicyUpdaterStorage.stateName])
        let state = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(state["highestVersion"] as? Int == 7, "\(state)")
        // The trusted keys are the rotated ones (a may still be named as the key the stored bundle was verified with).
        #expect(state["trustedKeys"] as? [String] == [fixture.b.publicKey.line], "\(state)")
        let restarted = try fixture.updater(for: client)
        #expect(restarted.start() == .applied(version: 7))
        #expect(restarted.status.trustedKeys == next)
        await one.shutdown()
        await two.shutdown()
        await restarted.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    /// Finding 6: a stored key set that no longer reads (a line today's checks refuse, a damaged file) silently
    /// brought back the configured keys, undoing rotations; now nothing is installed until it is fixed.
    @Test("stored trusted keys that cannot be read refuse every install instead of trusting the configured keys")
    func unreadableStoredKeys() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        let policy = Array(#"{"format":"bulwark-policy/1","hosts":{"a.bulwark.test":{"evaluator":"default"}}}"#.utf8)
        let first = try fixture.updater(for: client)
        first.start()
        let next = try PolicyTrustedKeys(keys: [fixture.b.publicKey], threshold: 1)
        #expect(
            first.install(try fixture.bundle(policy, version: 2, by: [fixture.a, fixture.b], trustedKeys: next))
                == .applied(version: 2)
        )
        // A later bundle by the new key, so that the stored bundle no longer carries the rotation.
        #expect(first.install(try fixture.bundle(policy, version: 3, by: [fixture.b])) == .applied(version: 3))
        await first.shutdown()
        // The stored key line is replaced by the identity point (as an older version could have stored it).
        let path = fixture.directory + "/" + PolicyUpdaterStorage.stateName
        let data = try #require(FileManager.default.contents(atPath: path))
        var state = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        state["trustedKeys"] = ["bulwark-policy-key/1 ed25519 AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]
        try JSONSerialization.data(withJSONObject: state).write(to: URL(fileURLWithPath: path))
        let restarted = try fixture.updater(for: client)
        restarted.start()
        // Key a was rotated out: a bundle it signs alone must not be applied.
        let outcome = restarted.install(try fixture.bundle(policy, version: 4, by: [fixture.a]))
        #expect(self.reason(outcome) == .storageFailed, "\(outcome)")
        #expect(
            monitor.events.contains { $0.message.contains("trusted keys") && $0.message.contains("cannot be read") }
        )
        await restarted.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }
}

extension PolicyUpdaterReviewTests {
    /// Finding 7: when the bundle was stored but the state could not be (a full disk), install reported
    /// `storage_failed`, yet the next start applied the bundle it had refused to apply.
    @Test("a bundle refused as storage_failed is not applied at the next start")
    func storageFailedBundleIsNotAppliedLater() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let client = try PolicyUpdaterFixture.client(pinning: [])
        let policy = Array(#"{"format":"bulwark-policy/1","hosts":{"a.bulwark.test":{"evaluator":"default"}}}"#.utf8)
        let updater = try fixture.updater(for: client)
        updater.start()
        #expect(updater.install(try fixture.bundle(policy, version: 2)) == .applied(version: 2))
        updater.storageFault.withLockedValue { $0 = .stateWriteFails }
        #expect(self.reason(updater.install(try fixture.bundle(policy, version: 3))) == .storageFailed)
        #expect(client.policyBundleVersion == 2)
        await updater.shutdown()
        let restarted = try fixture.updater(for: client)
        #expect(restarted.start() == .applied(version: 2))
        #expect(restarted.status.highestVersion == 2)
        await restarted.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }
}
