import BulwarkPolicy
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Keeps a client's policy up to date from signed policy bundles (see ``/BulwarkPolicy/PolicyBundle``), with the
/// protections of The Update Framework: signatures by a threshold of trusted keys, no rollback, no freeze, atomic
/// storage.
///
/// ```swift
/// let updater = PolicyUpdater(client: client, configuration: .init(
///     url: "https://policy.example.com/bulwark-bundle.json",
///     trustedKeys: try PolicyTrustedKeys(fileContents: trustedKeyLines, threshold: 2),
///     directory: applicationSupport + "/bulwark-policy",
///     fetch: .init(trust: try ServerTrustManager(evaluators: ["policy.example.com": .publicKeys(pins)]))
/// ))
/// updater.start()              // the stored bundle, verified again, or the built-in policy
/// await updater.update()       // then now and then: fetch, verify, store, apply
/// ```
///
/// - **Its own connection policy**: bundles are fetched with a client of the updater's own
///   (``Configuration/fetch``, fixed when the application is built, where the bundle server is pinned). A bundle's
///   policy applies to the application's client only, never to how the next bundle is fetched.
/// - **Verification**: ``/BulwarkPolicy/PolicyBundleVerifier`` with the trusted keys and threshold; a bundle that
///   carries a new trusted-key set (signed by the current threshold) replaces the keys, and the replacement is
///   stored.
/// - **No rollback**: the highest version accepted and the digest of its payload are stored; an older bundle is
///   refused (`rollback`), and so is another payload at that version (`version_reused`), also after a restart and
///   before ``start()`` (every entry point loads what is stored first).
/// - **Freeze**: an expired bundle is refused (`expired`). When the bundle in force expires (checked at ``start()``,
///   at every ``update()`` and ``checkExpiry()``), by default its policy stays in force with a `policy_stale` event
///   (``ExpiryBehavior/keepLastVerified``): a network attacker who withholds new bundles cannot undo a tightening by
///   waiting for the expiry. ``ExpiryBehavior/fallBackToBuiltIn`` applies the built-in policy instead.
/// - **Atomic storage**: the bundle is stored (temporary file in the same directory, synced, renamed, directory
///   synced) before it is applied; a crash at any point leaves the previous bundle in force at the next start.
/// - **Live application**: the policy applies to the client at once, without a restart (see
///   ``BulwarkClient/policyBundleVersion``): requests that start afterwards run under it, requests already running
///   keep the policy they started with (one or the other, never a mix), and pooled connections made under the old
///   policy are drained, never reused. The trust manager (host patterns, evaluators, pins), the allowlist and the
///   redirect policy apply live; the minimum TLS version, client certificates and credential scopes of a bundle's
///   policy do not (they take effect when a client is made from the policy file).
///
/// Every outcome is an event on the client's monitor: `policy_updated` (version, expiry, signers' public keys,
/// connections drained), `policy_update_refused` with the refusal's code as reason (`policy_update_refused:rollback`),
/// `policy_stale` while an expired bundle stays in force, `policy_fallback` when the built-in policy applies again.
/// Nothing secret is in them.
public final class PolicyUpdater: Sendable {
    /// What the updater keeps between calls.
    struct State: Sendable {
        var trustedKeys: PolicyTrustedKeys
        var highestVersion: UInt64?
        /// The SHA-256 of the signed payload accepted at ``highestVersion``, when known.
        var highestVersionPayloadSHA256: String?
        /// The bundle in force (nil: the built-in policy) and its exact bytes.
        var inForce: PolicyBundleVerifier.Verified?
        var inForceBytes: [UInt8]?
        /// Whether what is stored was loaded, by ``start()`` or by the first entry point called before it.
        var loaded = false
        /// Why the stored trusted keys could not be read, when they could not: nothing is installed then (the
        /// configured keys may be ones a rotation removed).
        var unreadableStoredKeys: String?
    }

    /// A verified bundle's policy, decoded and checked, ready to apply.
    private struct Prepared {
        var live: LivePolicy
        var notLive: [String]
        var insecure: Bool
    }

