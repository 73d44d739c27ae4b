import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing
import X509

@testable import Bulwark

/// What the policy-updater tests share: signing keys, a bundle server on loopback (HTTPS, pinned by the updater's own
/// configuration), policies pinning test chains, and a directory of its own for each updater.
struct PolicyUpdaterFixture {
    static let apiHost = "api.bulwark.test"
    static let bundleHost = "policy.bulwark.test"

    let a = PolicySigningKey.generate(name: "a")
    let b = PolicySigningKey.generate(name: "b")
    let c = PolicySigningKey.generate(name: "c")
    let directory: String
    let bundleChain: TestChain
    let bundleServer: StaticContentServer

    static func make() async throws -> PolicyUpdaterFixture {
        let bundleChain = try TestChain.make(host: Self.bundleHost)
        let server = try await StaticContentServer.start(
            chain: bundleChain.presentedChain,
            privateKey: bundleChain.leaf.privateKey
        )
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-updater-\(UUID())").path
        return PolicyUpdaterFixture(directory: directory, bundleChain: bundleChain, bundleServer: server)
    }

    func tearDown() async throws {
        try await self.bundleServer.shutdown()
        try? FileManager.default.removeItem(atPath: self.directory)
    }

    /// Two pins that match nothing (the backups a pin set should have).
    static let backupPins = [
        try! Pin(publicKeySHA256: Array(repeating: 0x42, count: 32)),
        try! Pin(publicKeySHA256: Array(repeating: 0x43, count: 32)),
    ]

    /// A policy file: each host pinned to the leaf keys of `chains` (and two backup pins), under their roots; a host
    /// without chains is left out.
    static func policy(_ hosts: [String: [TestChain]]) throws -> [UInt8] {
        var entries: [String: Any] = [:]
        for (host, chains) in hosts where !chains.isEmpty {
            entries[host] = [
                "evaluator": "publicKeys",
                "pins": chains.map { Pin.publicKey(of: $0.leaf.certificate).description }
                    + Self.backupPins.map(\.description),
                // The test CAs only: the system bundle, parsed inside the first handshake's timeout, took over 10 s
                // in a debug build under the parallel in-process run (fetch_failed: tls_handshake_timeout).
                "roots": ["system": false, "certificates": chains.map { ["pem": $0.root.certificatePEM] }],
            ]
        }
        let file: [String: Any] = ["format": "bulwark-policy/1", "hosts": entries]
        return Array(try JSONSerialization.data(withJSONObject: file, options: [.sortedKeys, .withoutEscapingSlashes]))
    }

    /// `YYYY-MM-DD`, `days` from today.
    static func day(_ days: Int) -> String {
        PolicyFile.formatDay(Date().addingTimeInterval(Double(days) * 86_400))
    }

    func bundle(
        _ policy: [UInt8],
        version: UInt64,
        expires: String = Self.day(30),
        by keys: [PolicySigningKey]? = nil,
        trustedKeys: PolicyTrustedKeys? = nil
    ) throws -> [UInt8] {
        try PolicyBundle(policy: policy, version: version, expires: expires, trustedKeys: trustedKeys)
            .signed(by: keys ?? [self.a])
    }

    /// The updater's own fetching configuration: the bundle host pinned to the bundle server's leaf key, resolved to
    /// 127.0.0.1 on each of `ports`.
    func fetchConfiguration(ports: [Int]? = nil) throws -> BulwarkClient.Configuration {
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(
                policy: try PolicyFile(
                    jsonBytes: try Self.policy([Self.bundleHost: [self.bundleChain]]),
                    baseDirectory: nil
                )
            )
        )
        for port in ports ?? [self.bundleServer.port] {
            configuration.resolveOverrides[.init(host: Self.bundleHost, port: port)] = "127.0.0.1"
        }
        return configuration
    }

    func updater(
        for client: BulwarkClient,
        keys: [PolicySigningKey]? = nil,
        threshold: Int = 1,
        url: String? = nil,
        fetchPorts: [Int]? = nil,
        whenBundleExpires: PolicyUpdater.ExpiryBehavior = .keepLastVerified
    ) throws -> PolicyUpdater {
        var configuration = PolicyUpdater.Configuration(
            url: url ?? self.bundleServer.url(host: Self.bundleHost),
            trustedKeys: try PolicyTrustedKeys(keys: (keys ?? [self.a]).map(\.publicKey), threshold: threshold),
            directory: self.directory,
            fetch: try self.fetchConfiguration(ports: fetchPorts)
        )
        configuration.whenBundleExpires = whenBundleExpires
        return PolicyUpdater(client: client, configuration: configuration)
    }

    /// A client whose built-in policy pins the API host to `chains`, resolving the API host on `ports`.
    static func client(
        pinning chains: [TestChain],
        ports: [Int] = [],
        monitor: RecordingEventMonitor = RecordingEventMonitor()
    ) throws -> BulwarkClient {
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(
                policy: try PolicyFile(jsonBytes: try Self.policy([Self.apiHost: chains]), baseDirectory: nil)
            )
        )
        configuration.eventMonitor = monitor
        for port in ports {
            configuration.resolveOverrides[.init(host: Self.apiHost, port: port)] = "127.0.0.1"
        }
        return BulwarkClient(configuration: configuration)
    }

    /// The files in the updater's directory and their bytes.
    func files() -> [String: [UInt8]] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: self.directory)) ?? []
        var files: [String: [UInt8]] = [:]
        for name in names {
            files[name] = FileManager.default.contents(atPath: self.directory + "/" + name).map(Array.init)
        }
        return files
    }
}

