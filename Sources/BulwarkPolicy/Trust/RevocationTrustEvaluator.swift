import Foundation
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

    /// - Parameters:
    ///   - base: The evaluator that must trust the chain first.
    ///   - method: The sources consulted, in order.
    ///   - mode: What an unknown status does.
    ///   - store: Loaded lists and the cache; share one store between evaluators to share their cache.
    ///   - fetcher: What fetches from distribution points and responders; `nil` disables network access (Alamofire's
    ///     `.networkAccessDisabled`): only loaded lists and cached answers are used.
    ///   - clockSkew: The allowance on `thisUpdate` and `nextUpdate` (5 minutes).
    ///   - maximumListSize: The largest list fetched.
    public init(
        _ base: any ServerTrustEvaluating,
        method: Method = .any,
        mode: Mode = .hard,
        store: RevocationStore = RevocationStore(),
        fetcher: (any RevocationFetching)? = nil,
        clockSkew: TimeInterval = 300,
        maximumListSize: Int = CertificateRevocationList.defaultMaximumSize
    ) {
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
        for index in path.indices.dropLast() {
            let certificate = path[index]
            switch await self.check(certificate, issuer: path[index + 1], at: time) {
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
                trusted.notices.append(.revocationUnknown(host: host, certificate: subject, why: unknown.why))
            }
        }
        trusted.validUntil = validUntil
        return .trusted(trusted)
    }

    /// Why a certificate's status is unknown, in words, one clause per source tried.
    struct Unknown: Error {
        var why: String
    }

    /// Establishes one certificate's status with the configured sources, in order: the first definite answer
    /// (good or revoked) wins.
    func check(_ certificate: Certificate, issuer: Certificate, at time: Date) async -> Result<RevocationCheck, Unknown>
    {
        var reasons: [String] = []
        for method in self.method.order {
            let result =
                method == .ocsp
                ? await self.checkWithOCSP(certificate, issuer: issuer, at: time)
                : await self.checkWithCRL(certificate, issuer: issuer, at: time)
            switch result {
            case .success(let check): return .success(check)
            case .failure(let unknown): reasons.append(unknown.why)
            }
        }
        return .failure(Unknown(why: reasons.joined(separator: "; ")))
    }

    /// Identifies one OCSP query for coalescing: the issuer's name and key, and the serial number.
    static func queryKey(_ certificate: Certificate, issuer: Certificate) -> String {
        let key = issuer.publicKey.subjectPublicKeyInfoBytes.map { String($0, radix: 16) }.joined()
        return "ocsp \(issuer.subject) \(key) \(certificate.serialNumber)"
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
        at time: Date
    ) async -> Result<RevocationCheck, Unknown> {
        var reasons: [String] = []
        if let list = self.store.list(issuedBy: issuer.subject) {
            do {
                let status = try list.status(of: certificate, issuer: issuer, at: time, clockSkew: self.clockSkew)
                return .success(self.made(certificate, status, .loadedList, cached: true))
            } catch {
                reasons.append("CRL: the loaded list of \(issuer.subject) cannot be used: \(error)")
            }
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
            if let kept = self.store.list(fetchedFrom: url),
                let status = try? kept.status(of: certificate, issuer: issuer, at: time, clockSkew: self.clockSkew)
            {
                return .success(self.made(certificate, status, .url(url), cached: true))
            }
            guard let fetcher = self.fetcher else {
                reasons.append("CRL: no current list from \(url) is kept and network access is disabled")
                continue
            }
            let maximumSize = self.maximumListSize
            let fetched: Result<CertificateRevocationList, Unknown> = await self.store.coalesced("crl " + url) {
                do {
                    let request = RevocationFetchRequest(kind: .crl, url: url, maximumResponseSize: maximumSize)
                    let bytes = try await fetcher.fetch(request)
                    return .success(try RevocationStore.parseList(bytes, maximumSize: maximumSize))
                } catch let error as RevocationFetchError {
                    return .failure(Unknown(why: "CRL: \(error)"))
                } catch {
                    return .failure(Unknown(why: "CRL: the list from \(url) cannot be used: \(error)"))
                }
            }
            switch fetched {
            case .success(let list):
                do {
                    let status = try list.status(of: certificate, issuer: issuer, at: time, clockSkew: self.clockSkew)
                    self.store.store(list, fetchedFrom: url)
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
        at time: Date
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
        let clockSkew = self.clockSkew
        let queried: Result<RevocationStatus, Unknown> = await self.store.coalesced(
            Self.queryKey(certificate, issuer: issuer)
        ) {
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
                return .failure(Unknown(why: "OCSP: \(error)"))
            } catch {
                return .failure(Unknown(why: "OCSP: the answer of \(responder) cannot be used: \(error)"))
            }
        }
        switch queried {
        case .success(let status):
            self.store.store(status, for: certificateID)
            return .success(self.made(certificate, status, .url(responder), cached: false))
        case .failure(let unknown):
            return .failure(unknown)
        }
    }
}