    private let client: BulwarkClient
    /// The updater's own client, for fetching bundles.
    private let fetcher: BulwarkClient
    let configuration: Configuration
    private let storage: PolicyUpdaterStorage
    private let state: NIOLockedValueBox<State>
    /// Held through each verify-store-apply, so that updates apply in order.
    private let serial = NIOLock()
    /// The time the updater checks expiry against; nil for the clock (tests set it).
    let fixedNow = NIOLockedValueBox<Date?>(nil)
    /// A simulated crash while storing (tests set it).
    let storageFault = NIOLockedValueBox<PolicyUpdaterStorage.Fault?>(nil)

    /// An updater for `client`. It reads and changes nothing until ``start()``, or until the first ``install(_:)``,
    /// ``update()`` or ``checkExpiry()``, which load what is stored first (as ``start()`` does).
    ///
    /// - Parameters:
    ///   - client: The client whose policy the bundles replace; its built-in policy is the one it was made with.
    ///   - configuration: Where bundles come from, whom to trust, where to keep them, how to fetch them.
    ///   - eventLoopGroup: The event loops of the updater's own fetching client.
    public init(
        client: BulwarkClient,
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.client = client
        self.configuration = configuration
        self.fetcher = BulwarkClient(configuration: configuration.fetch, eventLoopGroup: eventLoopGroup)
        self.storage = PolicyUpdaterStorage(directory: configuration.directory)
        self.state = NIOLockedValueBox(State(trustedKeys: configuration.trustedKeys))
    }

    /// The bundle in force, the highest version accepted and the trusted keys.
    public var status: Status {
        self.state.withLockedValue { state in
            Status(
                version: state.inForce?.bundle.version,
                expires: state.inForce?.bundle.expires,
                signers: state.inForce?.signers ?? [],
                highestVersion: state.highestVersion,
                trustedKeys: state.trustedKeys
            )
        }
    }

    private var now: Date { self.fixedNow.withLockedValue { $0 } ?? Date() }

    /// Loads what is stored: removes temporary files a crash left, reads the stored trusted keys, highest version
    /// and its payload's digest, verifies the stored bundle again and applies it. A stored bundle that expired is
    /// applied too when its signatures verify (``Configuration/whenBundleExpires``, by default), with a
    /// `policy_stale` event; one that no longer verifies, or an expired one under
    /// ``ExpiryBehavior/fallBackToBuiltIn``, leaves the client's built-in policy in force (``Outcome/fellBack(_:)``,
    /// with a `policy_fallback` event); its version still counts against rollback when its signatures verify.
    @discardableResult
    public func start() -> Outcome {
        self.serial.withLock { self.load() }
    }