/// Issue 21, item 5: ``PolicyUpdater``. Every refusal goes through the updater, is its own event and changes nothing;
/// rollback protection and key rotation survive a restart; a crash while storing leaves the previous bundle; an
/// expired bundle falls back to the built-in policy.
@Suite("Policy updater: verification, storage and refusals")
struct PolicyUpdaterTests {
    static let policy = Array(#"{"format":"bulwark-policy/1","hosts":{"a.bulwark.test":{"evaluator":"default"}}}"#.utf8)

    func reason(_ outcome: PolicyUpdater.Outcome) -> PolicyBundleRefusal.Reason? {
        if case .refused(let refusal) = outcome { return refusal.reason }
        return nil
    }

    /// The bundle with one byte of its signed policy flipped, the signatures kept.
    static func flipped(_ bytes: [UInt8]) throws -> [UInt8] {
        var file = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let signedText = try #require(file["signed"] as? String)
        let signed = try #require(Data(base64Encoded: signedText))
        var payload = try #require(try JSONSerialization.jsonObject(with: signed) as? [String: Any])
        let policyText = try #require(payload["policy"] as? String)
        var policy = try #require(Data(base64Encoded: policyText))
        policy[policy.count / 2] ^= 0x01
        payload["policy"] = policy.base64EncodedString()
        file["signed"] = try JSONSerialization.data(withJSONObject: payload).base64EncodedString()
        return Array(try JSONSerialization.data(withJSONObject: file))
    }

    @Test("each refused bundle is its own policy_update_refused event and changes nothing")
    func everyRefusalChangesNothing() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        let updater = try fixture.updater(for: client, keys: [fixture.a, fixture.b], threshold: 2)
        #expect(updater.start() == .builtIn)
        let good = try fixture.bundle(Self.policy, version: 5, by: [fixture.a, fixture.b])
        #expect(updater.install(good) == .applied(version: 5))
        let files = fixture.files()
        #expect(
            files.keys.sorted() == [
                PolicyUpdaterStorage.bundleName, PolicyUpdaterStorage.stateName, PolicyUpdaterStorage.lockName,
            ]
        )
        let generation = client.policies.current.generation
        let cases: [(String, [UInt8], PolicyBundleRefusal.Reason)] = [
            (
                "a flipped byte",
                try Self.flipped(try fixture.bundle(Self.policy, version: 6, by: [fixture.a, fixture.b])),
                .signatureInvalid
            ),
            ("an unknown key", try fixture.bundle(Self.policy, version: 6, by: [fixture.c]), .unknownKey),
            (
                "below the threshold", try fixture.bundle(Self.policy, version: 6, by: [fixture.a, fixture.c]),
                .belowThreshold
            ),
            (
                "an older version replayed", try fixture.bundle(Self.policy, version: 4, by: [fixture.a, fixture.b]),
                .rollback
            ),
            (
                "an expired bundle",
                try fixture.bundle(
                    Self.policy,
                    version: 6,
                    expires: PolicyUpdaterFixture.day(-2),
                    by: [fixture.a, fixture.b]
                ),
                .expired
            ),
            ("a truncated file", Array(good.prefix(good.count / 2)), .malformed),
            ("a 10 MiB file", good + [UInt8](repeating: 0x20, count: 10 << 20), .tooLarge),
            (
                "a policy that is not a policy file",
                try fixture.bundle(
                    Array(#"{"format":"bulwark-policy/1","hosts":{"*x*":{}}}"#.utf8),
                    version: 6,
                    by: [fixture.a, fixture.b]
                ),
                .invalidPolicy
            ),
        ]
        for (name, bytes, expected) in cases {
            let before = monitor.events.count
            let outcome = updater.install(bytes)
            #expect(self.reason(outcome) == expected, "\(name)")
            let events = monitor.events.dropFirst(before)
            #expect(events.map(\.shortDescription) == ["policy_update_refused:\(expected.code)"], "\(name)")
            #expect(updater.status.version == 5, "\(name)")
            #expect(updater.status.highestVersion == 5, "\(name)")
            #expect(client.policyBundleVersion == 5, "\(name)")
            #expect(client.policies.current.generation == generation, "\(name)")
            #expect(fixture.files() == files, "\(name): the stored files changed")
        }
        // The same bundle again changes nothing either, silently.
        let events = monitor.events.count
        #expect(updater.install(good) == .unchanged(version: 5))
        #expect(monitor.events.count == events)
        await updater.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("a signed bundle whose policy sets insecure is refused unless the updater allows it")
    func insecurePolicyRefused() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        let updater = try fixture.updater(for: client)
        #expect(updater.start() == .builtIn)
        #expect(updater.install(try fixture.bundle(Self.policy, version: 5)) == .applied(version: 5))
        let files = fixture.files()
        let generation = client.policies.current.generation
        let insecure = Array(
            #"{"format":"bulwark-policy/1","insecure":true,"hosts":{"a.bulwark.test":{"evaluator":"disabled"}}}"#.utf8
        )
        let before = monitor.events.count
        let outcome = updater.install(try fixture.bundle(insecure, version: 6))
        #expect(self.reason(outcome)?.code == "insecure_policy")
        #expect(monitor.events.dropFirst(before).map(\.shortDescription) == ["policy_update_refused:insecure_policy"])
        if case .refused(let refusal) = outcome {
            #expect(
                "\(refusal)"
                    == "the policy bundle was refused (insecure_policy): the policy in bundle version 6 sets "
                    + "\"insecure\": true, which can turn certificate validation off; this updater accepts such a "
                    + "policy only when its configuration allows insecure policies"
            )
        }
        #expect(updater.status.version == 5)
        #expect(updater.status.highestVersion == 5)
        #expect(client.policies.current.generation == generation)
        #expect(fixture.files() == files)
        await updater.shutdown()

