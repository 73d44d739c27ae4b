import BulwarkPolicy
import Foundation
import NIOCore

extension PolicyUpdater {
    /// Where a ``PolicyUpdater`` fetches bundles, whom it trusts to sign them, where it keeps them, and how it
    /// connects: fixed when the application is built, never changed by a bundle.
    public struct Configuration: Sendable {
        /// The bundle's `https` URL.
        public var url: String
        /// The keys trusted to sign bundles at first, and how many must; a verified key-rotation bundle replaces
        /// them (and the replacement is stored, so it holds after a restart).
        public var trustedKeys: PolicyTrustedKeys
        /// The directory where the last good bundle and the updater's state (the highest version accepted, the
        /// trusted keys) are kept; created when needed. Give each updater its own.
        public var directory: String
        /// How the updater fetches bundles: its own client configuration, with its own trust manager (pin the bundle
        /// server here). A bundle's policy never changes it.
        public var fetch: BulwarkClient.Configuration
        /// The largest bundle read (1 MiB by default); a larger one is refused with `too_large` after that many bytes,
        /// before anything is parsed.
        public var maximumBundleSize: Int = 1 << 20
        /// The time limit of one fetch, connection and body included.
        public var fetchTimeout: TimeAmount = .seconds(30)
        /// Whether a bundle whose policy sets `"insecure": true` is applied; off by default, so such a bundle is
        /// refused with `insecure_policy` however well it is signed.
        ///
        /// > Warning: With this on, whoever holds enough signing keys can turn certificate validation off for the
        /// > hosts a bundle names (the `disabled` evaluator) or let requests follow https-to-http redirects, on every
        /// > client that takes the bundle. The `policy_updated` event of such a bundle says so, and each use of an
        /// > insecure option emits its own event as usual.
        public var allowsInsecurePolicies: Bool = false
        /// What happens when the bundle in force expires and no newer one could be had: by default
        /// (``ExpiryBehavior/keepLastVerified``) its policy stays in force, with a `policy_stale` event each time
        /// expiry is checked.
        public var whenBundleExpires: ExpiryBehavior = .keepLastVerified
        /// The channel (audience) this updater takes bundles for, such as `production`; nil takes any. A bundle
        /// naming another channel, or none, is refused with `wrong_channel`.
        public var channel: String?

        /// An updater's configuration.
        ///
        /// - Parameters:
        ///   - url: The bundle's `https` URL.
        ///   - trustedKeys: The keys trusted to sign bundles at first, and their threshold.
        ///   - directory: Where the last good bundle and the updater's state are kept.
        ///   - fetch: The client configuration the updater fetches with (its own pinned trust manager).
        public init(url: String, trustedKeys: PolicyTrustedKeys, directory: String, fetch: BulwarkClient.Configuration)
        {
            self.url = url
            self.trustedKeys = trustedKeys
            self.directory = directory
            self.fetch = fetch
        }
    }

    /// What a ``PolicyUpdater`` does when the bundle in force expires and no newer bundle could be had.
    public struct ExpiryBehavior: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The last verified policy stays in force past its bundle's expiry, with a `policy_stale` warning (how
        /// long ago it expired) at each check: an attacker who withholds new bundles cannot undo a tightening.
        public static let keepLastVerified = ExpiryBehavior("keepLastVerified")
        /// The client's built-in policy applies again when the bundle in force expires (`policy_fallback:expired`).
        ///
        /// > Warning: An attacker who blocks the bundle URL until the bundle in force expires then undoes every
        /// > tightening it made (new pins, a narrower allowlist, revocation): use it only when the built-in policy
        /// > is at least as strict as every bundle.
        public static let fallBackToBuiltIn = ExpiryBehavior("fallBackToBuiltIn")

        /// The name.
        public var description: String { self.name }
    }

    /// What one ``PolicyUpdater/start()``, ``PolicyUpdater/update()`` or ``PolicyUpdater/install(_:)`` led to.
    public enum Outcome: Sendable, Hashable {
        /// The bundle of this version is in force now: a newer one was applied, or the stored one at start.
        case applied(version: UInt64)
        /// The bundle is the one in force already; nothing changed.
        case unchanged(version: UInt64)
        /// The bundle in force has expired and stays in force (``ExpiryBehavior/keepLastVerified``), with a
        /// `policy_stale` event: its version, and how many seconds ago it expired.
        case stale(version: UInt64, expiredFor: TimeInterval)
        /// No bundle is stored (at start): the client's built-in policy applies.
        case builtIn
        /// The bundle was refused, with an event; nothing changed.
        case refused(PolicyBundleRefusal)
        /// The client's built-in policy applies again, with an event: the bundle in force expired (freeze
        /// protection), or the stored bundle could not be used at start.
        case fellBack(PolicyBundleRefusal)
    }

    /// The updater's state.
    public struct Status: Sendable, Hashable {
        /// The version of the bundle in force; nil while the client's built-in policy applies.
        public var version: UInt64?
        /// The last day the bundle in force is valid (`YYYY-MM-DD`); nil for the built-in policy.
        public var expires: String?
        /// The keys whose signatures of the bundle in force verified.
        public var signers: [PolicyPublicKey]
        /// The highest version accepted so far, stored: an older bundle is a rollback, even after a restart.
        public var highestVersion: UInt64?
        /// The keys trusted to sign the next bundle, and their threshold.
        public var trustedKeys: PolicyTrustedKeys
    }
}
