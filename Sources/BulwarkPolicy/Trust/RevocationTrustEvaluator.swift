import Foundation
import SwiftASN1
import X509

/// Checks that no certificate of a chain another evaluator trusts has been revoked, like Alamofire's
/// `RevocationTrustEvaluator`: with CRLs (loaded into a ``RevocationStore`` or fetched from the certificates'
/// distribution points) and OCSP (queried from the responder a certificate names).
///
/// For every certificate of the verified path but its root, with the next certificate of the path as its issuer:
/// - a revoked certificate refuses the chain (`revoked`: which certificate, when, why and according to whom), in
///   either mode, and the client reports a `certificate_revoked` event;
/// - a certificate whose status cannot be established (no data, a responder that is down or too slow, a stale,
///   broken, forged or out-of-scope answer, OCSP status `unknown`) refuses the chain in ``Mode/hard``
///   (`revocation_unknown`), and in ``Mode/soft`` lets it through with a `revocation_unknown` notice;
/// - a certificate found good gives a `revocation_checked` notice (method, source, where from, cached or not).
///
/// ``Method`` chooses the sources. Without a fetcher (``networkAccessDisabled``) only loaded lists and answers
/// already in the store are used. A trusted decision holds only until the earliest `nextUpdate` of the answers it
/// used, so the client's decision cache never outlives them.
///
/// > Note: OCSP stapling is not supported: NIOSSL does not expose a stapled response to the verification callback
/// > (swift-nio-ssl has no API for it as of 2.37; apple/swift-nio-ssl#242). ``RevocationStore/load(ocspResponse:for:issuer:at:clockSkew:)``
/// > is the seam a stapled response can be fed through once it does (it takes responses fetched elsewhere today).
public struct RevocationTrustEvaluator: ServerTrustEvaluating {
    /// What an unknown revocation status does.
    public struct Mode: Hashable, Sendable, CustomStringConvertible {
        private let hard: Bool

        /// Every non-root certificate of the path needs a positive "not revoked"; anything else refuses.
        public static let hard = Mode(hard: true)
        /// Only a definite "revoked" refuses; an unknown status is reported and the handshake goes on.
        public static let soft = Mode(hard: false)

        /// `hard` or `soft`.
        public var description: String { self.hard ? "hard" : "soft" }

        var isHard: Bool { self.hard }
    }

    /// Which revocation sources are consulted, in which order.
    public struct Method: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: Hashable, Sendable {
            case ocsp, crl, preferCRL, any
        }

        private let backing: Backing

        /// OCSP only.
        public static let ocsp = Method(backing: .ocsp)
        /// CRLs only (loaded, cached, or fetched from the certificate's distribution points).
        public static let crl = Method(backing: .crl)
        /// A CRL first; OCSP when no CRL gives an answer.
        public static let preferCRL = Method(backing: .preferCRL)
        /// OCSP first (a small, fresh answer); a CRL when OCSP gives none. Certificates from CAs that publish CRLs
        /// only (Let's Encrypt since 2025) are checked with their CRL.
        public static let any = Method(backing: .any)

        /// `ocsp`, `crl`, `preferCRL` or `any`.
        public var description: String {
            switch self.backing {
            case .ocsp: return "ocsp"
            case .crl: return "crl"
            case .preferCRL: return "preferCRL"
            case .any: return "any"
            }
        }

