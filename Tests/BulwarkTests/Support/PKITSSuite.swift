import BulwarkPolicy
import BulwarkTestHelpers
import Foundation
import SwiftASN1
import X509

/// NIST's Public Key Interoperability Test Suite (PKITS, 2011 edition) as PyPI's `cryptography-vectors` ships it
/// (`scripts/test` installs it into `.venv`): every end-entity certificate of sections 4.1–4.16, judged against the
/// suite's trust anchor with the suite's whole pool of CA certificates and revocation lists, as a relying party with
/// a directory would (the path is built, never given).
struct PKITSSuite: Sendable {
    /// One test of the suite: its end-entity certificate's file name without `EE.crt`.
    struct Case: Sendable {
        var name: String
        var section: Int
        var leaf: Certificate?
        var leafDER: [UInt8]
        /// Why swift-certificates cannot read the leaf, when it cannot.
        var unreadable: String?
        /// `true` for a "Valid…" test, `false` for an "Invalid…" one, `nil` when the test's name says neither
        /// (certificate-policy tests whose result depends on the initial policy settings).
        var expectedValid: Bool? {
            if self.name.hasPrefix("Valid") { return true }
            if self.name.hasPrefix("Invalid") { return false }
            return nil
        }
    }

    /// The directory the data is in.
    let directory: URL
    let anchor: Certificate
    let anchorDER: [UInt8]
    /// The CA certificates Bulwark can read, and the DER of every CA certificate (for OpenSSL).
    let pool: [Certificate]
    let poolDER: [[UInt8]]
    /// The revocation lists Bulwark accepts, and the DER of every list (for OpenSSL).
    let lists: [CertificateRevocationList]
    let listsDER: [[UInt8]]
    /// Lists Bulwark refused to load, by file name, with the reason.
    let refusedLists: [String: String]
    let cases: [Case]

    /// The time every case is judged at: within every valid certificate and list of the suite (2010–2030).
    static let time = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    /// The number of tests in each section of the PKITS document; 4.8.1 reuses 4.1.1's certificate, so the data
    /// holds one end-entity certificate fewer for 4.8.
    static let documentedCounts: [Int: Int] = [
        1: 6, 2: 8, 3: 11, 4: 21, 5: 8, 6: 17, 7: 5, 8: 20, 9: 8, 10: 14, 11: 11, 12: 10, 13: 38, 14: 35, 15: 10, 16: 2,
    ]

    static let sectionTitles: [Int: String] = [
        1: "Signature verification", 2: "Validity periods", 3: "Name chaining", 4: "Basic certificate revocation",
        5: "Self-issued certificates", 6: "Basic constraints", 7: "Key usage", 8: "Certificate policies",
        9: "Require explicit policy", 10: "Policy mappings", 11: "Inhibit policy mapping", 12: "Inhibit any policy",
        13: "Name constraints", 14: "Distribution points", 15: "Delta-CRLs", 16: "Private certificate extensions",
    ]