    /// What ``start()`` does. Under `serial`.
    private func load() -> Outcome {
        self.state.withLockedValue { $0.loaded = true }
        self.storage.removeTemporaryFiles()
        let stored = self.storage.readState()
        if let stored {
            // The highest version holds even when the stored keys cannot be read (the configured keys then apply).
            self.state.withLockedValue { state in
                if let keys = stored.keys {
                    state.trustedKeys = keys
                    state.unreadableStoredKeys = nil
                } else {
                    state.unreadableStoredKeys =
                        "the trusted keys stored in \(self.storage.statePath) cannot be read (a damaged file, or a "
                        + "key that is refused today); no bundle is installed until the file is fixed or removed, "
                        + "since the configured keys may be keys a rotation removed"
                }
                if stored.highestVersion > state.highestVersion ?? 0 {
                    state.highestVersion = stored.highestVersion
                    state.highestVersionPayloadSHA256 = stored.highestVersionPayloadSHA256
                } else if stored.highestVersion == state.highestVersion, state.highestVersionPayloadSHA256 == nil {
                    state.highestVersionPayloadSHA256 = stored.highestVersionPayloadSHA256
                }
            }
        }
        guard let bytes = self.storage.readBundle(maximumSize: self.configuration.maximumBundleSize) else {
            return .builtIn
        }
        let (keys, inForce) = self.state.withLockedValue { ($0.trustedKeys, $0.inForce) }
        if let inForce, bytes == self.state.withLockedValue({ $0.inForceBytes }) {
            // Started before: the stored bundle is the one in force.
            return self.staleness(of: inForce) ?? .unchanged(version: inForce.bundle.version)
        }
        // The current keys first (a crash between storing the bundle and the state leaves a bundle they signed),
        // then the keys the stored bundle was verified with (a rotation bundle is signed by the keys it replaced).
        var candidates = [keys]
        if let bundleKeys = stored?.bundleKeys, bundleKeys != keys { candidates.append(bundleKeys) }
        var firstRefusal: PolicyBundleRefusal?
        for candidate in candidates {
            let verifier = self.verifier(keys: candidate)
            switch verifier.verify(bytes, at: self.now) {
            case .success(let verified):
                return self.applyStored(verified, bytes: bytes, verifiedWith: candidate)
            case .failure(let refusal) where refusal.reason == .expired:
                guard case .success(let old) = verifier.verify(bytes, at: .distantPast) else {
                    firstRefusal = firstRefusal ?? refusal
                    continue
                }
                // Its signatures verify: its version still counts against rollback.
                self.raiseHighestVersion(to: old)
                if self.configuration.whenBundleExpires == .keepLastVerified {
                    return self.applyStored(old, bytes: bytes, verifiedWith: candidate)
                }
                return self.fallBack(refusal)
            case .failure(let refusal):
                firstRefusal = firstRefusal ?? refusal
            }
        }
        return self.fallBack(firstRefusal ?? PolicyBundleRefusal(.malformed, "the stored bundle cannot be read"))
    }

    /// Applies the stored bundle at start, then reports whether it is stale. Under `serial`.
    private func applyStored(
        _ verified: PolicyBundleVerifier.Verified,
        bytes: [UInt8],
        verifiedWith: PolicyTrustedKeys
    ) -> Outcome {
        let prepared: Prepared
        switch self.prepare(verified, accepting: false) {
        case .success(let ready): prepared = ready
        case .failure(let refusal): return self.fallBack(refusal)
        }
        return self.apply(verified, prepared, bytes: bytes, verifiedWith: verifiedWith, atStart: true)
    }

    /// Takes what is stored when it is ahead of what this updater holds (a higher version, and the keys stored with
    /// it): another updater of the same directory accepted it. Never goes back. Under `serial`.
    private func catchUpWithStorage() {
        guard let stored = self.storage.readState() else { return }
        self.state.withLockedValue { state in
            guard stored.highestVersion > state.highestVersion ?? 0 else { return }
            state.highestVersion = stored.highestVersion
            state.highestVersionPayloadSHA256 = stored.highestVersionPayloadSHA256
            if let keys = stored.keys {
                state.trustedKeys = keys
            } else {
                state.unreadableStoredKeys =
                    "the trusted keys stored in \(self.storage.statePath) cannot be read; no bundle is installed "
                    + "until the file is fixed or removed"
            }
        }
    }

    /// Loads what is stored, once, when an entry point is called before ``start()``. Under `serial`.
    private func loadIfNeeded() {
        if !self.state.withLockedValue({ $0.loaded }) { _ = self.load() }
    }

    /// Fetches the bundle with the updater's own client, then ``install(_:)``s it; then, if no newer bundle was
    /// applied, checks the expiry of the one in force (``checkExpiry()``).
    ///
    /// A fetch that fails (no connection, a server the updater's policy does not trust, a status other than 200)
    /// is refused with `fetch_failed`; a body larger than ``Configuration/maximumBundleSize`` with `too_large`,
    /// after reading one byte more than the limit.
    @discardableResult
    public func update() async -> Outcome {
        self.serial.withLock { self.loadIfNeeded() }
        let outcome: Outcome
        switch await self.fetch() {
        case .success(let bytes): outcome = self.install(bytes)
        case .failure(let refusal): outcome = self.refuse(refusal)
        }
        if case .applied = outcome { return outcome }
        return self.checkExpiry() ?? outcome
    }