        var order: [RevocationStatus.Method] {
            switch self.backing {
            case .ocsp: return [.ocsp]
            case .crl: return [.crl]
            case .preferCRL: return [.crl, .ocsp]
            case .any: return [.ocsp, .crl]
            }
        }
    }

    /// The largest OCSP response accepted from a responder.
    public static let maximumOCSPResponseSize = 64 << 10

    /// How long a decision made while a certificate's status was unknown (soft mode) may be reused: a responder that
    /// was down for one handshake is asked again a minute later, not only when the decision cache forgets.
    public static let unknownStatusDecisionLifetime: TimeInterval = 60

    /// The evaluator that verifies the chain first (its refusals are returned as they are).
    public let base: any ServerTrustEvaluating
    /// The sources consulted.
    public let method: Method
    /// Hard or soft.
    public let mode: Mode
    /// Loaded lists, and the cache of fetched lists and OCSP answers.
    public let store: RevocationStore
    /// What fetches lists and OCSP answers; `nil` when network access is disabled.
    public let fetcher: (any RevocationFetching)?
    /// How far a list's or answer's `thisUpdate` and `nextUpdate` may be off the evaluation time.
    public let clockSkew: TimeInterval
    /// The largest revocation list accepted from a distribution point.
    public let maximumListSize: Int
    /// The time one evaluation may spend fetching, across every source and certificate (4 s by default, within the
    /// client's 10 s handshake timeout). A source not reached when it is spent gives an unknown status.
    public let budget: Duration

    /// - Parameters:
    ///   - base: The evaluator that must trust the chain first.
    ///   - method: The sources consulted, in order.
    ///   - mode: What an unknown status does.
    ///   - store: Loaded lists and the cache; share one store between evaluators to share their cache.
    ///   - fetcher: What fetches from distribution points and responders; `nil` disables network access (Alamofire's
    ///     `.networkAccessDisabled`): only loaded lists and cached answers are used.
    ///   - clockSkew: The allowance on `thisUpdate` and `nextUpdate` (5 minutes).
    ///   - maximumListSize: The largest list fetched.
    ///   - budget: The time one evaluation may spend fetching, in all (4 s).
    public init(
        _ base: any ServerTrustEvaluating,
        method: Method = .any,
        mode: Mode = .hard,
        store: RevocationStore = RevocationStore(),
        fetcher: (any RevocationFetching)? = nil,
        clockSkew: TimeInterval = 300,
        maximumListSize: Int = CertificateRevocationList.defaultMaximumSize,
        budget: Duration = .seconds(4)
    ) {
        self.budget = budget
        self.base = base
        self.method = method
        self.mode = mode
        self.store = store
        self.fetcher = fetcher
        self.clockSkew = clockSkew
        self.maximumListSize = maximumListSize
    }

    /// Whether only loaded lists and cached answers are used.
    public var networkAccessDisabled: Bool { self.fetcher == nil }

    /// Asks the base evaluator, then checks every certificate of the verified path but the root with its issuer,
    /// as the method and mode say.
    public func evaluate(_ chain: [Certificate], forHost host: String, at time: Date) async -> TrustDecision {
        let decision = await self.base.evaluate(chain, forHost: host, at: time)
        guard case .trusted(var trusted) = decision else { return decision }
        let path = trusted.certificates
        var validUntil = trusted.validUntil
        // A path the base evaluator did not verify is the peer's word: the URLs it names are not fetched (a blind
        // request to any address it chooses), only loaded lists and kept answers are consulted.
        let verified = !trusted.notices.contains { $0.code == "validation_disabled" }
        let budget = RevocationBudget(self.budget)
        for index in path.indices.dropLast() {
            let certificate = path[index]
            switch await self.check(certificate, issuer: path[index + 1], at: time, fetching: verified, budget: budget)
            {
            case .success(let check):
                if let revocation = check.status.revocation {
                    return ChainEvaluation.refused(
                        .revoked(
                            certificate: check.certificate,
                            serialNumber: check.serialNumber,
                            revokedAt: revocation.revocationDate,
                            reason: revocation.reason.map(String.init(describing:)),
                            source: "\(check.status.source) (\(check.method))"
                        ),
                        host: host,
                        presented: chain
                    )
                }
                if let nextUpdate = check.status.nextUpdate, nextUpdate < validUntil ?? .distantFuture {
                    validUntil = nextUpdate
                }
                trusted.notices.append(.revocationChecked(host: host, check: check))
            case .failure(let unknown):
                // Formatted only here: a name costs more to format than a warm check costs.
                let subject = String(describing: certificate.subject)
                if self.mode.isHard {
                    return ChainEvaluation.refused(
                        .revocationUnknown(certificate: subject, detail: unknown.why),
                        host: host,
                        presented: chain
                    )
                }
                let lifetime = Self.unknownStatusDecisionLifetime
                if time + lifetime < validUntil ?? .distantFuture { validUntil = time + lifetime }
                trusted.notices.append(
                    .revocationUnknown(
                        host: host,
                        certificate: subject,
                        why: unknown.why + "; this decision is reused for \(Int(lifetime)) s at most"
                    )
                )
            }
        }
        trusted.validUntil = validUntil
        return .trusted(trusted)
    }

    /// Why a certificate's status is unknown, in words, one clause per source tried.
    struct Unknown: Error {
        var why: String
        /// Whether the source itself failed (unreachable, or it served something unusable), rather than its answer
        /// not fitting this one certificate: such a source is not asked again for a while.
        var sourceFailed = false
    }

    /// The clause for a source that failed less than a minute ago.
    private static func recentFailure(_ why: String) -> String {
        "\(why) (less than \(Int(RevocationStore.failureLifetime)) s ago; not asked again yet)"
    }

    /// Establishes one certificate's status with the configured sources, in order: the first definite answer
    /// (good or revoked) wins.
    /// With `fetching` false (a path nobody verified), nothing is fetched: only loaded lists and kept answers count.
    func check(
        _ certificate: Certificate,
        issuer: Certificate,
        at time: Date,
        fetching: Bool = true,
        budget: RevocationBudget? = nil
    ) async -> Result<RevocationCheck, Unknown> {
        var reasons: [String] = []
        let evaluator = fetching ? self : self.withoutFetching
        let budget = budget ?? RevocationBudget(self.budget)
        for method in self.method.order {
            let result =
                method == .ocsp
                ? await evaluator.checkWithOCSP(certificate, issuer: issuer, at: time, budget: budget)
                : await evaluator.checkWithCRL(certificate, issuer: issuer, at: time, budget: budget)
            switch result {
            case .success(let check): return .success(check)
            case .failure(let unknown): reasons.append(unknown.why)
            }
        }
        if !fetching, self.fetcher != nil {
            reasons.append(
                "the chain was not verified (validation disabled), so no revocation source it names was fetched"
            )
        }
        return .failure(Unknown(why: reasons.joined(separator: "; ")))
    }

    /// This evaluator without its fetcher: only loaded lists and kept answers.
    private var withoutFetching: RevocationTrustEvaluator {
        RevocationTrustEvaluator(
            self.base,
            method: self.method,
            mode: self.mode,
            store: self.store,
            fetcher: nil,
            clockSkew: self.clockSkew,
            maximumListSize: self.maximumListSize,
            budget: self.budget
        )
    }

    /// The clause for a source not asked, or not answering, before the evaluation's budget was spent.
    private static func outOfBudget(_ url: String, _ budget: RevocationBudget) -> String {
        "\(url) gave no answer within the revocation budget of \(budget.text)"
    }

    /// Identifies one OCSP query for coalescing: the issuer's DER name, its key and the serial number, each in
    /// fixed-width hex (two digits a byte), so no two queries share a key.
    static func queryKey(_ certificate: Certificate, issuer: Certificate) -> String {
        var name = DER.Serializer()
        let encodedName = (try? name.serialize(issuer.subject)).map { name.serializedBytes } ?? []
        return "ocsp " + Self.hex(encodedName) + " " + Self.hex(issuer.publicKey.subjectPublicKeyInfoBytes) + " "
            + Self.hex(certificate.serialNumber.bytes)
    }

    private static func hex(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private func made(
        _ certificate: Certificate,
        _ status: RevocationStatus,
        _ origin: RevocationCheck.Origin,
        cached: Bool
    ) -> RevocationCheck {
        RevocationCheck(of: certificate, status: status, origin: origin, cached: cached)
    }
}

