import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// Makes chains for differential testing (the idea of frankencerts): starting from a valid root → intermediate →
/// leaf chain, each chain has one or two properties changed — validity, key usage, extended key usage, basic
/// constraints, path length, name constraints, subject alternative names, signature algorithm, key size, critical
/// extensions, or the shape of the chain.
///
/// The sequence is deterministic for a seed: the first ``variantCount`` chains apply every single mutation once,
/// in order; later ones draw one or two mutations and a chain length with SplitMix64. (Key material and ECDSA
/// signatures are random, but nothing a verdict depends on.) Keys come from a ``KeyPool`` made once, since key
/// generation is the slow part.
public struct ChainMutationEngine: Sendable {
    /// Keys reused across chains; none of the mutations depends on a key being fresh.
    public struct KeyPool: Sendable {
        let p256: [Certificate.PrivateKey]
        let p384: Certificate.PrivateKey
        let p521: Certificate.PrivateKey
        let rsa2048: [Certificate.PrivateKey]
        let rsa3072: Certificate.PrivateKey
        let rsa1024: Certificate.PrivateKey

        /// Generates the pool's keys: P-256, P-384, P-521 and RSA 1024, 2048 and 3072.
        public static func make() throws -> KeyPool {
            KeyPool(
                p256: (0..<5).map { _ in Certificate.PrivateKey(P256.Signing.PrivateKey()) },
                p384: Certificate.PrivateKey(P384.Signing.PrivateKey()),
                p521: Certificate.PrivateKey(P521.Signing.PrivateKey()),
                rsa2048: try (0..<2).map { _ in
                    Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
                },
                rsa3072: Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits3072)),
                rsa1024: Certificate.PrivateKey(try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024)))
            )
        }
    }

    /// The engine's generator: SplitMix64, seeded.
    public typealias Random = SeededGenerator

    /// The evaluation time: certificates are valid around it (whole seconds, as certificates state them).
    public let now: Date
    let keys: KeyPool
    var random: Random
    var produced = 0

    /// An engine whose sequence of chains is fixed by `seed`, valid around `now`, signed with keys of `keys`.
    public init(seed: UInt64, now: Date, keys: KeyPool) {
        self.now = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        self.keys = keys
        self.random = Random(seed: seed)
    }

    /// The number of distinct single mutations; the first chains of a sequence apply each once.
    public static var variantCount: Int { Self.mutations.count }

    /// The next chain in the sequence.
    public mutating func next() throws -> MutatedChain {
        let index = self.produced
        self.produced += 1
        var chosen: [Mutation]
        var intermediates = 1
        if index < Self.mutations.count {
            chosen = [Self.mutations[index]]
        } else {
            let roll = Int.random(in: 0..<100, using: &self.random)
            intermediates = roll < 15 ? 0 : (roll < 85 ? 1 : 2)
            chosen = [Self.mutations.randomElement(using: &self.random)!]
            if Int.random(in: 0..<4, using: &self.random) == 0 {
                let other = Self.mutations.filter { Self.combinable(chosen[0].kind, $0.kind) }
                if let second = other.randomElement(using: &self.random) { chosen.append(second) }
            }
        }
        do {
            return try self.build(chosen, index: index, intermediates: intermediates)
        } catch  where chosen.count > 1 {
            // Two mutations can contradict each other (a signature algorithm for the issuer's key, then another
            // key for that issuer): the first one alone, then.
            return try self.build([chosen[0]], index: index, intermediates: intermediates)
        }
    }

    /// Whether two kinds of mutation can apply to one chain without one undoing the other: never the same kind;
    /// not the baseline; not the kinds that restructure the chain (path length, chain shape), which could remove
    /// the certificate the other changed; not a signature algorithm (which sets the issuer's key) with a key size.
    static func combinable(_ first: MutationKind, _ second: MutationKind) -> Bool {
        let restructuring: Set<MutationKind> = [.baseline, .pathLength, .chainShape]
        if first == second || restructuring.contains(first) || restructuring.contains(second) { return false }
        return Set([first, second]) != [.signatureAlgorithm, .keySize]
    }

    func build(_ chosen: [Mutation], index: Int, intermediates: Int) throws -> MutatedChain {
        var plan = Plan(now: self.now, keys: self.keys, intermediates: intermediates)
        for mutation in chosen {
            mutation.apply(&plan)
        }
        return try plan.build(
            index: index,
            kind: chosen.count > 1 ? .combined : chosen[0].kind,
            variants: chosen.map(\.label)
        )
    }

    // MARK: - Plans

    /// Where a mutation applies.
    enum Target: String, CaseIterable {
        case leaf, intermediate, root
    }

    /// How the server presents the chain.
    enum Presentation {
        case normal, withoutIntermediates, reversedIntermediates, withRoot, withUnrelatedCertificate
    }

    /// The chain before it is signed: blueprints from the root (index 0) to the leaf (last).
    struct Plan {
        let now: Date
        let keys: KeyPool
        var blueprints: [CertificateBlueprint]
        var host = "www.example.test"
        var presentation = Presentation.normal
        var leafSelfSigned = false

        init(now: Date, keys: KeyPool, intermediates: Int) {
            self.now = now
            self.keys = keys
            var root = CertificateBlueprint(
                commonName: "Differential Root CA",
                organization: "Bulwark Differential",
                privateKey: keys.p256[0],
                notBefore: now - 10 * 86_400,
                notAfter: now + 365 * 86_400
            )
            root.basicConstraints = .isCertificateAuthority(maxPathLength: nil)
            root.keyUsage = KeyUsage(keyCertSign: true, cRLSign: true)
            var leaf = CertificateBlueprint(
                commonName: "www.example.test",
                privateKey: keys.p256[3],
                notBefore: now - 86_400,
                notAfter: now + 90 * 86_400
            )
            leaf.basicConstraints = .notCertificateAuthority
            leaf.keyUsage = KeyUsage(digitalSignature: true, keyEncipherment: true)
            leaf.extendedKeyUsage = [.serverAuth]
            leaf.subjectAlternativeNames = [.dnsName("www.example.test")]
            self.blueprints = [root, leaf]
            self.ensureIntermediates(intermediates)
        }

        static func intermediate(number: Int, now: Date, keys: KeyPool) -> CertificateBlueprint {
            var blueprint = CertificateBlueprint(
                commonName: "Differential Intermediate CA \(number)",
                organization: "Bulwark Differential",
                privateKey: keys.p256[number],
                notBefore: now - 5 * 86_400,
                notAfter: now + 180 * 86_400
            )
            blueprint.basicConstraints = .isCertificateAuthority(maxPathLength: nil)
            blueprint.keyUsage = KeyUsage(keyCertSign: true, cRLSign: true)
            return blueprint
        }

        var intermediateCount: Int { self.blueprints.count - 2 }
        var leafIndex: Int { self.blueprints.count - 1 }

        /// Adds intermediates (just below the leaf) until there are at least `count`.
        mutating func ensureIntermediates(_ count: Int) {
            while self.intermediateCount < count {
                let number = self.intermediateCount + 1
                self.blueprints.insert(
                    Self.intermediate(number: number, now: self.now, keys: self.keys),
                    at: self.leafIndex
                )
            }
        }

        /// Removes every intermediate: the root issues the leaf.
        mutating func removeIntermediates() {
            self.blueprints.removeSubrange(1..<self.leafIndex)
        }

        /// The index of `target`'s blueprint; an intermediate is added when the target is one and there is none.
        mutating func index(of target: Target) -> Int {
            switch target {
            case .leaf: return self.leafIndex
            case .root: return 0
            case .intermediate:
                self.ensureIntermediates(1)
                return self.leafIndex - 1
            }
        }

        /// Changes `target`'s blueprint.
        mutating func change(_ target: Target, _ body: (inout CertificateBlueprint) -> Void) {
            let index = self.index(of: target)
            body(&self.blueprints[index])
        }

        /// Changes the blueprint of the certificate that signs `target` (the root signs itself).
        mutating func changeIssuer(of target: Target, _ body: (inout CertificateBlueprint) -> Void) {
            let index = self.index(of: target)
            body(&self.blueprints[max(index - 1, 0)])
        }

        func build(index: Int, kind: MutationKind, variants: [String]) throws -> MutatedChain {
            var identities: [TestIdentity] = []
            for (position, blueprint) in self.blueprints.enumerated() {
                let isLeaf = position == self.leafIndex
                let issuer = position == 0 || (isLeaf && self.leafSelfSigned) ? nil : identities[position - 1]
                identities.append(try blueprint.issue(issuer: issuer))
            }
            let leaf = identities[self.leafIndex].certificate
            var intermediates = identities[1..<self.leafIndex].map(\.certificate).reversed() as [Certificate]
            switch self.presentation {
            case .normal: break
            case .withoutIntermediates: intermediates = []
            case .reversedIntermediates: intermediates.reverse()
            case .withRoot: intermediates.append(identities[0].certificate)
            case .withUnrelatedCertificate:
                var unrelated = CertificateBlueprint(
                    commonName: "Unrelated CA",
                    organization: "Bulwark Differential",
                    privateKey: self.keys.p256[4],
                    notBefore: self.now - 86_400,
                    notAfter: self.now + 86_400
                )
                unrelated.basicConstraints = .isCertificateAuthority(maxPathLength: nil)
                unrelated.keyUsage = KeyUsage(keyCertSign: true, cRLSign: true)
                intermediates.insert(try unrelated.issue(issuer: nil).certificate, at: 0)
            }
            return MutatedChain(
                index: index,
                kind: kind,
                variants: variants,
                host: self.host,
                root: identities[0].certificate,
                presented: [leaf] + intermediates
            )
        }
    }

    // MARK: - Mutations

    struct Mutation: Sendable {
        var kind: MutationKind
        var label: String
        var apply: @Sendable (inout Plan) -> Void

        init(_ kind: MutationKind, _ label: String, _ apply: @escaping @Sendable (inout Plan) -> Void) {
            self.kind = kind
            self.label = label
            self.apply = apply
        }

        /// The same change to each target, labelled `target: label`.
        static func each(
            _ kind: MutationKind,
            _ targets: [Target],
            _ label: String,
            _ body: @escaping @Sendable (inout CertificateBlueprint, Plan) -> Void
        ) -> [Mutation] {
            targets.map { target in
                Mutation(kind, "\(target.rawValue): \(label)") { plan in
                    let snapshot = plan
                    plan.change(target) { body(&$0, snapshot) }
                }
            }
        }
    }

    static let unknownExtensionID: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 55_555, 23, 1]
    static let certificatePoliciesID: ASN1ObjectIdentifier = [2, 5, 29, 32]
    /// `certificatePolicies` holding anyPolicy: SEQUENCE { SEQUENCE { OID 2.5.29.32.0 } }.
    static let anyPolicyValue: [UInt8] = [0x30, 0x08, 0x30, 0x06, 0x06, 0x04, 0x55, 0x1D, 0x20, 0x00]
    /// Basic constraints of `cA` FALSE (the default, so absent) with a path length of 0: SEQUENCE { INTEGER 0 }.
    static let notCAWithPathLengthValue: [UInt8] = [0x30, 0x03, 0x02, 0x01, 0x00]

    static func ip(_ text: String) -> ASN1OctetString {
        ASN1OctetString(contentBytes: ArraySlice((try? CertificateFactory.ipBytes(text)) ?? []))
    }

    static func ipRange(_ address: String, _ mask: String) -> ASN1OctetString {
        let bytes = ((try? CertificateFactory.ipBytes(address)) ?? []) + ((try? CertificateFactory.ipBytes(mask)) ?? [])
        return ASN1OctetString(contentBytes: ArraySlice(bytes))
    }

    /// Every single mutation, in the order of the first pass.
    static let mutations: [Mutation] = {
        var all: [Mutation] = []
        let everyTarget = Target.allCases
        let caTargets: [Target] = [.intermediate, .root]

        // Baseline: valid chains of every length and key type.
        all.append(Mutation(.baseline, "valid, one intermediate") { _ in })
        all.append(Mutation(.baseline, "valid, root issues the leaf") { $0.removeIntermediates() })
        all.append(Mutation(.baseline, "valid, two intermediates") { $0.ensureIntermediates(2) })
        all.append(
            Mutation(.baseline, "valid, RSA-2048 throughout") { plan in
                plan.ensureIntermediates(1)
                plan.blueprints[0].privateKey = plan.keys.rsa2048[0]
                plan.blueprints[1].privateKey = plan.keys.rsa2048[1]
                plan.blueprints[plan.leafIndex].privateKey = plan.keys.rsa3072
            }
        )

        // Validity.
        all += Mutation.each(.validity, everyTarget, "expired yesterday") { cert, plan in
            cert.notBefore = plan.now - 30 * 86_400
            cert.notAfter = plan.now - 86_400
        }
        all += Mutation.each(.validity, everyTarget, "expired one second ago") { cert, plan in
            cert.notAfter = plan.now - 1
        }
        all += Mutation.each(.validity, everyTarget, "valid from tomorrow") { cert, plan in
            cert.notBefore = plan.now + 86_400
            cert.notAfter = plan.now + 30 * 86_400
        }
        all += Mutation.each(.validity, everyTarget, "notBefore after notAfter") { cert, plan in
            cert.notBefore = plan.now + 30 * 86_400
            cert.notAfter = plan.now - 30 * 86_400
        }
        all += Mutation.each(.validity, everyTarget, "notAfter is the evaluation second") { cert, plan in
            cert.notAfter = plan.now
        }
        all += Mutation.each(.validity, everyTarget, "notBefore is the evaluation second") { cert, plan in
            cert.notBefore = plan.now
        }
        all += Mutation.each(.validity, everyTarget, "valid until 2050 (GeneralizedTime)") { cert, _ in
            cert.notAfter = Date(timeIntervalSince1970: 2_556_143_999)  // 2050-12-31T23:59:59Z
        }

        // Key usage.
        let leafUsages: [(String, KeyUsage?)] = [
            ("no key usage", nil),
            ("digitalSignature only", KeyUsage(digitalSignature: true)),
            ("keyEncipherment only", KeyUsage(keyEncipherment: true)),
            ("keyAgreement only", KeyUsage(keyAgreement: true)),
            ("cRLSign only", KeyUsage(cRLSign: true)),
            ("nonRepudiation only", KeyUsage(nonRepudiation: true)),
            ("dataEncipherment only", KeyUsage(dataEncipherment: true)),
            ("with keyCertSign", KeyUsage(digitalSignature: true, keyCertSign: true)),
        ]
        for (label, usage) in leafUsages {
            all += Mutation.each(.keyUsage, [.leaf], label) { cert, _ in cert.keyUsage = usage }
        }
        let caUsages: [(String, KeyUsage?)] = [
            ("no key usage", nil),
            ("without keyCertSign", KeyUsage(digitalSignature: true, cRLSign: true)),
            ("keyCertSign only", KeyUsage(keyCertSign: true)),
            ("with digitalSignature", KeyUsage(digitalSignature: true, keyCertSign: true, cRLSign: true)),
        ]
        for (label, usage) in caUsages {
            all += Mutation.each(.keyUsage, caTargets, label) { cert, _ in cert.keyUsage = usage }
        }
        all += Mutation.each(.keyUsage, everyTarget, "key usage not critical") { cert, _ in
            cert.keyUsageCritical = false
        }

        // Extended key usage.
        let leafEKUs: [(String, [ExtendedKeyUsage.Usage]?)] = [
            ("clientAuth only", [.clientAuth]),
            ("anyExtendedKeyUsage only", [.any]),
            ("serverAuth and anyExtendedKeyUsage", [.serverAuth, .any]),
            ("no extended key usage", nil),
            ("serverAuth and clientAuth", [.serverAuth, .clientAuth]),
            ("codeSigning only", [.codeSigning]),
        ]
        for (label, usages) in leafEKUs {
            all += Mutation.each(.extendedKeyUsage, [.leaf], label) { cert, _ in cert.extendedKeyUsage = usages }
        }
        all += Mutation.each(.extendedKeyUsage, [.leaf], "critical serverAuth") { cert, _ in
            cert.extendedKeyUsageCritical = true
        }
        let caEKUs: [(String, [ExtendedKeyUsage.Usage])] = [
            ("serverAuth", [.serverAuth]),
            ("clientAuth only", [.clientAuth]),
            ("anyExtendedKeyUsage only", [.any]),
            ("serverAuth and clientAuth", [.serverAuth, .clientAuth]),
        ]
        for (label, usages) in caEKUs {
            all += Mutation.each(.extendedKeyUsage, caTargets, label) { cert, _ in cert.extendedKeyUsage = usages }
        }

        // Basic constraints.
        all += Mutation.each(.basicConstraints, everyTarget, "no basic constraints") { cert, _ in
            cert.basicConstraints = nil
        }
        all += Mutation.each(.basicConstraints, everyTarget, "basic constraints not critical") { cert, _ in
            cert.basicConstraintsCritical = false
        }
        all += Mutation.each(.basicConstraints, caTargets, "CA:FALSE") { cert, _ in
            cert.basicConstraints = .notCertificateAuthority
        }
        all += Mutation.each(.basicConstraints, [.leaf], "CA:TRUE") { cert, _ in
            cert.basicConstraints = .isCertificateAuthority(maxPathLength: nil)
        }
        all += Mutation.each(.basicConstraints, [.leaf], "CA:FALSE with a path length") { cert, _ in
            cert.basicConstraints = nil
            cert.extraExtensions.append(
                Certificate.Extension(
                    oid: .X509ExtensionID.basicConstraints,
                    critical: true,
                    value: ArraySlice(Self.notCAWithPathLengthValue)
                )
            )
        }

        // Path length.
        all.append(
            Mutation(.pathLength, "intermediate: pathLen 0 above another intermediate") { plan in
                plan.ensureIntermediates(2)
                plan.blueprints[1].basicConstraints = .isCertificateAuthority(maxPathLength: 0)
            }
        )
        all.append(
            Mutation(.pathLength, "intermediate: pathLen 0 above the leaf") { plan in
                plan.change(.intermediate) { $0.basicConstraints = .isCertificateAuthority(maxPathLength: 0) }
            }
        )
        all.append(
            Mutation(.pathLength, "intermediate: pathLen 1 above another intermediate") { plan in
                plan.ensureIntermediates(2)
                plan.blueprints[1].basicConstraints = .isCertificateAuthority(maxPathLength: 1)
            }
        )
        all.append(
            Mutation(.pathLength, "root: pathLen 0 above an intermediate") { plan in
                plan.ensureIntermediates(1)
                plan.blueprints[0].basicConstraints = .isCertificateAuthority(maxPathLength: 0)
            }
        )
        all.append(
            Mutation(.pathLength, "root: pathLen 0 above the leaf") { plan in
                plan.removeIntermediates()
                plan.blueprints[0].basicConstraints = .isCertificateAuthority(maxPathLength: 0)
            }
        )
        all.append(
            Mutation(.pathLength, "root: pathLen 1 above two intermediates") { plan in
                plan.ensureIntermediates(2)
                plan.blueprints[0].basicConstraints = .isCertificateAuthority(maxPathLength: 1)
            }
        )
        all.append(
            Mutation(.pathLength, "root: pathLen 1 above one intermediate") { plan in
                plan.removeIntermediates()
                plan.ensureIntermediates(1)
                plan.blueprints[0].basicConstraints = .isCertificateAuthority(maxPathLength: 1)
            }
        )

        // Name constraints (the leaf names www.example.test).
        let dnsConstraints: [(String, NameConstraints)] = [
            ("permits example.test", NameConstraints(permittedDNSDomains: ["example.test"])),
            ("permits .example.test", NameConstraints(permittedDNSDomains: [".example.test"])),
            ("permits other.test only", NameConstraints(permittedDNSDomains: ["other.test"])),
            ("permits ample.test (a suffix, not a domain)", NameConstraints(permittedDNSDomains: ["ample.test"])),
            ("excludes example.test", NameConstraints(excludedDNSDomains: ["example.test"])),
            ("excludes www.example.test", NameConstraints(excludedDNSDomains: ["www.example.test"])),
            ("excludes other.test", NameConstraints(excludedDNSDomains: ["other.test"])),
            (
                "permits only 10.0.0.0/8 (IP)",
                NameConstraints(permittedIPRanges: [Self.ipRange("10.0.0.0", "255.0.0.0")])
            ),
        ]
        for (label, constraints) in dnsConstraints {
            all += Mutation.each(.nameConstraints, caTargets, label) { cert, _ in cert.nameConstraints = constraints }
        }
        all += Mutation.each(.nameConstraints, caTargets, "permits example.test, not critical") { cert, _ in
            cert.nameConstraints = NameConstraints(permittedDNSDomains: ["example.test"])
            cert.nameConstraintsCritical = false
        }
        all.append(
            Mutation(.nameConstraints, "intermediate: permits example.test, leaf CN outside it") { plan in
                plan.change(.intermediate) {
                    $0.nameConstraints = NameConstraints(permittedDNSDomains: ["example.test"])
                }
                plan.change(.leaf) { $0.commonName = "www.outside.test" }
            }
        )
        all.append(
            Mutation(.nameConstraints, "intermediate: permits example.test, wildcard leaf") { plan in
                plan.change(.intermediate) {
                    $0.nameConstraints = NameConstraints(permittedDNSDomains: ["example.test"])
                }
                plan.change(.leaf) { $0.subjectAlternativeNames = [.dnsName("*.example.test")] }
            }
        )
        all.append(
            Mutation(.nameConstraints, "intermediate: permits example.test, second SAN outside") { plan in
                plan.change(.intermediate) {
                    $0.nameConstraints = NameConstraints(permittedDNSDomains: ["example.test"])
                }
                plan.change(.leaf) {
                    $0.subjectAlternativeNames = [.dnsName("www.example.test"), .dnsName("evil.test")]
                }
            }
        )
        all.append(
            Mutation(.nameConstraints, "intermediate: permits 127.0.0.0/8, IP leaf") { plan in
                plan.host = "127.0.0.1"
                plan.change(.intermediate) {
                    $0.nameConstraints = NameConstraints(permittedIPRanges: [Self.ipRange("127.0.0.0", "255.0.0.0")])
                }
                plan.change(.leaf) {
                    $0.commonName = "127.0.0.1"
                    $0.subjectAlternativeNames = [.ipAddress(Self.ip("127.0.0.1"))]
                }
            }
        )
        all.append(
            Mutation(.nameConstraints, "intermediate: excludes 127.0.0.0/8, IP leaf") { plan in
                plan.host = "127.0.0.1"
                plan.change(.intermediate) {
                    $0.nameConstraints = NameConstraints(excludedIPRanges: [Self.ipRange("127.0.0.0", "255.0.0.0")])
                }
                plan.change(.leaf) {
                    $0.commonName = "127.0.0.1"
                    $0.subjectAlternativeNames = [.ipAddress(Self.ip("127.0.0.1"))]
                }
            }
        )
        all.append(
            Mutation(.nameConstraints, "intermediate: permits other.test, CN-only leaf") { plan in
                plan.change(.intermediate) { $0.nameConstraints = NameConstraints(permittedDNSDomains: ["other.test"]) }
                plan.change(.leaf) { $0.subjectAlternativeNames = nil }
            }
        )
        all += Mutation.each(.nameConstraints, [.leaf], "carries name constraints") { cert, _ in
            cert.nameConstraints = NameConstraints(permittedDNSDomains: ["example.test"])
        }

        // Subject alternative names (the host is www.example.test unless a mutation changes it).
        func san(
            _ label: String,
            host: String = "www.example.test",
            commonName: String? = "www.example.test",
            _ names: [GeneralName]?,
            critical: Bool = false
        ) -> Mutation {
            Mutation(.subjectAlternativeName, "leaf: \(label)") { plan in
                plan.host = host
                plan.change(.leaf) {
                    $0.commonName = commonName
                    $0.subjectAlternativeNames = names
                    $0.subjectAlternativeNamesCritical = critical
                }
            }
        }
        all += [
            san("names another host", [.dnsName("other.test")]),
            san("second name matches", [.dnsName("other.test"), .dnsName("www.example.test")]),
            san("upper case", [.dnsName("WWW.EXAMPLE.TEST")]),
            san("wildcard matches", [.dnsName("*.example.test")]),
            san("wildcard, host two labels down", host: "a.www.example.test", [.dnsName("*.example.test")]),
            san("wildcard, host is the apex", host: "example.test", [.dnsName("*.example.test")]),
            san("partial-label wildcard w*", [.dnsName("w*.example.test")]),
            san("wildcard in a middle label", host: "www.a.test", [.dnsName("www.*.test")]),
            san("wildcard over a top-level domain", host: "example.test", [.dnsName("*.test")]),
            san("bare wildcard", [.dnsName("*")]),
            san("trailing dot", [.dnsName("www.example.test.")]),
            san("underscore label", host: "_srv.example.test", [.dnsName("_srv.example.test")]),
            san("punycode label", host: "xn--bcher-kva.example.test", [.dnsName("xn--bcher-kva.example.test")]),
            san("no SAN, host in the CN", nil),
            san("CN names another host, SAN matches", commonName: "other.test", [.dnsName("www.example.test")]),
            san("IP SAN only, DNS host", [.ipAddress(Self.ip("127.0.0.1"))]),
            san("IP address matches", host: "127.0.0.1", commonName: "127.0.0.1", [.ipAddress(Self.ip("127.0.0.1"))]),
            san("IP address differs", host: "127.0.0.2", commonName: "127.0.0.1", [.ipAddress(Self.ip("127.0.0.1"))]),
            san("IPv6 address matches", host: "::1", commonName: nil, [.ipAddress(Self.ip("::1"))], critical: true),
            san("IP host written as a DNS SAN", host: "127.0.0.1", commonName: "127.0.0.1", [.dnsName("127.0.0.1")]),
            san("IP host only in the CN", host: "127.0.0.1", commonName: "127.0.0.1", [.dnsName("other.test")]),
            san("empty subject, critical SAN", commonName: nil, [.dnsName("www.example.test")], critical: true),
            san("empty subject, SAN not critical", commonName: nil, [.dnsName("www.example.test")]),
            san("critical SAN with a subject", [.dnsName("www.example.test")], critical: true),
        ]

        // Signature algorithms: how the issuer signs the target.
        let ecdsaAlgorithms: [(String, Certificate.SignatureAlgorithm)] = [
            ("ecdsa-with-SHA256", .ecdsaWithSHA256), ("ecdsa-with-SHA384", .ecdsaWithSHA384),
            ("ecdsa-with-SHA512", .ecdsaWithSHA512),
        ]
        let rsaAlgorithms: [(String, Certificate.SignatureAlgorithm)] = [
            ("sha256WithRSAEncryption", .sha256WithRSAEncryption),
            ("sha384WithRSAEncryption", .sha384WithRSAEncryption),
            ("sha512WithRSAEncryption", .sha512WithRSAEncryption),
            ("sha1WithRSAEncryption", .sha1WithRSAEncryption),
        ]
        for target in [Target.leaf, .intermediate] {
            for (label, algorithm) in ecdsaAlgorithms {
                all.append(
                    Mutation(.signatureAlgorithm, "\(target.rawValue): signed \(label) by P-384") { plan in
                        let keys = plan.keys
                        plan.changeIssuer(of: target) { $0.privateKey = keys.p384 }
                        plan.change(target) { $0.signatureAlgorithm = algorithm }
                    }
                )
            }
            for (label, algorithm) in rsaAlgorithms {
                all.append(
                    Mutation(.signatureAlgorithm, "\(target.rawValue): signed \(label)") { plan in
                        let keys = plan.keys
                        plan.changeIssuer(of: target) { $0.privateKey = keys.rsa2048[1] }
                        plan.change(target) { $0.signatureAlgorithm = algorithm }
                    }
                )
            }
        }

        // Key sizes: the target's own key.
        let keyChoices: [(String, @Sendable (KeyPool) -> Certificate.PrivateKey)] = [
            ("P-384", { $0.p384 }), ("P-521", { $0.p521 }), ("RSA-2048", { $0.rsa2048[0] }),
            ("RSA-3072", { $0.rsa3072 }), ("RSA-1024", { $0.rsa1024 }),
        ]
        for (label, key) in keyChoices {
            all += Mutation.each(.keySize, everyTarget, "\(label) key") { cert, plan in
                cert.privateKey = key(plan.keys)
            }
        }

        // Extensions.
        all += Mutation.each(.criticalExtension, everyTarget, "unknown critical extension") { cert, _ in
            cert.extraExtensions.append(
                Certificate.Extension(oid: Self.unknownExtensionID, critical: true, value: [0x05, 0x00])
            )
        }
        all += Mutation.each(.criticalExtension, everyTarget, "unknown non-critical extension") { cert, _ in
            cert.extraExtensions.append(
                Certificate.Extension(oid: Self.unknownExtensionID, critical: false, value: [0x05, 0x00])
            )
        }
        all += Mutation.each(.criticalExtension, everyTarget, "critical certificate policies (anyPolicy)") { cert, _ in
            cert.extraExtensions.append(
                Certificate.Extension(
                    oid: Self.certificatePoliciesID,
                    critical: true,
                    value: ArraySlice(Self.anyPolicyValue)
                )
            )
        }
        all += Mutation.each(.criticalExtension, everyTarget, "critical subject key identifier") { cert, _ in
            cert.subjectKeyIdentifierCritical = true
        }
        all += Mutation.each(.criticalExtension, everyTarget, "critical authority key identifier") { cert, _ in
            cert.authorityKeyIdentifierCritical = true
        }
        all += Mutation.each(.criticalExtension, everyTarget, "no subject key identifier") { cert, _ in
            cert.includesSubjectKeyIdentifier = false
        }
        all += Mutation.each(.criticalExtension, everyTarget, "no authority key identifier") { cert, _ in
            cert.includesAuthorityKeyIdentifier = false
        }

        // Chain shapes.
        all.append(
            Mutation(.chainShape, "intermediate not sent") { plan in
                plan.ensureIntermediates(1)
                plan.presentation = .withoutIntermediates
            }
        )
        all.append(
            Mutation(.chainShape, "intermediates sent in reverse order") { plan in
                plan.ensureIntermediates(2)
                plan.presentation = .reversedIntermediates
            }
        )
        all.append(Mutation(.chainShape, "root sent too") { $0.presentation = .withRoot })
        all.append(Mutation(.chainShape, "unrelated CA sent too") { $0.presentation = .withUnrelatedCertificate })
        all.append(
            Mutation(.chainShape, "self-signed leaf") { plan in
                plan.removeIntermediates()
                plan.leafSelfSigned = true
            }
        )
        return all
    }()
}
