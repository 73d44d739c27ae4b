import Foundation
import X509

/// The revocation data a client consults, shared by every connection of the clients whose trust evaluators use it:
/// lists the application loaded (for fleets without network access), lists fetched from distribution points, and
/// verified OCSP answers.
///
/// Everything is bounded: at most ``capacity`` loaded issuer names (each with at most 16 lists), ``capacity`` fetched
/// lists and ``capacity`` OCSP answers, the least recently used forgotten first. Loaded lists are verified when used,
/// never when loaded: a list no issuer's key verifies never hides one that verifies. A fetched list or OCSP answer is
/// kept until its `nextUpdate` (a revoked answer too, so that a refusal costs no more than a cache hit). Fetches of
/// the same thing by concurrent handshakes are coalesced into one. The store does no I/O itself.
public final class RevocationStore: Sendable {
    /// How many entries of each kind are kept at most.
    public let capacity: Int
    private let loaded: LockedValue<LeastRecentlyUsed<DistinguishedName, LoadedLists>>
    /// The most bytes of fetched lists kept (their encoded size), 64 MiB by default: with lists of up to 32 MiB,
    /// a count alone would let the cache hold gigabytes.
    public let maximumFetchedBytes: Int
    private let fetched: LockedValue<(lists: LeastRecentlyUsed<String, CertificateRevocationList>, bytes: Int)>
    private let answers: LockedValue<LeastRecentlyUsed<OCSPCertificateID, RevocationStatus>>
    private let inFlight: LockedValue<[String: Task<any Sendable, Never>]>
    private let failures: LockedValue<LeastRecentlyUsed<String, SourceFailure>>

    /// How long a source that could not be reached, or served something unusable, is not asked again: a dead
    /// responder costs one attempt a minute, not one on every handshake.
    public static let failureLifetime: TimeInterval = 60

    private struct SourceFailure: Sendable {
        var until: Date
        var why: String
    }

    /// An empty store keeping at most `capacity` entries of each kind, and fetched lists of at most
    /// `maximumFetchedBytes` in all.
    public init(capacity: Int = 1_024, maximumFetchedBytes: Int = 64 << 20) {
        self.capacity = capacity
        self.maximumFetchedBytes = maximumFetchedBytes
        self.loaded = LockedValue(LeastRecentlyUsed(capacity: capacity))
        self.fetched = LockedValue((LeastRecentlyUsed(capacity: capacity), 0))
        self.answers = LockedValue(LeastRecentlyUsed(capacity: capacity))
        self.inFlight = LockedValue([:])
        self.failures = LockedValue(LeastRecentlyUsed(capacity: capacity))
    }

    /// Why the source at `url` failed, if it did less than ``failureLifetime`` before `time`.
    package func failure(of url: String, at time: Date) -> String? {
        self.failures.withLock { failures in
            guard let failure = failures.value(forKey: url) else { return nil }
            guard time < failure.until, time >= failure.until - Self.failureLifetime else {
                failures.removeValue(forKey: url)
                return nil
            }
            return failure.why
        }
    }

    /// Remembers that the source at `url` failed at `time`, and why, for ``failureLifetime``.
    package func rememberFailure(of url: String, why: String, at time: Date) {
        self.failures.withLock { failures in
            failures.insert(
                SourceFailure(until: time + Self.failureLifetime, why: why),
                forKey: url,
                evictingFirst: { $0.until < time }
            )
        }
    }

    /// Adds a parsed list. Nothing about it is trusted yet: it is verified when used, with the issuer of the
    /// certificate being checked. Every list of an issuer name is kept that can be told apart from the others by the
    /// key that signs it or the certificates it covers (partitioned lists, twin CAs of one name), so a list never
    /// replaces another when loaded; the newest list that verifies and covers a certificate answers for it.
    public func load(_ list: CertificateRevocationList) {
        self.loaded.withLock { lists in
            var kept = lists.value(forKey: list.issuer) ?? LoadedLists()
            kept.insert(list)
            lists.insert(kept, forKey: list.issuer)
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

    /// The lists loaded under the issuer name `issuer`, in the order they were loaded, none of them verified yet.
    public func lists(issuedBy issuer: DistinguishedName) -> [CertificateRevocationList] {
        self.loaded.withLock { $0.value(forKey: issuer)?.lists ?? [] }
    }

    /// What the loaded lists say about `certificate`, issued by `issuer` (the next certificate of a verified path):
    /// the answer of the newest list that `issuer`'s key verifies, that is current at `time` and covers the
    /// certificate; the reason none does; nil when no list is loaded under the issuer's name.
    public func status(
        of certificate: Certificate,
        issuer: Certificate,
        at time: Date = Date(),
        clockSkew: TimeInterval = 300
    ) -> Result<RevocationStatus, RevocationError>? {
        guard let kept = self.loaded.withLock({ $0.value(forKey: issuer.subject) }) else { return nil }
        return kept.status(of: certificate, issuer: issuer, at: time, clockSkew: clockSkew)
    }

    /// The number of issuers with a loaded list.
    public var count: Int { self.loaded.withLock { $0.count } }

    /// The list last fetched from `url`, if it is still kept.
    public func list(fetchedFrom url: String) -> CertificateRevocationList? {
        self.fetched.withLock { $0.lists.value(forKey: url) }
    }

    /// Keeps a list fetched from `url` (a newer one replaces it), forgetting the least recently used lists while
    /// the lists kept exceed ``maximumFetchedBytes``; a list larger than that is not kept.
    public func store(_ list: CertificateRevocationList, fetchedFrom url: String) {
        let size = list.byteCount
        guard size <= self.maximumFetchedBytes else { return }
        self.fetched.withLock { fetched in
            if let kept = fetched.lists.value(forKey: url) {
                if kept.thisUpdate > list.thisUpdate { return }
                fetched.lists.removeValue(forKey: url)
                fetched.bytes -= kept.byteCount
            }
            let now = Date()
            if let evicted = fetched.lists.inserting(
                list,
                forKey: url,
                evictingFirst: { ($0.nextUpdate ?? .distantPast) < now }
            ) {
                fetched.bytes -= evicted.byteCount
            }
            fetched.bytes += size
            while fetched.bytes > self.maximumFetchedBytes, let evicted = fetched.lists.removeLeastRecentlyUsed() {
                fetched.bytes -= evicted.byteCount
            }
        }
    }

    /// The number of fetched lists kept.
    public var fetchedCount: Int { self.fetched.withLock { $0.lists.count } }

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