extension RevocationTrustEvaluator {
    /// CRL: a loaded list of the issuer, then each `http://` distribution point of the certificate (a kept list
    /// while it is current, else a fetch).
    func checkWithCRL(
        _ certificate: Certificate,
        issuer: Certificate,
        at time: Date,
        budget: RevocationBudget
    ) async -> Result<RevocationCheck, Unknown> {
        var reasons: [String] = []
        switch self.store.status(of: certificate, issuer: issuer, at: time, clockSkew: self.clockSkew) {
        case .success(let status):
            return .success(self.made(certificate, status, .loadedList, cached: true))
        case .failure(let error):
            reasons.append("CRL: the loaded list of \(issuer.subject) cannot be used: \(error)")
        case nil:
            break
        }
        let points: [String]
        do {
            points = try CRLDistributionPoints.uris(of: certificate)
        } catch {
            return .failure(Unknown(why: "CRL: the certificate's distribution points cannot be read"))
        }
        let http = points.filter { $0.lowercased().hasPrefix("http://") }
        if http.isEmpty {
            if reasons.isEmpty {
                let named = points.isEmpty ? "no CRL distribution point" : "no http:// CRL distribution point"
                reasons.append(
                    "CRL: no revocation list of \(issuer.subject) is loaded and the certificate names \(named)"
                )
            }
            return .failure(Unknown(why: reasons.joined(separator: "; ")))
        }
        for url in http {
            if let kept = self.store.list(fetchedFrom: url) {
                do {
                    let status = try kept.status(of: certificate, issuer: issuer, at: time, clockSkew: self.clockSkew)
                    return .success(self.made(certificate, status, .url(url), cached: true))
                } catch  where ["out_of_scope", "delta_crls_unsupported"].contains(error.code) {
                    // Current and verified (these are found after the time and signature checks), it cannot answer
                    // for this certificate; fetching it again would bring the same list.
                    reasons.append("CRL: the list kept from \(url) cannot be used: \(error)")
                    continue
                } catch {}
            }
            guard let fetcher = self.fetcher else {
                reasons.append("CRL: no current list from \(url) is kept and network access is disabled")
                continue
            }
            // A source is remembered, and a fetch shared, per route: a proxy's failure says nothing of the direct way.
            let source = Self.source(url, route: fetcher.route)
            if let why = self.store.failure(of: source, at: time) {
                reasons.append(Self.recentFailure(why))
                continue
            }
            let maximumSize = self.maximumListSize
            let store = self.store
            let clockSkew = self.clockSkew
            // What the fetch brings is judged and kept (or its failure remembered) by the fetch itself, so also when
            // the budget ran out before it ended: a slow source answers the next handshake from the store.
            let fetched: Result<CertificateRevocationList, Unknown>? = await budget.run {
                await store.coalesced("crl " + source) {
                    var result: Result<CertificateRevocationList, Unknown>
                    do {
                        let request = RevocationFetchRequest(kind: .crl, url: url, maximumResponseSize: maximumSize)
                        let bytes = try await fetcher.fetch(request)
                        let list = try RevocationStore.parseList(bytes, maximumSize: maximumSize)
                        result = .success(list)
                        // A list unusable for any certificate (a signature no key of the issuer made, a stale
                        // list) is not fetched and parsed again on every handshake; out of scope is a matter of
                        // the certificate.
                        do {
                            _ = try list.status(of: certificate, issuer: issuer, at: time, clockSkew: clockSkew)
                            store.store(list, fetchedFrom: url)
                        } catch let error as RevocationError
                            where ["out_of_scope", "delta_crls_unsupported"].contains(error.code)
                        {
                            // The list is sound; it only cannot answer for this certificate (the next one it may
                            // revoke), so it is kept and the source is not counted as failed.
                            store.store(list, fetchedFrom: url)
                        } catch {
                            result = .failure(
                                Unknown(why: "CRL: the list from \(url) cannot be used: \(error)", sourceFailed: true)
                            )
                        }
                    } catch let error as RevocationFetchError {
                        result = .failure(Unknown(why: "CRL: \(error)", sourceFailed: true))
                    } catch {
                        result = .failure(
                            Unknown(why: "CRL: the list from \(url) cannot be used: \(error)", sourceFailed: true)
                        )
                    }
                    if case .failure(let unknown) = result {
                        store.rememberFailure(of: source, why: unknown.why, at: time)
                    }
                    return result
                }
            }
            guard let fetched else {
                reasons.append("CRL: " + Self.outOfBudget(url, budget))
                continue
            }
            switch fetched {
            case .success(let list):
                do {
                    let status = try list.status(of: certificate, issuer: issuer, at: time, clockSkew: self.clockSkew)
                    return .success(self.made(certificate, status, .url(url), cached: false))
                } catch {
                    reasons.append("CRL: the list from \(url) cannot be used: \(error)")
                }
            case .failure(let unknown):
                reasons.append(unknown.why)
            }
        }
        return .failure(Unknown(why: reasons.joined(separator: "; ")))
    }

