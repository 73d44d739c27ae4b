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
/// - **No rollback**: the highest version accepted is stored; an older bundle is refused (`rollback`), also after a
///   restart.
/// - **No freeze**: an expired bundle is refused (`expired`); when the bundle in force expires (checked at
///   ``start()`` and at every ``update()``), the client's built-in policy applies again, with a `policy_fallback`
///   event: a network attacker who withholds new bundles cannot keep an old policy in force past its expiry.
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
/// `policy_fallback` when the built-in policy applies again. Nothing secret is in them.
public final class PolicyUpdater: Sendable {
    /// What the updater keeps between calls.
    struct State: Sendable {
        var trustedKeys: PolicyTrustedKeys
        var highestVersion: UInt64?
        /// The bundle in force (nil: the built-in policy) and its exact bytes.
        var inForce: PolicyBundleVerifier.Verified?
        var inForceBytes: [UInt8]?
    }

    private let client: BulwarkClient
    /// The updater's own client, for fetching bundles.
    private let fetcher: BulwarkClient
    private let configuration: Configuration
    private let storage: PolicyUpdaterStorage
    private let state: NIOLockedValueBox<State>
    /// Held through each verify-store-apply, so that updates apply in order.
    private let serial = NIOLock()
    /// The time the updater checks expiry against; nil for the clock (tests set it).
    let fixedNow = NIOLockedValueBox<Date?>(nil)
    /// A simulated crash while storing (tests set it).
    let storageFault = NIOLockedValueBox<PolicyUpdaterStorage.Fault?>(nil)

    /// An updater for `client`. It reads and changes nothing until ``start()``.
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

    /// Loads what is stored: removes temporary files a crash left, reads the stored trusted keys and highest version,
    /// verifies the stored bundle again and applies it. An expired stored bundle, or one that no longer verifies,
    /// leaves the client's built-in policy in force (``Outcome/fellBack(_:)``, with a `policy_fallback` event); its
    /// version still counts against rollback when its signatures verify.
    @discardableResult
    public func start() -> Outcome {
        self.serial.withLock {
            self.storage.removeTemporaryFiles()
            let stored = self.storage.readState()
            if let stored, let keys = stored.keys {
                self.state.withLockedValue { state in
                    state.trustedKeys = keys
                    state.highestVersion = max(state.highestVersion ?? 0, stored.highestVersion)
                }
            }
            guard let bytes = self.storage.readBundle(maximumSize: self.configuration.maximumBundleSize) else {
                return .builtIn
            }
            let (keys, highest, inForce) = self.state.withLockedValue {
                ($0.trustedKeys, $0.highestVersion, $0.inForce)
            }
            if let inForce, bytes == self.state.withLockedValue({ $0.inForceBytes }), self.now < inForce.expiresAt {
                // Started before: the stored bundle is the one in force.
                return .unchanged(version: inForce.bundle.version)
            }
            // The current keys first (a crash between storing the bundle and the state leaves a bundle they signed),
            // then the keys the stored bundle was verified with (a rotation bundle is signed by the keys it replaced).
            var candidates = [keys]
            if let bundleKeys = stored?.bundleKeys, bundleKeys != keys { candidates.append(bundleKeys) }
            var firstRefusal: PolicyBundleRefusal?
            for candidate in candidates {
                var verifier = PolicyBundleVerifier(trustedKeys: candidate, highestVersion: highest)
                verifier.maximumSize = self.configuration.maximumBundleSize
                switch verifier.verify(bytes, at: self.now) {
                case .success(let verified):
                    return self.apply(verified, bytes: bytes, verifiedWith: candidate, atStart: true)
                case .failure(let refusal) where refusal.reason == .expired:
                    if case .success(let old) = verifier.verify(bytes, at: .distantPast) {
                        // Its signatures verify: its version still counts against rollback.
                        self.state.withLockedValue {
                            $0.highestVersion = max($0.highestVersion ?? 0, old.bundle.version)
                        }
                    }
                    return self.fallBack(refusal)
                case .failure(let refusal):
                    firstRefusal = firstRefusal ?? refusal
                }
            }
            return self.fallBack(firstRefusal ?? PolicyBundleRefusal(.malformed, "the stored bundle cannot be read"))
        }
    }