    /// Verifies `bytes` as a bundle, stores it, and applies its policy to the client: what ``update()`` does with
    /// what it fetched, for bundles delivered another way. A refused bundle changes nothing and is reported with a
    /// `policy_update_refused` event. The same signed payload as the bundle in force (even with other signatures) is
    /// ``Outcome/unchanged(version:)``: nothing stored, nothing drained, no event.
    ///
    /// The files the bundle's policy names are read outside the updater's lock; the bundle is then verified again
    /// against the state of that moment, so updates still apply in order.
    @discardableResult
    public func install(_ bytes: [UInt8]) -> Outcome {
        let first: Result<PolicyBundleVerifier.Verified, PolicyBundleRefusal> = self.serial.withLock {
            self.loadIfNeeded()
            if let problem = self.state.withLockedValue({ $0.unreadableStoredKeys }) {
                return .failure(PolicyBundleRefusal(.storageFailed, problem))
            }
            return self.verifier(keys: self.state.withLockedValue { $0.trustedKeys }).verify(bytes, at: self.now)
        }
        let verified: PolicyBundleVerifier.Verified
        switch first {
        case .failure(let refusal): return self.refuse(refusal)
        case .success(let value): verified = value
        }
        if let unchanged = self.unchanged(verified) { return unchanged }
        let prepared: Prepared
        switch self.prepare(verified) {
        case .failure(let refusal): return self.refuse(refusal)
        case .success(let ready): prepared = ready
        }
        return self.serial.withLock {
            // Another updater of the same directory (another process) may have gone further since this one loaded:
            // under the directory's lock, what is stored is read again, and never gone back on.
            self.storage.withDirectoryLock {
                self.catchUpWithStorage()
                if let problem = self.state.withLockedValue({ $0.unreadableStoredKeys }) {
                    return self.refuse(PolicyBundleRefusal(.storageFailed, problem))
                }
                let keys = self.state.withLockedValue { $0.trustedKeys }
                switch self.verifier(keys: keys).verify(bytes, at: self.now) {
                case .failure(let refusal):
                    return self.refuse(refusal)
                case .success(let again):
                    if let unchanged = self.unchanged(again) { return unchanged }
                    return self.apply(again, prepared, bytes: bytes, verifiedWith: keys, atStart: false)
                }
            }
        }
    }

    /// ``Outcome/unchanged(version:)`` when `verified` signs the same payload as the bundle in force.
    private func unchanged(_ verified: PolicyBundleVerifier.Verified) -> Outcome? {
        let inForce = self.state.withLockedValue { $0.inForce }
        guard let inForce, inForce.payloadSHA256 == verified.payloadSHA256 else { return nil }
        return .unchanged(version: inForce.bundle.version)
    }

    /// Checks whether the bundle in force has expired: if so, by default (``ExpiryBehavior/keepLastVerified``) it
    /// stays in force with a `policy_stale` event (``Outcome/stale(version:expiredFor:)``); under
    /// ``ExpiryBehavior/fallBackToBuiltIn`` the client's built-in policy applies again. Nil when it has not expired.
    /// ``update()`` calls it; call it on a timer too if updates are rare.
    @discardableResult
    public func checkExpiry() -> Outcome? {
        self.serial.withLock {
            self.loadIfNeeded()
            guard let inForce = self.state.withLockedValue({ $0.inForce }), self.now >= inForce.expiresAt else {
                return nil
            }
            if self.configuration.whenBundleExpires == .keepLastVerified {
                return self.staleness(of: inForce)
            }
            return self.fallBack(
                PolicyBundleRefusal(
                    .expired,
                    "the bundle in force (version \(inForce.bundle.version)) expired at the end of "
                        + inForce.bundle.expires
                )
            )
        }
    }

    /// Shuts the updater's own fetching client down. The application's client is not touched.
    public func shutdown() async {
        await self.fetcher.shutdown()
    }

    // MARK: - Steps

