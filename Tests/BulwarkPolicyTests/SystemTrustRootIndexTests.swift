import BulwarkTestSupport
import Crypto
import Foundation
import SwiftASN1
import Testing
@_spi(Testing) import X509

@testable import BulwarkPolicy

/// The system bundle indexed by subject, each root parsed when a chain names it: the same roots, in the same order,
/// and so the same verification results as swift-certificates' parse of the whole bundle.
@Suite("System trust roots: indexed by subject, parsed when a chain names them")
struct SystemTrustRootIndexTests {
    /// Roots of their own names (the matrix's roots all share one), and chains under two of them.
    struct Fixture {
        let rootA: TestIdentity
        let rootB: TestIdentity
        let rootC: TestIdentity
        /// An expired copy of root A under the same subject and key, first in the bundle (as a renewed root can be).
        let twin: Certificate
        /// Host, intermediate and leaf under root A, valid.
        let valid: [Certificate]
        /// The same under root B, with an expired leaf.
        let expired: [Certificate]

        var roots: [Certificate] {
            [self.twin, self.rootA.certificate, self.rootB.certificate, self.rootC.certificate]
        }
        var pem: String {
            get throws { try self.roots.map { try $0.serializeAsPEM().pemString + "\n" }.joined() }
        }

        static let shared = try! Fixture()

        init() throws {
            self.rootA = try CertificateFactory.makeRoot(commonName: "Index Root A")
            self.rootB = try CertificateFactory.makeRoot(commonName: "Index Root B")
            self.rootC = try CertificateFactory.makeRoot(commonName: "Index Root C")
            self.twin = try VerifiedPathMemoTests.expiredTwin(of: self.rootA)
            self.valid = try Self.chain(under: self.rootA, validity: .current)
            self.expired = try Self.chain(under: self.rootB, validity: .expired)
        }

        static func chain(under root: TestIdentity, validity: CertificateFactory.Validity) throws -> [Certificate] {
            let intermediate = try CertificateFactory.issueIntermediate(
                from: root,
                commonName: "Intermediate of \(root.certificate.subject)"
            )
            let leaf = try CertificateFactory.issueLeaf(
                from: intermediate,
                commonName: Chains.host,
                dnsNames: [Chains.host],
                validity: validity
            )
            return [leaf.certificate, intermediate.certificate]
        }
    }

