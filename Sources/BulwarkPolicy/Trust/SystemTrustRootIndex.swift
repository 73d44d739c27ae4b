import Foundation
import SwiftASN1
import X509

/// The system trust bundle indexed by subject name, each certificate parsed only when a chain can use it.
///
/// swift-certificates parses every certificate of the bundle (about 150) before the first verification against
/// `CertificateStore.systemTrustRoots` can go on, where BoringSSL looks up only the issuer a chain names. This index
/// reads the file swift-certificates reads (the first of its search paths that can be read), splits it with the same
/// PEM parser, and reads only each certificate's subject name. A verification asks for the roots its chain can use
/// (``snapshot(for:)``): those whose subject is the issuer of a presented certificate, or the leaf's own subject (a root
/// presented as the server's certificate). They are parsed then, once per process, and kept.
///
/// swift-certificates' `Verifier` looks trust anchors up by exactly these names (a root ends a path: the verifier
/// never looks for a root's issuer), so a store that holds these roots, or these and any others of the bundle, gives
/// every chain the same paths, in the same order, and so the same result as a store of the whole bundle.
///
/// No readable file, PEM that does not parse, or a block that is not a certificate whose subject can be read give no
/// system roots at all, as in swift-certificates. One difference, chosen: a root whose subject can be read but whose
/// certificate does not parse is left out on its own, where swift-certificates leaves out the whole bundle (telling it
/// would take parsing every root; whoever can write the bundle can add a root anyway). ``ChainVerifier`` says
/// ``failure`` in the refusal of a chain, so that a missing bundle is not reported only as an untrusted root.
package final class SystemTrustRootIndex: Sendable {
    /// Where swift-certificates looks for the bundle, in its order.
    static let searchPaths = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"]

    /// The index of this process, built the first time it is read: in the background from the moment a client whose
    /// policy names the system roots is made (``SystemTrustRootsLoading/load``), otherwise by the first verification.
    package static let shared = SystemTrustRootIndex(searchPaths: SystemTrustRootIndex.searchPaths)

    /// The system roots parsed so far, as a store, and how often that set has grown (a verifier built with one
    /// generation's store is kept until the set grows).
    struct Snapshot: Sendable {
        /// Which index, and which generation of it.
        struct Identity: Hashable, Sendable {
            /// The index's number, in the order indexes were made.
            let index: Int
            let generation: Int
        }

        let store: CertificateStore
        let identity: Identity
        var generation: Int { self.identity.generation }
    }

    private struct Parsed {
        /// The subjects whose certificates were parsed (those in ``SystemTrustRootIndex/documents`` only).
        var subjects: Set<DistinguishedName> = []
        /// The certificates parsed, those of one subject together and in the bundle's order.
        var certificates: [Certificate] = []
        var snapshot: Snapshot
    }

    /// The DER of each certificate of the bundle, by subject, in the bundle's order.
    private let documents: [DistinguishedName: [[UInt8]]]
    private let parsed: LockedValue<Parsed>
    /// Why the index holds no roots, when the bundle could not be read or indexed.
    let failure: String?
    /// This index's number (see ``Snapshot/Identity``).
    private let number: Int
    /// How many indexes were made in this process (one, but in tests).
    private static let made = LockedValue(0)

    /// The index of the first file of `searchPaths` that can be read; empty, with a ``failure``, if none can or if
    /// it cannot be indexed.
    convenience init(searchPaths: [String]) {
        var unread: [String] = []
        for path in searchPaths {
            guard let data = try? Data(contentsOf: URL(fileURLWithPath: path)) else {
                unread.append(path)
                continue
            }
            self.init(pem: String(decoding: data, as: UTF8.self), source: path)
            return
        }
        self.init(
            documents: [:],
            failure: "no system trust bundle could be read (tried \(unread.joined(separator: ", ")))"
        )
    }

    /// The index of a bundle in PEM; empty, with a ``failure``, if it cannot be indexed.
    convenience init(pem: String, source: String = "the system trust bundle") {
        do {
            self.init(documents: try Self.index(pem: pem), failure: nil)
        } catch {
            self.init(
                documents: [:],
                failure: "\(source) could not be read as PEM certificates, so no system root is trusted"
            )
        }
    }

    private init(documents: [DistinguishedName: [[UInt8]]], failure: String?) {
        let number = Self.made.withLock { made in
            made += 1
            return made
        }
        self.documents = documents
        self.failure = failure
        self.number = number
        let empty = Snapshot(store: CertificateStore(), identity: .init(index: number, generation: 0))
        self.parsed = LockedValue(Parsed(snapshot: empty))
    }

    /// How many certificates the bundle holds.
    var count: Int { self.documents.values.reduce(0) { $0 + $1.count } }

    /// The roots parsed so far.
    var current: Snapshot { self.parsed.withLock { $0.snapshot } }

    /// The certificates parsed so far, in the order the store holds them.
    var parsedCertificates: [Certificate] { self.parsed.withLock { $0.certificates } }

    /// A snapshot holding every root of the bundle that `presented` can use (see above): ``current`` when it already
    /// does, otherwise one that adds them, parsed now.
    func snapshot(for presented: [Certificate]) -> Snapshot {
        var names: [DistinguishedName] = []
        for certificate in presented where self.documents[certificate.issuer] != nil {
            names.append(certificate.issuer)
        }
        if let leaf = presented.first, self.documents[leaf.subject] != nil {
            names.append(leaf.subject)
        }
        let (missing, current) = self.parsed.withLock { parsed in
            (names.filter { !parsed.subjects.contains($0) }, parsed.snapshot)
        }
        guard !missing.isEmpty else { return current }
        // Parsed outside the lock; another verification may parse the same roots meanwhile, and the first to finish
        // adds them.
        var found: [(subject: DistinguishedName, certificates: [Certificate])] = []
        for subject in Set(missing) {
            let certificates = (self.documents[subject] ?? []).compactMap { try? Certificate(derEncoded: $0) }
            found.append((subject, certificates))
        }
        return self.parsed.withLock { parsed in
            var grew = false
            for (subject, certificates) in found where parsed.subjects.insert(subject).inserted {
                parsed.certificates += certificates
                grew = grew || !certificates.isEmpty
            }
            if grew {
                parsed.snapshot = Snapshot(
                    store: CertificateStore(parsed.certificates),
                    identity: .init(index: self.number, generation: parsed.snapshot.generation + 1)
                )
            }
            return parsed.snapshot
        }
    }

    /// Each certificate's DER by its subject, in the bundle's order. Throws, as swift-certificates' own loading
    /// does, if the PEM does not parse or a block is not a certificate whose subject can be read.
    static func index(pem: String) throws -> [DistinguishedName: [[UInt8]]] {
        var index: [DistinguishedName: [[UInt8]]] = [:]
        for document in try PEMDocument.parseMultiple(pemString: pem) {
            guard document.discriminator == "CERTIFICATE" else {
                throw ASN1Error.invalidPEMDocument(reason: "not a certificate")
            }
            index[try Self.subject(ofCertificate: document.derBytes), default: []].append(document.derBytes)
        }
        return index
    }

    /// The subject name of a DER certificate, read without parsing the rest: the certificate is a sequence of the
    /// to-be-signed part, the signature algorithm and the signature; the to-be-signed part starts with an optional
    /// version (`[0]`), the serial number, the signature algorithm, the issuer and the validity, then the subject.
    static func subject(ofCertificate der: [UInt8]) throws -> DistinguishedName {
        let certificate = try DER.parse(der)
        return try DER.sequence(certificate, identifier: .sequence) { parts in
            guard let toBeSigned = parts.next() else {
                throw ASN1Error.invalidASN1Object(reason: "a certificate without a body")
            }
            while parts.next() != nil {}
            return try DER.sequence(toBeSigned, identifier: .sequence) { fields in
                var field = fields.next()
                if field?.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
                    field = fields.next()
                }
                // The serial number, the signature algorithm, the issuer, the validity.
                for _ in 0..<4 { field = fields.next() }
                guard let subject = field else {
                    throw ASN1Error.invalidASN1Object(reason: "a certificate without a subject")
                }
                while fields.next() != nil {}
                return try DistinguishedName(derEncoded: subject)
            }
        }
    }
}
