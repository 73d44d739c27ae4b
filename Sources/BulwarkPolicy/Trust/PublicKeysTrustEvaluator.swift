import Foundation
import X509

/// Trusts a chain only if a certificate of its verified path has a public key in the ``PinSet`` (OkHttp's
/// `CertificatePinner`, TrustKit, Alamofire's `PublicKeysTrustEvaluator`).
///
/// - `performDefaultValidation`: the path must lead to one of `roots`, and the pin must be on that path. When
///   `false`, the presented certificates whose keys are pinned become the only anchors: the chain must still lead,
///   signature by signature and within its validity, from the leaf to a pinned key.
/// - `validateHost`: the leaf must be valid for the host.
///
/// > Warning: `performDefaultValidation: false` trusts whatever chains to a pinned key, with no trusted root
/// > behind it, and `validateHost: false` accepts a certificate for any name. Each trusted handshake decided with
/// > one of them carries a `.defaultValidationSkipped` or `.hostNotValidated` notice, reported as an
/// > `insecure_option_used` event.
///
/// Pin-set rules (TrustKit):
/// - after the set's expiration the pins are not enforced; the chain must then pass default validation against
///   `roots` (whatever `performDefaultValidation` says) and the decision carries a `.pinSetExpired` notice;
/// - a report-only set never refuses for a pin mismatch: the decision is that of default validation against
///   `roots`, with a `.reportOnlyPinViolation` notice when the pins did not match.
public struct PublicKeysTrustEvaluator: ServerTrustEvaluating {
    /// The pins, their expiration and enforcement.
    public let pinSet: PinSet
    /// The trust anchors of default validation.
    public var roots: TrustRoots
    /// Whether the path must lead to one of ``roots``; see the type's warning.
    public var performDefaultValidation: Bool
    /// Whether the leaf must be valid for the host; see the type's warning.
    public var validateHost: Bool
    /// Limits and web-PKI options of the validation.
    public var options: ValidationOptions

    /// An evaluator that pins the keys of `pinSet`; the flags are described with the type.
    public init(
        pinSet: PinSet,
        roots: TrustRoots = .system,
        performDefaultValidation: Bool = true,
        validateHost: Bool = true,
        options: ValidationOptions = .init()
    ) {
        self.pinSet = pinSet
        self.roots = roots
        self.performDefaultValidation = performDefaultValidation
        self.validateHost = validateHost
        self.options = options
    }

    /// Verifies the chain as the flags say, then requires a pinned key on the verified path, with the pin set's
    /// expiration and report-only rules.
    public func evaluate(_ chain: [Certificate], forHost host: String, at time: Date) async -> TrustDecision {
        await self.decide(chain, host: host, at: time).noting(
            hostValidated: self.validateHost,
            // An expired pin set is not enforced, and the chain then passes default validation whatever this says.
            defaultValidationPerformed: self.performDefaultValidation || self.pinSet.isExpired(at: time)
        )
    }

    private func decide(_ chain: [Certificate], host: String, at time: Date) async -> TrustDecision {
        if self.pinSet.isExpired(at: time) {
            let expiration = TrustFailureReason.format(self.pinSet.expiration ?? time)
            return await self.defaultDecision(
                chain,
                host: host,
                at: time,
                notice: .pinSetExpired(host: host, expiration: expiration)
            )
        }
        let anchors: TrustRoots
        if self.performDefaultValidation {
            anchors = self.roots
        } else {
            let pinned = chain.filter { self.matchingPin(for: $0) != nil }
            guard !pinned.isEmpty else {
                return await self.mismatch(chain, verified: nil, host: host, at: time)
            }
            anchors = .custom(pinned)
        }
        let result = await ChainEvaluation.verify(
            chain,
            host: host,
            at: time,
            roots: anchors,
            options: self.options,
            validateHost: self.validateHost
        )
        switch result {
        case .failure(let refusal):
            if !self.performDefaultValidation, self.pinSet.enforcement == .reportOnly {
                return await self.mismatch(chain, verified: nil, host: host, at: time)
            }
            return .refused(refusal)
        case .success(let verified):
            // By index: a lazy map over the chain copied every certificate it looked at.
            var match: (index: Int, pin: Pin)?
            for index in verified.indices {
                if let pin = self.matchingPin(in: verified, at: index) {
                    match = (index, pin)
                    break
                }
            }
            if let (matched, pin) = match {
                if self.pinsNameOneKey(matched: verified[matched], verified: verified) {
                    let key = Pin.publicKey(of: verified[matched])
                    let detail =
                        "the pin set for \(host) names one key only (\(key) and the "
                        + "certificate pin of a certificate with that key); an enforcing pin set needs a backup pin "
                        + "for another key, so that losing this one does not lock every user out "
                        + "(allowSinglePin: true opts out)"
                    return ChainEvaluation.refused(.misconfigured(detail: detail), host: host, presented: chain)
                }
                let notice = TrustNotice.pinMatched(host: host, pin: pin, subject: verified[matched].subject)
                return .trusted(
                    TrustedChain(
                        host: host,
                        certificates: verified,
                        notices: [notice],
                        validUntil: self.pinSet.expiration
                    )
                )
            }
            return await self.mismatch(chain, verified: verified, host: host, at: time)
        }
    }