    /// A verifier under `keys`, with the highest version, its payload's digest and the channel.
    private func verifier(keys: PolicyTrustedKeys) -> PolicyBundleVerifier {
        let (highest, digest) = self.state.withLockedValue { ($0.highestVersion, $0.highestVersionPayloadSHA256) }
        var verifier = PolicyBundleVerifier(trustedKeys: keys, highestVersion: highest)
        verifier.highestVersionPayloadSHA256 = digest
        verifier.channel = self.configuration.channel
        verifier.maximumSize = self.configuration.maximumBundleSize
        return verifier
    }

    /// Counts an expired stored bundle's version against rollback.
    private func raiseHighestVersion(to verified: PolicyBundleVerifier.Verified) {
        self.state.withLockedValue { state in
            if verified.bundle.version > state.highestVersion ?? 0 {
                state.highestVersion = verified.bundle.version
                state.highestVersionPayloadSHA256 = verified.payloadSHA256
            }
        }
    }

    /// ``Outcome/stale(version:expiredFor:)`` with a `policy_stale` event when `inForce` has expired; nil when not.
    private func staleness(of inForce: PolicyBundleVerifier.Verified) -> Outcome? {
        let expiredFor = self.now.timeIntervalSince(inForce.expiresAt)
        guard expiredFor >= 0 else { return nil }
        self.record(Self.staleEvent(inForce, expiredFor: expiredFor))
        return .stale(version: inForce.bundle.version, expiredFor: expiredFor)
    }

    /// Decodes the verified bundle's policy (reading the files it names) and checks it: a policy that is not a valid
    /// policy file is `invalid_policy`; one with a lint error (``/BulwarkPolicy/PolicyLintRule/requiresInsecure``)
    /// without `"insecure": true`, or with it while the configuration does not allow insecure policies, is
    /// `insecure_policy`.
    ///
    /// A stored bundle applied again at start (`accepting` false) is not judged by the rules that change with the
    /// date (BWP003, a pin set past its `expires`): it was judged when it was accepted, a pin set's expiry lapses
    /// enforcement by design, and refusing it at a restart would drop the last verified policy for the built-in one.
    private func prepare(
        _ verified: PolicyBundleVerifier.Verified,
        accepting: Bool = true
    ) -> Result<Prepared, PolicyBundleRefusal> {
        let bundle = verified.bundle
        let file: PolicyFile
        let live: LivePolicy
        do {
            file = try PolicyFile(jsonBytes: bundle.policy, baseDirectory: nil)
            live = try LivePolicy(
                file: file,
                over: self.client.policies.builtIn,
                generation: 0,
                bundleVersion: bundle.version
            )
        } catch {
            return .failure(
                PolicyBundleRefusal(
                    .invalidPolicy,
                    "the policy in bundle version \(bundle.version) is not a valid policy file: \(error)"
                )
            )
        }
        let findings = PolicyLinter(now: self.now).findingsRequiringInsecure(in: file)
            .filter { accepting || $0.rule != .pinSetExpired }
        if !findings.isEmpty {
            return .failure(
                PolicyBundleRefusal(
                    .insecurePolicy,
                    "the policy in bundle version \(bundle.version) weakens trust without saying \"insecure\": true: "
                        + findings.map { "\($0.rule) at \($0.pointer) (\($0.message))" }.joined(separator: "; ")
                )
            )
        }
        if file.insecure && !self.configuration.allowsInsecurePolicies {
            return .failure(
                PolicyBundleRefusal(
                    .insecurePolicy,
                    "the policy in bundle version \(bundle.version) sets \"insecure\": true, which can turn "
                        + "certificate validation off; this updater accepts such a policy only when its configuration "
                        + "allows insecure policies"
                )
            )
        }
        return .success(Prepared(live: live, notLive: LivePolicy.notLive(in: file), insecure: file.insecure))
    }

