import Bulwark
import Foundation

/// What the documentation's samples take from the text around them: a login service that makes new credentials.
///
/// The samples of README.md and of the documentation catalogs are functions of this target. A sample's parameters
/// are the values its text speaks of without making them (a `configuration`, a `client`, an identity), so that the
/// code between its `// docs:begin` and `// docs:end` lines is exactly the block a reader sees.
protocol LoginService: Sendable {
    /// Makes a new credential for the scope and URL of `request`.
    func refresh(_ request: CredentialRefreshRequest) async throws -> Credential
}

/// A login service that hands out one fixed bearer token, for the samples that run.
struct FixedTokenLogin: LoginService {
    let token: String

    func refresh(_ request: CredentialRefreshRequest) async throws -> Credential {
        try .bearer(SecretBytes(utf8: self.token))
    }
}