        // Allowed by the updater's configuration: applied, and its event says so.
        var configuration = PolicyUpdater.Configuration(
            url: fixture.bundleServer.url(host: PolicyUpdaterFixture.bundleHost),
            trustedKeys: try PolicyTrustedKeys(keys: [fixture.a.publicKey], threshold: 1),
            directory: fixture.directory,
            fetch: try fixture.fetchConfiguration()
        )
        configuration.allowsInsecurePolicies = true
        let allowing = PolicyUpdater(client: client, configuration: configuration)
        #expect(allowing.start() == .applied(version: 5))
        let applied = monitor.events.count
        #expect(allowing.install(try fixture.bundle(insecure, version: 6)) == .applied(version: 6))
        let event = try #require(monitor.events.dropFirst(applied).first)
        #expect(event.shortDescription == "policy_updated")
        #expect(event.message.contains(#"its policy sets "insecure": true, allowed by the updater's configuration"#))
        await allowing.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("update() fetches under the updater's own pins; 404, an untrusted server and 10 MiB are refused")
    func fetchRefusals() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        let updater = try fixture.updater(for: client)
        updater.start()
        // Nothing served yet: 404.
        #expect(self.reason(await updater.update()) == .fetchFailed)
        fixture.bundleServer.serve(
            try fixture.bundle(Self.policy, version: 1) + [UInt8](repeating: 0x20, count: 10 << 20)
        )
        #expect(self.reason(await updater.update()) == .tooLarge)
        fixture.bundleServer.serve(try fixture.bundle(Self.policy, version: 1))
        #expect(await updater.update() == .applied(version: 1))
        #expect(
            monitor.events.map(\.shortDescription).suffix(3) == [
                "policy_update_refused:fetch_failed", "policy_update_refused:too_large", "policy_updated",
            ]
        )
        let updated = try #require(monitor.events.last)
        #expect(updated.details[.version] == .number(1))
        #expect(updated.details[.signers]?.list == [fixture.a.publicKey.description])
        // A server with another key for the bundle host is not trusted by the updater's own configuration.
        let impostorChain = try TestChain.make(host: PolicyUpdaterFixture.bundleHost)
        let impostor = try await StaticContentServer.start(
            chain: impostorChain.presentedChain,
            privateKey: impostorChain.leaf.privateKey
        )
        impostor.serve(try fixture.bundle(Self.policy, version: 2))
        let fooled = try fixture.updater(
            for: client,
            url: impostor.url(host: PolicyUpdaterFixture.bundleHost),
            fetchPorts: [impostor.port]
        )
        #expect(self.reason(await fooled.update()) == .fetchFailed)
        #expect(client.policyBundleVersion == 1)
        await fooled.shutdown()
        try await impostor.shutdown()
        await updater.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("rollback protection survives a restart, even without the stored bundle")
    func rollbackSurvivesRestart() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let first = try PolicyUpdaterFixture.client(pinning: [])
        let updater = try fixture.updater(for: first)
        updater.start()
        #expect(updater.install(try fixture.bundle(Self.policy, version: 7)) == .applied(version: 7))
        await updater.shutdown()
        await first.shutdown()

        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        let restarted = try fixture.updater(for: client)
        #expect(client.policyBundleVersion == nil)
        #expect(restarted.start() == .applied(version: 7))
        #expect(client.policyBundleVersion == 7)
        let generation = client.policies.current.generation
        #expect(restarted.start() == .unchanged(version: 7), "a second start changes nothing")
        #expect(client.policies.current.generation == generation)
        #expect(self.reason(restarted.install(try fixture.bundle(Self.policy, version: 6))) == .rollback)
        #expect(monitor.events.last?.shortDescription == "policy_update_refused:rollback")
        await restarted.shutdown()

        // The highest version is kept apart from the bundle: removing the bundle does not reopen older versions.
        try FileManager.default.removeItem(atPath: fixture.directory + "/" + PolicyUpdaterStorage.bundleName)
        let again = try fixture.updater(for: client)
        #expect(again.start() == .builtIn)
        #expect(again.status.highestVersion == 7)
        #expect(self.reason(again.install(try fixture.bundle(Self.policy, version: 6))) == .rollback)
        #expect(again.install(try fixture.bundle(Self.policy, version: 8)) == .applied(version: 8))
        await again.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("a crash between writing the temporary file and renaming it leaves the previous bundle in force")
    func crashBeforeRename() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let client = try PolicyUpdaterFixture.client(pinning: [])
        let updater = try fixture.updater(for: client)
        updater.start()
        #expect(updater.install(try fixture.bundle(Self.policy, version: 2)) == .applied(version: 2))
        let stored = fixture.files()
        updater.storageFault.withLockedValue { $0 = .stopAfterTemporaryFileSynced }
        let three = try fixture.bundle(Self.policy, version: 3)
        #expect(self.reason(updater.install(three)) == .storageFailed)
        #expect(client.policyBundleVersion == 2, "a bundle that was not stored is not applied")
        // The crash left the new bundle's temporary file, synced, next to the old bundle.
        let strays = fixture.files().filter { $0.key.contains(".tmp-") }
        #expect(strays.count == 1)
        #expect(strays.first?.value == three)
        await updater.shutdown()

        let restartedClient = try PolicyUpdaterFixture.client(pinning: [])
        let restarted = try fixture.updater(for: restartedClient)
        #expect(restarted.start() == .applied(version: 2))
        #expect(restartedClient.policyBundleVersion == 2)
        #expect(fixture.files() == stored, "the temporary file is removed at start")
        // The bundle that was not stored can be installed now.
        #expect(restarted.install(three) == .applied(version: 3))
        await restarted.shutdown()
        await client.shutdown()
        await restartedClient.shutdown()
        try await fixture.tearDown()
    }

    @Test("with fallBackToBuiltIn, an expired bundle in force falls back to the built-in policy, at start and running")
    func freezeFallsBack() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        let updater = try fixture.updater(for: client, whenBundleExpires: .fallBackToBuiltIn)
        updater.start()
        #expect(
            updater.install(try fixture.bundle(Self.policy, version: 4, expires: PolicyUpdaterFixture.day(2)))
                == .applied(version: 4)
        )
        #expect(updater.checkExpiry() == nil)
        // Five days later, the server (or an attacker) still serves the same bundle.
        updater.fixedNow.withLockedValue { $0 = Date().addingTimeInterval(5 * 86_400) }
        fixture.bundleServer.serve(try fixture.bundle(Self.policy, version: 4, expires: PolicyUpdaterFixture.day(2)))
        let outcome = await updater.update()
        guard case .fellBack(let refusal) = outcome else {
            Issue.record("expected a fallback, got \(outcome)")
            return
        }
        #expect(refusal.reason == .expired)
        #expect(client.policyBundleVersion == nil)
        #expect(
            monitor.events.map(\.shortDescription).suffix(2) == [
                "policy_update_refused:expired", "policy_fallback:expired",
            ]
        )
        #expect(monitor.events.last?.details[.version] == .number(4))
        await updater.shutdown()

        // At the next start, still expired: the built-in policy, and version 4 still counts against rollback.
        let restarted = try fixture.updater(for: client, whenBundleExpires: .fallBackToBuiltIn)
        restarted.fixedNow.withLockedValue { $0 = Date().addingTimeInterval(5 * 86_400) }
        guard case .fellBack(let again) = restarted.start() else {
            Issue.record("expected a fallback at start")
            return
        }
        #expect(again.reason == .expired)
        #expect(monitor.events.last?.shortDescription == "policy_fallback:expired")
        #expect(restarted.status.highestVersion == 4)
        let older = try fixture.bundle(Self.policy, version: 3, expires: PolicyUpdaterFixture.day(30))
        #expect(self.reason(restarted.install(older)) == .rollback)
        await restarted.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("the members of a bundle's policy that do not apply to a running client are named in its event")
    func notLiveMembersAreNamed() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let monitor = RecordingEventMonitor()
        let client = try PolicyUpdaterFixture.client(pinning: [], monitor: monitor)
        let updater = try fixture.updater(for: client)
        updater.start()
        let policy = Array(
            #"{"format":"bulwark-policy/1","tls":{"minimumVersion":"1.3"},"hosts":{"a.bulwark.test":{"evaluator":"default"}},"allowlist":["a.bulwark.test"]}"#
                .utf8
        )
        #expect(updater.install(try fixture.bundle(policy, version: 1)) == .applied(version: 1))
        let event = try #require(monitor.events.last)
        #expect(event.message.hasSuffix("not applied to the running client: /tls/minimumVersion"))
        // The allowlist applies live: a host outside it is refused before anything is resolved.
        let refused = await #expect(throws: BulwarkError.self) {
            try await client.execute(BulwarkRequest(url: "https://b.bulwark.test/"), timeout: .seconds(5))
        }
        #expect(refused?.code == .hostNotAllowed)
        #expect(client.configuration.tls.minimumVersion == .tls12)
        await updater.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }

    @Test("a key rotation signed by the current keys is accepted and stored; one signed by the new keys only is not")
    func keyRotation() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let client = try PolicyUpdaterFixture.client(pinning: [])
        let updater = try fixture.updater(for: client)
        updater.start()
        let next = try PolicyTrustedKeys(keys: [fixture.b.publicKey, fixture.c.publicKey], threshold: 2)
        let byNewKeys = try fixture.bundle(Self.policy, version: 2, by: [fixture.b, fixture.c], trustedKeys: next)
        #expect(self.reason(updater.install(byNewKeys)) == .unknownKey)
        #expect(updater.status.trustedKeys.keys == [fixture.a.publicKey])
        // Signed by the current key alone, the new keys never proved they hold their private keys.
        let unproven = try fixture.bundle(Self.policy, version: 2, by: [fixture.a], trustedKeys: next)
        #expect(self.reason(updater.install(unproven)) == .rotationNotProven)
        let rotation = try fixture.bundle(
            Self.policy,
            version: 2,
            by: [fixture.a, fixture.b, fixture.c],
            trustedKeys: next
        )
        #expect(updater.install(rotation) == .applied(version: 2))
        #expect(updater.status.trustedKeys == next)
        await updater.shutdown()

        // After a restart the rotated keys hold: the old key alone is unknown, the new threshold is needed.
        let restarted = try fixture.updater(for: client)
        #expect(restarted.start() == .applied(version: 2))
        #expect(restarted.status.trustedKeys == next)
        #expect(
            self.reason(restarted.install(try fixture.bundle(Self.policy, version: 3, by: [fixture.a]))) == .unknownKey
        )
        #expect(
            self.reason(restarted.install(try fixture.bundle(Self.policy, version: 3, by: [fixture.b])))
                == .belowThreshold
        )
        #expect(
            restarted.install(try fixture.bundle(Self.policy, version: 3, by: [fixture.b, fixture.c]))
                == .applied(version: 3)
        )
        await restarted.shutdown()
        await client.shutdown()
        try await fixture.tearDown()
    }
}