    /// Stores the verified bundle (unless it is the stored one, at start), applies its prepared policy, and reports
    /// it. Under `serial`.
    private func apply(
        _ verified: PolicyBundleVerifier.Verified,
        _ prepared: Prepared,
        bytes: [UInt8],
        verifiedWith: PolicyTrustedKeys,
        atStart: Bool
    ) -> Outcome {
        let bundle = verified.bundle
        let (keys, highest, highestDigest) = self.state.withLockedValue {
            ($0.trustedKeys, $0.highestVersion, $0.highestVersionPayloadSHA256)
        }
        let nextKeys = bundle.trustedKeys ?? keys
        let nextHighest = max(highest ?? 0, bundle.version)
        let nextDigest = bundle.version >= highest ?? 0 ? verified.payloadSHA256 : highestDigest
        let stored = PolicyUpdaterStorage.State(
            highestVersion: nextHighest,
            highestVersionPayloadSHA256: nextDigest,
            trustedKeys: nextKeys,
            bundleVerifiedWith: verifiedWith
        )
        if !atStart || bundle.trustedKeys != nil || highest != nextHighest || highestDigest != nextDigest {
            do throws(PolicyUpdaterStorage.WriteError) {
                if atStart {
                    // Completes what a crash between the bundle and the state left undone.
                    try self.storage.write(bundle: bytes, state: stored, fault: nil)
                } else {
                    try self.storage.write(
                        bundle: bytes,
                        state: stored,
                        fault: self.storageFault.withLockedValue { $0 }
                    )
                }
            } catch {
                let refusal = PolicyBundleRefusal(
                    .storageFailed,
                    "bundle version \(bundle.version) could not be stored, so it was not applied: \(error)"
                )
                if !atStart { return self.refuse(refusal) }
            }
        }
        self.state.withLockedValue { state in
            state.trustedKeys = nextKeys
            state.highestVersion = nextHighest
            state.highestVersionPayloadSHA256 = nextDigest
            state.inForce = verified
            state.inForceBytes = bytes
        }
        let (_, drained) = self.client.replacePolicy(with: prepared.live)
        self.record(
            Self.updatedEvent(
                verified,
                drained: drained,
                atStart: atStart,
                rotated: bundle.trustedKeys,
                notLive: prepared.notLive,
                insecure: prepared.insecure
            )
        )
        if atStart { _ = self.staleness(of: verified) }
        return .applied(version: bundle.version)
    }

    /// Reports a refused bundle; nothing changes.
    private func refuse(_ refusal: PolicyBundleRefusal) -> Outcome {
        self.record(Self.refusedEvent(refusal, host: URL(string: self.configuration.url)?.host))
        return .refused(refusal)
    }

    /// Applies the client's built-in policy again and reports why. Under `serial`.
    private func fallBack(_ refusal: PolicyBundleRefusal) -> Outcome {
        let previous = self.state.withLockedValue { state -> UInt64? in
            defer {
                state.inForce = nil
                state.inForceBytes = nil
            }
            return state.inForce?.bundle.version
        }
        let (_, drained) = self.client.replacePolicy(
            with: LivePolicy(builtIn: self.client.policies.builtIn, generation: 0)
        )
        self.record(Self.fallbackEvent(refusal, previousVersion: previous, drained: drained))
        return .fellBack(refusal)
    }

    /// The bundle's bytes, read with the updater's own client, or why not.
    private func fetch() async -> Result<[UInt8], PolicyBundleRefusal> {
        let limit = self.configuration.maximumBundleSize
        do {
            let response = try await self.fetcher.execute(
                BulwarkRequest(url: self.configuration.url),
                timeout: self.configuration.fetchTimeout
            )
            guard response.status == .ok else {
                return .failure(
                    PolicyBundleRefusal(.fetchFailed, "the bundle server answered \(response.status.code), not 200")
                )
            }
            var bytes: [UInt8] = []
            for try await buffer in response.body {
                bytes += buffer.readableBytesView
                if bytes.count > limit {
                    return .failure(
                        PolicyBundleRefusal(.tooLarge, "the bundle is larger than the limit of \(limit) bytes")
                    )
                }
            }
            return .success(bytes)
        } catch {
            return .failure(PolicyBundleRefusal(.fetchFailed, "the bundle could not be fetched: \(error)"))
        }
    }

    private func record(_ event: SecurityEvent) {
        self.client.baseConfiguration.eventMonitor.record(event)
    }
}
