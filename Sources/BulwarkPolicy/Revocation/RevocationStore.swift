import Foundation
import X509

/// The revocation data a client consults, shared by every connection of the clients whose trust evaluators use it:
/// lists the application loaded (for fleets without network access), lists fetched from distribution points, and
/// verified OCSP answers.
///
/// Everything is bounded: at most ``capacity`` loaded issuers, ``capacity`` fetched lists and ``capacity`` OCSP
/// answers, the least recently used forgotten first. A fetched list or OCSP answer is kept until its `nextUpdate`
/// (a revoked answer too, so that a refusal costs no more than a cache hit). Fetches of the same thing by concurrent
/// handshakes are coalesced into one. The store does no I/O itself.
public final class RevocationStore: Sendable {
    /// How many entries of each kind are kept at most.
    public let capacity: Int
    private let loaded: LockedValue<LeastRecentlyUsed<DistinguishedName, CertificateRevocationList>>
    private let fetched: LockedValue<LeastRecentlyUsed<String, CertificateRevocationList>>
    private let answers: LockedValue<LeastRecentlyUsed<OCSPCertificateID, RevocationStatus>>
    private let inFlight: LockedValue<[String: Task<any Sendable, Never>]>

    /// An empty store keeping at most `capacity` entries of each kind.
    public init(capacity: Int = 1_024) {
        self.capacity = capacity
        self.loaded = LockedValue(LeastRecentlyUsed(capacity: capacity))
        self.fetched = LockedValue(LeastRecentlyUsed(capacity: capacity))
        self.answers = LockedValue(LeastRecentlyUsed(capacity: capacity))
        self.inFlight = LockedValue([:])
    }

    /// Adds a parsed list; an older list of the same issuer is replaced, a list older than the one kept is ignored.
    public func load(_ list: CertificateRevocationList) {
        self.loaded.withLock { lists in
            if let kept = lists.value(forKey: list.issuer), kept.thisUpdate > list.thisUpdate { return }
            lists.insert(list, forKey: list.issuer)
        }
    }

    /// Parses and adds a list from its DER bytes or a PEM `X509 CRL` block.
    ///
    /// - Throws: ``RevocationError`` when the bytes are not a list Bulwark can use (the store is unchanged).
    public func load(
        crl bytes: [UInt8],
        maximumSize: Int = CertificateRevocationList.defaultMaximumSize
    )
        throws(RevocationError)
    {
        self.load(try Self.parseList(bytes, maximumSize: maximumSize))
    }

    /// The list loaded for `issuer`, if any.
    public func list(issuedBy issuer: DistinguishedName) -> CertificateRevocationList? {
        self.loaded.withLock { $0.value(forKey: issuer) }
    }

    /// The number of issuers with a loaded list.
    public var count: Int { self.loaded.withLock { $0.count } }

    /// The list last fetched from `url`, if it is still kept.
    public func list(fetchedFrom url: String) -> CertificateRevocationList? {
        self.fetched.withLock { $0.value(forKey: url) }
    }

    /// Keeps a list fetched from `url` (a newer one replaces it).
    public func store(_ list: CertificateRevocationList, fetchedFrom url: String) {
        self.fetched.withLock { lists in
            if let kept = lists.value(forKey: url), kept.thisUpdate > list.thisUpdate { return }
            lists.insert(list, forKey: url, evictingFirst: { ($0.nextUpdate ?? .distantPast) < Date() })
        }
    }

    /// The number of fetched lists kept.
    public var fetchedCount: Int { self.fetched.withLock { $0.count } }

    /// The verified OCSP answer kept for `certificateID`, if it is still current at `time` (its `nextUpdate`,
    /// allowing `clockSkew`, has not passed). A stale answer is forgotten.
    public func answer(
        for certificateID: OCSPCertificateID,
        at time: Date = Date(),
        clockSkew: TimeInterval = 300
    ) -> RevocationStatus? {
        self.answers.withLock { answers in
            guard let status = answers.value(forKey: certificateID) else { return nil }
            guard let nextUpdate = status.nextUpdate, nextUpdate + clockSkew >= time else {
                answers.removeValue(forKey: certificateID)
                return nil
            }
            return status
        }
    }

    /// Keeps a verified OCSP answer until its `nextUpdate` (an answer without one is not kept).
    public func store(_ status: RevocationStatus, for certificateID: OCSPCertificateID) {
        guard status.nextUpdate != nil else { return }
        self.answers.withLock {
            $0.insert(status, forKey: certificateID, evictingFirst: { ($0.nextUpdate ?? .distantPast) < Date() })
        }
    }

    /// Verifies an OCSP response obtained elsewhere for `certificate` (issued by `issuer`) and keeps its answer, as
    /// if it had been fetched: a response a sidecar or a cron job fetched ahead of time, and, once NIOSSL exposes
    /// it, a response the server stapled to its handshake. The response carries no nonce of Bulwark's; everything
    /// else is checked as for a fetched one (``OCSPResponse/status(for:certificate:issuer:at:clockSkew:)``).
    ///
    /// - Returns: The verified status (good or revoked), which is kept until its `nextUpdate`.
    /// - Throws: ``RevocationError`` when the response is malformed, not for this certificate, wrongly signed,
    ///   stale, or `unknown` (nothing is kept then).
    @discardableResult
    public func load(
        ocspResponse bytes: [UInt8],
        for certificate: Certificate,
        issuer: Certificate,
        at time: Date = Date(),
        clockSkew: TimeInterval = 300
    ) throws(RevocationError) -> RevocationStatus {
        let request = try OCSPRequest(certificate: certificate, issuer: issuer, nonce: false)
        let response = try OCSPResponse(derEncoded: bytes)
        let status = try response.status(
            for: request,
            certificate: certificate,
            issuer: issuer,
            at: time,
            clockSkew: clockSkew
        )
        self.store(status, for: request.certificateID)
        return status
    }

    /// The number of OCSP answers kept.
    public var answerCount: Int { self.answers.withLock { $0.count } }

    /// Runs `operation` for `key` unless a run for the same key is already under way, in which case its result is
    /// awaited and shared: concurrent handshakes needing the same list or answer cause one fetch.
    package func coalesced<Value: Sendable>(
        _ key: String,
        _ operation: @escaping @Sendable () async -> Value
    ) async -> Value {
        let (task, started) = self.inFlight.withLock { inFlight -> (Task<any Sendable, Never>, Bool) in
            if let running = inFlight[key] { return (running, false) }
            let task = Task<any Sendable, Never> { await operation() }
            inFlight[key] = task
            return (task, true)
        }
        let value = await task.value
        if started { self.inFlight.withLock { _ = $0.removeValue(forKey: key) } }
        // Every run under one key is of the same type: the evaluator keys CRL fetches and OCSP queries apart.
        if let value = value as? Value { return value }
        return await operation()
    }

    /// The number of fetches under way (for tests of coalescing).
    package var fetchesInFlight: Int { self.inFlight.withLock { $0.count } }

    static func parseList(_ bytes: [UInt8], maximumSize: Int) throws(RevocationError) -> CertificateRevocationList {
        if bytes.first == 0x30 {
            return try CertificateRevocationList(derEncoded: bytes, maximumSize: maximumSize)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        return try CertificateRevocationList(pemEncoded: text, maximumSize: maximumSize)
    }
}