    /// Whether every pin of an enforcing set names the key of `matched`: its SPKI pin, and the certificate pins of
    /// the verified certificates that carry that key. The "at least two pins" rule counts keys, and only here,
    /// with the certificates at hand, can a certificate pin be told to name the same key as an SPKI pin. A
    /// certificate pin of a certificate not on the path counts as another key.
    private func pinsNameOneKey(matched: Certificate, verified: [Certificate]) -> Bool {
        guard self.pinSet.enforcement == .enforce, !self.pinSet.allowsSinglePin,
            self.pinSet.pins.contains(where: { $0.kind == .certificate })
        else { return false }
        let key = Pin.publicKey(of: matched)
        var sameKey: Set<Pin> = [key]
        for certificate in verified where Pin.publicKey(of: certificate) == key {
            sameKey.insert(Pin.certificate(of: certificate))
        }
        return self.pinSet.pins.allSatisfy { sameKey.contains($0) }
    }

    /// The configured pin `certificate` carries, if any. Each digest is computed at most once: this runs in every
    /// handshake. The key's digest is the one remembered with the certificate's decoded extensions.
    private func matchingPin(for certificate: Certificate) -> Pin? {
        self.matchingPin(in: CollectionOfOne(certificate), at: CollectionOfOne(certificate).startIndex)
    }

    /// ``matchingPin(for:)`` of `certificates[index]`, without copying the certificate out of the collection
    /// unless a certificate pin must be computed.
    private func matchingPin<Certificates: RandomAccessCollection<Certificate>>(
        in certificates: Certificates,
        at index: Certificates.Index
    ) -> Pin? {
        let keyPin = ParsedExtensions.of(certificates, at: index).publicKeyPin
        if self.pinSet.pins.contains(keyPin) { return keyPin }
        guard self.pinSet.pins.contains(where: { $0.kind == .certificate }) else { return nil }
        let certificatePin = Pin.certificate(of: certificates[index])
        return self.pinSet.pins.contains(certificatePin) ? certificatePin : nil
    }

    private func mismatch(
        _ chain: [Certificate],
        verified: [Certificate]?,
        host: String,
        at time: Date
    ) async -> TrustDecision {
        let certificates = verified ?? chain
        let mismatch = PinMismatch(
            host: host,
            verifiedChain: certificates.map(CertificateSummary.init),
            expectedPins: self.pinSet.pins,
            verifiedCertificates: certificates,
            enforced: self.pinSet.enforcement == .enforce,
            pinSetExpiration: self.pinSet.expiration,
            chainIsVerified: verified != nil
        )
        switch self.pinSet.enforcement {
        case .enforce:
            return ChainEvaluation.refused(.pinMismatch(mismatch), host: host, presented: chain)
        case .reportOnly:
            return await self.defaultDecision(
                chain,
                host: host,
                at: time,
                notice: .reportOnlyPinViolation(mismatch),
                validUntil: self.pinSet.expiration
            )
        }
    }

    private func defaultDecision(
        _ chain: [Certificate],
        host: String,
        at time: Date,
        notice: TrustNotice,
        validUntil: Date? = nil
    ) async -> TrustDecision {
        let result = await ChainEvaluation.verify(
            chain,
            host: host,
            at: time,
            roots: self.roots,
            options: self.options,
            validateHost: self.validateHost
        )
        switch result {
        case .success(let verified):
            return .trusted(TrustedChain(host: host, certificates: verified, notices: [notice], validUntil: validUntil))
        case .failure(let refusal):
            return .refused(refusal)
        }
    }
}

extension ServerTrustEvaluating where Self == PublicKeysTrustEvaluator {
    /// Public-key (SPKI) pinning; see ``PublicKeysTrustEvaluator``.
    public static func publicKeys(
        _ pinSet: PinSet,
        roots: TrustRoots = .system,
        performDefaultValidation: Bool = true,
        validateHost: Bool = true,
        options: ValidationOptions = .init()
    ) -> Self {
        PublicKeysTrustEvaluator(
            pinSet: pinSet,
            roots: roots,
            performDefaultValidation: performDefaultValidation,
            validateHost: validateHost,
            options: options
        )
    }
}