    static func write(_ text: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appending(path: "bulwark-roots-\(UUID().uuidString).pem")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test func aChainParsesOnlyTheRootsItNamesOnce() throws {
        let fixture = Fixture.shared
        let index = SystemTrustRootIndex(pem: try fixture.pem)
        #expect(index.failure == nil)
        #expect(index.count == 4)
        #expect(index.current.generation == 0)
        #expect(index.parsedCertificates.isEmpty)

        let first = index.snapshot(for: fixture.valid)
        // The two roots named by the intermediate's issuer, in the bundle's order; nothing else.
        #expect(index.parsedCertificates == [fixture.twin, fixture.rootA.certificate])
        #expect(first.generation == 1)
        // Asked again: nothing parsed, the same generation (the verifier built for it is kept).
        #expect(index.snapshot(for: fixture.valid).identity == first.identity)

        // A chain that names no root of the bundle parses nothing and keeps the generation.
        let stranger = try Fixture.chain(
            under: try CertificateFactory.makeRoot(commonName: "Stranger"),
            validity: .current
        )
        #expect(index.snapshot(for: stranger).identity == first.identity)
        #expect(index.parsedCertificates.count == 2)

        // A root presented as the leaf is named by its own subject.
        #expect(index.snapshot(for: [fixture.rootC.certificate]).generation == 2)
        #expect(index.parsedCertificates.last == fixture.rootC.certificate)
        // Another index of the same bundle: its snapshots are told apart from this one's.
        #expect(SystemTrustRootIndex(pem: try fixture.pem).current.identity != index.current.identity)
    }

    @Test func eachSubjectHoldsWhatSwiftCertificatesGivesItInTheSameOrder() throws {
        let file = try Self.write(try Fixture.shared.pem)
        defer { try? FileManager.default.removeItem(at: file) }
        let whole = try CertificateStore.loadTrustRoots(at: [file.path])
        let index = SystemTrustRootIndex(searchPaths: ["/nonexistent/bulwark/roots.pem", file.path])
        #expect(index.failure == nil)
        for (subject, certificates) in whole {
            _ = index.snapshot(for: [certificates[0]])
            #expect(index.parsedCertificates.filter { $0.subject == subject } == certificates)
        }
        #expect(index.parsedCertificates.count == whole.values.reduce(0) { $0 + $1.count })
    }

    /// The machine's own bundle, as a client reads it: the same count, and for every subject the same roots in the
    /// same order as swift-certificates' parse of the whole file; without a bundle, neither trusts any system root.
    @Test func theSystemBundleIsIndexedAsSwiftCertificatesParsesIt() throws {
        let index = SystemTrustRootIndex(searchPaths: SystemTrustRootIndex.searchPaths)
        guard let whole = try? CertificateStore.loadTrustRoots(at: SystemTrustRootIndex.searchPaths) else {
            // No bundle on this machine (scripts/test installs ca-certificates, so never in its runs).
            #expect(index.count == 0)
            #expect(index.failure != nil)
            return
        }
        #expect(index.failure == nil)
        #expect(index.count == whole.values.reduce(0) { $0 + $1.count })
        #expect(index.count > 50)
        for (subject, certificates) in whole {
            let snapshot = index.snapshot(for: [certificates[0]])
            #expect(index.parsedCertificates.filter { $0.subject == subject } == certificates, "\(subject)")
            #expect(snapshot.generation <= whole.count)
        }
        #expect(index.parsedCertificates.count == index.count)
    }

    /// Against the machine's bundle, the verifier Bulwark builds (its policies) gives the same result with the roots
    /// the index parsed for a chain as with swift-certificates' store of the whole bundle, for every root of it: the
    /// root presented as the server's certificate, and a leaf that names the root as its issuer but was signed by
    /// another key. (The tests above run on generated bundles; this one needs the machine's, which scripts/test
    /// installs.)
    @Test func everySystemRootGivesTheSameResultAsTheWholeBundle() async throws {
        let whole = try CertificateStore.loadTrustRoots(at: SystemTrustRootIndex.searchPaths)
        let index = SystemTrustRootIndex(searchPaths: SystemTrustRootIndex.searchPaths)
        let key = P256.Signing.PrivateKey()
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let chainVerifier = ChainVerifier(roots: .systemAnd([]), options: ValidationOptions(), systemRootIndex: index)
        let wholeVerifier = BuiltVerifier(
            verifier: chainVerifier.makeVerifier(at: now, systemRoots: CertificateStore.systemTrustRoots)
        )
        var compared = 0
        var valid = 0
        for root in whole.values.joined() {
            let forged = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: .init(key.publicKey),
                notValidBefore: now - 3600,
                notValidAfter: now + 3600,
                issuer: root.subject,
                subject: try DistinguishedName { CommonName(Chains.host) },
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    SubjectAlternativeNames([.dnsName(Chains.host)])
                    try ExtendedKeyUsage([.serverAuth])
                },
                issuerPrivateKey: .init(key)
            )
            for presented in [[root], [forged]] {
                let indexed = BuiltVerifier(
                    verifier: chainVerifier.makeVerifier(at: now, systemRoots: index.snapshot(for: presented).store)
                )
                let leaf = presented[0]
                let got = await indexed.validate(leaf: leaf, intermediates: CertificateStore()).result
                let want = await wholeVerifier.validate(leaf: leaf, intermediates: CertificateStore()).result
                #expect("\(got)" == "\(want)", "\(leaf.subject)")
                if case .validCertificate = want { valid += 1 }
                compared += 1
            }
        }
        #expect(compared == 2 * index.count)
        #expect(index.parsedCertificates.count == index.count)
        // Some roots presented alone are trusted (the store's exact-match check), so both outcomes were compared.
        #expect(valid > 0)
    }

    @Test(arguments: [
        ("a private key block", "-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"),
        ("broken PEM", "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n"),
        ("a block that is not a certificate", "-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n"),
    ])
    func aBundleThatCannotBeReadAsCertificatesGivesNoRootsAsSwiftCertificatesDoes(
        _ row: (name: String, block: String)
    ) throws {
        let file = try Self.write(try Fixture.shared.pem + row.block)
        defer { try? FileManager.default.removeItem(at: file) }
        let index = SystemTrustRootIndex(searchPaths: [file.path])
        #expect(index.count == 0, "\(row.name)")
        #expect(index.failure?.contains(file.path) == true, "\(row.name): \(index.failure ?? "")")
        #expect(index.snapshot(for: Fixture.shared.valid).generation == 0)
        #expect(throws: (any Error).self, "\(row.name)") { try CertificateStore.loadTrustRoots(at: [file.path]) }
    }

    @Test func noReadableFileGivesNoRootsAndNamesThePathsTried() {
        let index = SystemTrustRootIndex(searchPaths: ["/nonexistent/bulwark/a.pem", "/nonexistent/bulwark/b.pem"])
        #expect(index.count == 0)
        #expect(
            index.failure
                == "no system trust bundle could be read (tried /nonexistent/bulwark/a.pem, /nonexistent/bulwark/b.pem)"
        )
    }

    /// A root whose subject can be read but whose certificate cannot be parsed (here its signature algorithm is an
    /// integer) is left out; the others stay. swift-certificates refuses the whole bundle then.
    @Test func aRootThatDoesNotParseIsLeftOutAlone() async throws {
        let fixture = Fixture.shared
        let broken = try CertificateFactory.makeRoot(commonName: "Index Root That Does Not Parse").certificate
        var serializer = DER.Serializer()
        try serializer.serialize(broken)
        let toBeSigned = try DER.sequence(DER.parse(serializer.serializedBytes), identifier: .sequence) { parts in
            let body = try ASN1Any(derEncoded: parts.next()!)
            while parts.next() != nil {}
            return body
        }
        var mangled = DER.Serializer()
        try mangled.appendConstructedNode(identifier: .sequence) { certificate in
            try certificate.serialize(toBeSigned)
            try certificate.serialize(5)
            try certificate.serialize(ASN1BitString(bytes: [1, 2, 3]))
        }
        #expect(throws: (any Error).self) { try Certificate(derEncoded: mangled.serializedBytes) }
        let block = PEMDocument(type: "CERTIFICATE", derBytes: mangled.serializedBytes).pemString + "\n"
        let file = try Self.write(block + (try fixture.pem))
        defer { try? FileManager.default.removeItem(at: file) }

        let index = SystemTrustRootIndex(searchPaths: [file.path])
        #expect(index.failure == nil)
        #expect(index.count == 5)
        #expect(index.snapshot(for: [broken]).generation == 0)
        #expect(index.parsedCertificates.isEmpty)
        let verifier = ChainVerifier(roots: .systemAnd([]), options: ValidationOptions(), systemRootIndex: index)
        guard case .verified(let trusted) = await verifier.verify(fixture.valid, at: Date()) else {
            Issue.record("the chain of a root that parses was refused")
            return
        }
        #expect(trusted.last == fixture.rootA.certificate)
        #expect(throws: (any Error).self) { try CertificateStore.loadTrustRoots(at: [file.path]) }
    }

    /// The verifier kept for a second is rebuilt when the system roots parsed so far grow, and a chain verified with
    /// the roots it named verifies again from the memo.
    @Test func verificationsGrowTheStoreAndKeepTheirResults() async throws {
        let fixture = Fixture.shared
        let index = SystemTrustRootIndex(pem: try fixture.pem)
        let verifier = ChainVerifier(roots: .systemAnd([]), options: ValidationOptions(), systemRootIndex: index)
        let now = Date()
        guard case .verified(let first) = await verifier.verify(fixture.valid, at: now) else {
            Issue.record("refused with its root in the bundle")
            return
        }
        #expect(first.last == fixture.rootA.certificate)
        guard case .failed(let reasons) = await verifier.verify(fixture.expired, at: now) else {
            Issue.record("an expired leaf was trusted")
            return
        }
        #expect(reasons.map(\.shortDescription).contains("expired"))
        #expect(index.current.generation == 2)
        guard case .verified(let again) = await verifier.verify(fixture.valid, at: now) else {
            Issue.record("refused the second time")
            return
        }
        #expect(again == first)
        // Without the bundle, the same chain is refused: the roots came from it; the refusal says the bundle was not
        // read (the review's finding 3: it said only "not a trusted root").
        let empty = SystemTrustRootIndex(searchPaths: ["/nonexistent/bulwark/roots.pem"])
        let refusing = ChainVerifier(roots: .systemAnd([]), options: ValidationOptions(), systemRootIndex: empty)
        guard case .failed(let refusal) = await refusing.verify(fixture.valid, at: now) else {
            Issue.record("trusted without its root")
            return
        }
        let words = refusal.map(\.description).joined(separator: "\n")
        #expect(
            words.contains("no system trust bundle could be read (tried /nonexistent/bulwark/roots.pem)"),
            "\(words)"
        )
    }
}

/// The attack review of the index (helper-17): a verifier's default index was `SystemTrustRootIndex.shared`, read
/// when any verifier was made, so a client with only its own roots read and indexed the system bundle in its first
/// verification (a bundle path that blocks, such as a FIFO, then stalled it).
@Suite("System trust roots: read only for roots that include them")
struct SystemTrustRootReadingTests {
    @Test func aVerifierOfItsOwnRootsHoldsNoIndex() {
        let own = ChainVerifier(roots: .custom([Chains[.valid].root.certificate]), options: ValidationOptions())
        #expect(own.systemRootIndex == nil)
        let system = ChainVerifier(roots: .system, options: ValidationOptions())
        #expect(system.systemRootIndex == nil)  // the shared index is read by the verification, for these only
    }
}