    /// Fetches the bundle with the updater's own client, then ``install(_:)``s it; then, if no newer bundle was
    /// applied and the one in force has expired, falls back to the client's built-in policy.
    ///
    /// A fetch that fails (no connection, a server the updater's policy does not trust, a status other than 200)
    /// is refused with `fetch_failed`; a body larger than ``Configuration/maximumBundleSize`` with `too_large`,
    /// after reading one byte more than the limit.
    @discardableResult
    public func update() async -> Outcome {
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
    /// `policy_update_refused` event.
    @discardableResult
    public func install(_ bytes: [UInt8]) -> Outcome {
        self.serial.withLock {
            let (keys, highest, inForceBytes) = self.state.withLockedValue {
                ($0.trustedKeys, $0.highestVersion, $0.inForceBytes)
            }
            var verifier = PolicyBundleVerifier(trustedKeys: keys, highestVersion: highest)
            verifier.maximumSize = self.configuration.maximumBundleSize
            switch verifier.verify(bytes, at: self.now) {
            case .failure(let refusal):
                return self.refuse(refusal)
            case .success(let verified):
                if bytes == inForceBytes { return .unchanged(version: verified.bundle.version) }
                return self.apply(verified, bytes: bytes, verifiedWith: keys, atStart: false)
            }
        }
    }

    /// Falls back to the client's built-in policy if the bundle in force has expired; the outcome then, or nil when
    /// nothing changed. ``update()`` calls it; call it on a timer too if updates are rare.
    @discardableResult
    public func checkExpiry() -> Outcome? {
        self.serial.withLock {
            guard let inForce = self.state.withLockedValue({ $0.inForce }), self.now >= inForce.expiresAt else {
                return nil
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

    /// Decodes the verified bundle's policy, stores the bundle (unless it is the stored one, at start), applies it,
    /// and reports it. Under `serial`.
    private func apply(
        _ verified: PolicyBundleVerifier.Verified,
        bytes: [UInt8],
        verifiedWith: PolicyTrustedKeys,
        atStart: Bool
    ) -> Outcome {
        let bundle = verified.bundle
        let live: LivePolicy
        let notLive: [String]
        let insecure: Bool
        do {
            let file = try PolicyFile(jsonBytes: bundle.policy, baseDirectory: nil)
            insecure = file.insecure
            notLive = LivePolicy.notLive(in: file)
            live = try LivePolicy(
                file: file,
                over: self.client.policies.builtIn,
                generation: 0,
                bundleVersion: bundle.version
            )
        } catch {
            let refusal = PolicyBundleRefusal(
                .invalidPolicy,
                "the policy in bundle version \(bundle.version) is not a valid policy file: \(error)"
            )
            return atStart ? self.fallBack(refusal) : self.refuse(refusal)
        }
        if insecure && !self.configuration.allowsInsecurePolicies {
            let refusal = PolicyBundleRefusal(
                .insecurePolicy,
                "the policy in bundle version \(bundle.version) sets \"insecure\": true, which can turn certificate "
                    + "validation off; this updater accepts such a policy only when its configuration allows insecure "
                    + "policies"
            )
            return atStart ? self.fallBack(refusal) : self.refuse(refusal)
        }
        let (keys, highest) = self.state.withLockedValue { ($0.trustedKeys, $0.highestVersion) }
        let nextKeys = bundle.trustedKeys ?? keys
        let nextHighest = max(highest ?? 0, bundle.version)
        let stored = PolicyUpdaterStorage.State(
            highestVersion: nextHighest,
            trustedKeys: nextKeys,
            bundleVerifiedWith: verifiedWith
        )
        if !atStart || bundle.trustedKeys != nil || highest != nextHighest {
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
            state.inForce = verified
            state.inForceBytes = bytes
        }
        let (_, drained) = self.client.replacePolicy(with: live)
        self.record(
            Self.updatedEvent(
                verified,
                drained: drained,
                atStart: atStart,
                rotated: bundle.trustedKeys,
                notLive: notLive,
                insecure: insecure
            )
        )
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
