import Foundation

/// What a ``CredentialStore`` tells a refresh provider when it asks for a new credential.
public struct CredentialRefreshRequest: Sendable, CustomStringConvertible {
    /// Why a new credential is needed; compare with the static members.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The scope has no credential yet (or it was removed).
        public static let missing = Reason("missing")
        /// The credential expired, or is about to.
        public static let expiring = Reason("expiring")
        /// The server rejected the credential (a 401); see ``CredentialStore/refreshAfterRejection(for:)``.
        public static let rejected = Reason("rejected")
        /// `missing`, `expiring` or `rejected`.
        public var description: String { self.name }
    }

    /// Why a new credential is needed.
    public let reason: Reason
    /// The scope the credential is for. Only URLs in this scope ever cause a refresh.
    public let scope: CredentialScope
    /// The request URL that needs the credential; always in ``scope``.
    public let url: URL
    /// The credential being replaced, if any (for its expiry; its secret may be read to exchange it).
    public let current: Credential?

    /// The reason and the scope; never a credential.
    public var description: String {
        "credential refresh (\(self.reason)) for \(self.scope)"
    }
}
