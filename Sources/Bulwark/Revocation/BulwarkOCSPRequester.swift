import BulwarkPolicy
import X509

/// Bulwark's revocation transport as swift-certificates' `OCSPRequester`, for code that validates chains with
/// swift-certificates' `Verifier` and its `OCSPVerifierPolicy`: the same plain-`http://` fetch, timeout, size cap and
/// same-origin redirects as ``HTTPRevocationFetcher``, GET when the request fits in 255 bytes, POST otherwise.
///
/// Bulwark's own ``/BulwarkPolicy/RevocationTrustEvaluator`` does not use `OCSPVerifierPolicy` (it verifies responses
/// itself, to report each certificate's status and to cache answers); this type serves users of swift-certificates
/// directly, and lets the tests compare both verifiers on the same responder.
public struct BulwarkOCSPRequester: OCSPRequester {
    /// The transport.
    public var fetcher: HTTPRevocationFetcher
    /// Whether a failed query fails verification (`terminalError`). With `false` it is `nonTerminalError`, which
    /// `OCSPVerifierPolicy` treats as a pass even in its hard mode.
    ///
    /// > Warning: `false` lets a blocked or unreachable responder turn every check into a pass.
    public var failuresAreTerminal: Bool

    /// A requester over `fetcher` whose failed queries fail verification unless `failuresAreTerminal` is false.
    public init(fetcher: HTTPRevocationFetcher = .shared, failuresAreTerminal: Bool = true) {
        self.fetcher = fetcher
        self.failuresAreTerminal = failuresAreTerminal
    }

    /// Sends the DER OCSP `request` to the responder at `uri` (GET when it fits in 255 bytes, POST otherwise) and
    /// returns the response bytes, or a terminal or non-terminal error as ``failuresAreTerminal`` says.
    public func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
        let maximum = RevocationTrustEvaluator.maximumOCSPResponseSize
        let fetch =
            if let url = OCSPRequest.getURL(for: request, responder: uri) {
                RevocationFetchRequest(kind: .ocsp, url: url, maximumResponseSize: maximum)
            } else {
                RevocationFetchRequest(kind: .ocsp, url: uri, body: request, maximumResponseSize: maximum)
            }
        do {
            return .response(try await self.fetcher.fetch(fetch))
        } catch {
            return self.failuresAreTerminal ? .terminalError(error) : .nonTerminalError(error)
        }
    }
}