    /// OCSP: a kept answer while it is current, else a query to the first `http://` responder the certificate
    /// names (GET when the request fits in 255 bytes, else POST), with a fresh nonce.
    func checkWithOCSP(
        _ certificate: Certificate,
        issuer: Certificate,
        at time: Date,
        budget: RevocationBudget
    ) async -> Result<RevocationCheck, Unknown> {
        let certificateID: OCSPCertificateID
        do {
            certificateID = try OCSPCertificateID(certificate: certificate, issuer: issuer)
        } catch {
            return .failure(Unknown(why: "OCSP: \(error)"))
        }
        let responders: [String]
        do {
            responders =
                (try ParsedExtensions.of(certificate).authorityInformationAccess.get()
                ?? AuthorityInformationAccess([]))
                .filter { $0.method == .ocspServer }
                .compactMap {
                    guard case .uniformResourceIdentifier(let uri) = $0.location else { return nil }
                    return uri
                }
        } catch {
            return .failure(Unknown(why: "OCSP: the certificate's authority information access cannot be read"))
        }
        if let kept = self.store.answer(for: certificateID, at: time, clockSkew: self.clockSkew) {
            return .success(self.made(certificate, kept, .url(responders.first ?? "a cached answer"), cached: true))
        }
        guard let responder = responders.first(where: { $0.lowercased().hasPrefix("http://") }) else {
            let named = responders.isEmpty ? "names no OCSP responder" : "names no http:// OCSP responder"
            return .failure(Unknown(why: "OCSP: the certificate \(named)"))
        }
        guard let fetcher = self.fetcher else {
            return .failure(Unknown(why: "OCSP: no current answer is kept and network access is disabled"))
        }
        let source = Self.source(responder, route: fetcher.route)
        if let why = self.store.failure(of: source, at: time) {
            return .failure(Unknown(why: Self.recentFailure(why)))
        }
        let clockSkew = self.clockSkew
        let store = self.store
        let route = fetcher.route
        let key = Self.queryKey(certificate, issuer: issuer) + (route.isEmpty ? "" : " via " + route)
        let answered: Result<RevocationStatus, Unknown>? = await budget.run {
            await store.coalesced(key) {
                let result = await Self.query(
                    certificate,
                    issuer: issuer,
                    responder: responder,
                    fetcher: fetcher,
                    at: time,
                    clockSkew: clockSkew
                )
                // Kept, or remembered as failed, by the query itself, so also when the budget ran out before it ended.
                switch result {
                case .success(let status): store.store(status, for: certificateID)
                case .failure(let unknown) where unknown.sourceFailed:
                    store.rememberFailure(of: source, why: unknown.why, at: time)
                case .failure: break
                }
                return result
            }
        }
        guard let queried = answered else {
            return .failure(Unknown(why: "OCSP: " + Self.outOfBudget(responder, budget)))
        }
        switch queried {
        case .success(let status):
            return .success(self.made(certificate, status, .url(responder), cached: false))
        case .failure(let unknown):
            return .failure(unknown)
        }
    }