    /// Where the data is: `BULWARK_PKITS`, else the repository's `.venv`.
    static func locate() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["BULWARK_PKITS"] {
            return URL(fileURLWithPath: path)
        }
        let lib = ExternalPeers.repositoryRoot.appending(path: ".venv/lib")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? []
        for version in versions.sorted() where version.hasPrefix("python3") {
            let candidate = lib.appending(path: "\(version)/site-packages/cryptography_vectors/x509/PKITS_data")
            if FileManager.default.fileExists(atPath: candidate.appending(path: "certs").path) { return candidate }
        }
        throw ProcessRunner.Failure(
            description: "PKITS data not found: scripts/test installs cryptography-vectors into .venv "
                + "(or set BULWARK_PKITS to a PKITS_data directory)"
        )
    }

    static func load() throws -> PKITSSuite {
        let directory = try Self.locate()
        let manager = FileManager.default
        let certificates = directory.appending(path: "certs")
        let names = try manager.contentsOfDirectory(atPath: certificates.path).filter { $0.hasSuffix(".crt") }.sorted()
        var pool: [Certificate] = []
        var poolDER: [[UInt8]] = []
        var cases: [Case] = []
        var anchor: (Certificate, [UInt8])?
        for name in names {
            let der = try Array(Data(contentsOf: certificates.appending(path: name)))
            let parsed = Result { try Certificate(derEncoded: der) }
            let certificate = try? parsed.get()
            if name == "TrustAnchorRootCertificate.crt" {
                guard let certificate else { throw ProcessRunner.Failure(description: "unreadable \(name)") }
                anchor = (certificate, der)
            } else if name.hasSuffix("EE.crt") {
                let test = String(name.dropLast("EE.crt".count))
                var unreadable: String?
                if case .failure(let error) = parsed { unreadable = String(describing: error) }
                cases.append(
                    Case(
                        name: test,
                        section: Self.section(of: test),
                        leaf: certificate,
                        leafDER: der,
                        unreadable: unreadable
                    )
                )
            } else {
                poolDER.append(der)
                // A certificate swift-certificates cannot read (a DSA key) cannot be on a Bulwark path.
                if let certificate { pool.append(certificate) }
            }
        }
        guard let anchor else { throw ProcessRunner.Failure(description: "no TrustAnchorRootCertificate.crt") }
        let crlDirectory = directory.appending(path: "crls")
        var lists: [CertificateRevocationList] = []
        var listsDER: [[UInt8]] = []
        var refused: [String: String] = [:]
        for name in try manager.contentsOfDirectory(atPath: crlDirectory.path).sorted() where name.hasSuffix(".crl") {
            let der = try Array(Data(contentsOf: crlDirectory.appending(path: name)))
            listsDER.append(der)
            do {
                lists.append(try CertificateRevocationList(derEncoded: der))
            } catch {
                refused[name] = String(describing: error)
            }
        }
        return PKITSSuite(
            directory: directory,
            anchor: anchor.0,
            anchorDER: anchor.1,
            pool: pool,
            poolDER: poolDER,
            lists: lists,
            listsDER: listsDER,
            refusedLists: refused,
            cases: cases
        )
    }

    /// The section (4.N) a test belongs to, from the words of its name.
    static func section(of name: String) -> Int {
        let words = name.lowercased()
        let rules: [(Int, [String])] = [
            (13, ["nameconstraints"]),
            (15, ["deltacrl"]),
            (4, ["badcrlissuername"]),
            (14, ["distributionpoint", "onlycontains", "onlysomereasons", "indirectcrl", "crlissuer"]),
            (16, ["certificateextension"]),
            (12, ["inhibitanypolicy"]),
            (11, ["inhibitpolicymapping"]),
            (10, ["policymapping", "mappingfromanypolicy", "mappingtoanypolicy"]),
            (9, ["requireexplicitpolicy"]),
            (8, ["allcertificates", "differentpolicies", "overlappingpolicies", "anypolicytest", "qualifier"]),
            (7, ["keyusage"]),
            (6, ["basicconstraints", "cafalse", "pathlenconstraint"]),
            (5, ["basicselfissued"]),
            (
                4,
                [
                    "missingcrl", "revokedca", "revokedee", "badcrlsignature", "wrongcrl", "twocrls", "crlentry",
                    "crlextension", "crlnextupdate", "serialnumber", "separatecertificateandcrlkeys",
                ]
            ),
            (2, ["notbefore", "notafter"]),
            (3, ["namechaining", "nameuids", "rfc3280", "utf8string", "rollover"]),
            (1, ["certificatepath", "signature", "dsa"]),
        ]
        for (section, keys) in rules where keys.contains(where: { words.contains($0) }) { return section }
        return 0
    }

    /// Bulwark's verdict on a case: `bulwark verify --profile rfc5280 --purpose any --revocation hard` with the
    /// whole pool and every list.
    func bulwark(_ testCase: Case) async -> (trusted: Bool, reason: String) {
        guard let leaf = testCase.leaf else {
            return (false, "the certificate cannot be read: \(testCase.unreadable ?? "")")
        }
        var verifier = OfflineChainVerifier(roots: [self.anchor])
        verifier.untrusted = self.pool
        verifier.revocationLists = self.lists
        verifier.revocation = .hard
        verifier.profile = .rfc5280
        verifier.purpose = .any
        let result = await verifier.verify(leaf, at: Self.time)
        switch result.decision {
        case .trusted(let chain): return (true, "trusted, path of \(chain.certificates.count)")
        case .refused(let refusal): return (false, refusal.reasons.map { "\($0)" }.joined(separator: " | "))
        }
    }

    /// OpenSSL's verdict: `openssl verify -x509_strict -crl_check_all -policy_check -policy anyPolicy` with the same
    /// anchor, pool and lists.
    func openssl(
        _ testCase: Case,
        openssl: URL,
        files: [String: [UInt8]]
    ) async throws -> (trusted: Bool, output: String) {
        let arguments = [
            "verify", "-x509_strict", "-crl_check_all", "-attime", "\(Int(Self.time.timeIntervalSince1970))",
            "-CAfile", "anchor.pem", "-untrusted", "pool.pem", "-CRLfile", "crls.pem",
            // PKITS's default settings: any policy acceptable (without `-policy`, OpenSSL's initial set is empty and
            // every path whose CA requires an explicit policy fails with "no explicit policy").
            "-policy_check", "-policy", "2.5.29.32.0",
            // Indirect and delta lists, which OpenSSL reads only when asked.
            "-extended_crl", "-use_deltas", "leaf.pem",
        ]
        var inputs = files
        inputs["leaf.pem"] = Array(Self.pem(testCase.leafDER, label: "CERTIFICATE").utf8)
        let result = try await ProcessRunner.run(openssl, arguments, files: inputs)
        return (result.status == 0, (result.output + result.stderr).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The anchor, pool and lists as the PEM files `openssl verify` reads.
    var opensslFiles: [String: [UInt8]] {
        [
            "anchor.pem": Array(Self.pem(self.anchorDER, label: "CERTIFICATE").utf8),
            "pool.pem": Array(self.poolDER.map { Self.pem($0, label: "CERTIFICATE") }.joined().utf8),
            "crls.pem": Array(self.listsDER.map { Self.pem($0, label: "X509 CRL") }.joined().utf8),
        ]
    }

    static func pem(_ der: [UInt8], label: String) -> String {
        let base64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(base64)\n-----END \(label)-----\n"
    }
}