    /// A source as failures and fetches in flight are remembered: its URL, and the route when not direct.
    static func source(_ url: String, route: String) -> String {
        route.isEmpty ? url : url + " via " + route
    }

    /// One OCSP query to `responder` for `certificate`, and its verified answer.
    private static func query(
        _ certificate: Certificate,
        issuer: Certificate,
        responder: String,
        fetcher: any RevocationFetching,
        at time: Date,
        clockSkew: TimeInterval
    ) async -> Result<RevocationStatus, Unknown> {
        do {
            let request = try OCSPRequest(certificate: certificate, issuer: issuer)
            let fetch =
                if let url = request.getURL(responder: responder) {
                    RevocationFetchRequest(
                        kind: .ocsp,
                        url: url,
                        maximumResponseSize: Self.maximumOCSPResponseSize
                    )
                } else {
                    RevocationFetchRequest(
                        kind: .ocsp,
                        url: responder,
                        body: request.derBytes,
                        maximumResponseSize: Self.maximumOCSPResponseSize
                    )
                }
            let bytes = try await fetcher.fetch(fetch)
            let response = try OCSPResponse(derEncoded: bytes, maximumSize: Self.maximumOCSPResponseSize)
            return .success(
                try response.status(
                    for: request,
                    certificate: certificate,
                    issuer: issuer,
                    at: time,
                    clockSkew: clockSkew
                )
            )
        } catch let error as RevocationFetchError {
            return .failure(Unknown(why: "OCSP: \(error)", sourceFailed: true))
        } catch {
            return .failure(Unknown(why: "OCSP: the answer of \(responder) cannot be used: \(error)"))
        }
    }
}
