import BulwarkPolicy
import Crypto
import Foundation
import SwiftASN1
import X509

/// A Certificate Transparency log of the tests' own (a P-256 key): it signs SCTs over a leaf's precertificate
/// entry, so that tests can issue certificates whose embedded SCTs verify, as a CA that logs its precertificates does.
///
/// The SCTs and the signed data are assembled here from RFC 6962 (3.2, 3.3) independently of Bulwark's parser.
public struct TestTransparencyLog: Sendable {
    public let key: P256.Signing.PrivateKey
    public let operatorName: String
    public let name: String

    /// A log with a fresh key, or with `key` (the benchmarks' server and client processes share fixed keys).
    public init(operatorName: String, name: String, key: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) {
        self.key = key
        self.operatorName = operatorName
        self.name = name
    }

    /// The log as a log list names it.
    public var log: CertificateTransparencyLog {
        CertificateTransparencyLog(
            key: Array(self.key.publicKey.derRepresentation),
            operatorName: self.operatorName,
            name: self.name
        )
    }

    /// One serialized v1 SCT over `tbs` (a TBSCertificate without the SCT list), for a leaf issued by `issuer`.
    public func sct(tbs: [UInt8], issuer: Certificate, at time: Date) throws -> [UInt8] {
        let timestamp = UInt64(time.timeIntervalSince1970 * 1_000)
        var timestampBytes: [UInt8] = []
        for shift in stride(from: 56, through: 0, by: -8) {
            timestampBytes.append(UInt8(truncatingIfNeeded: timestamp >> UInt64(shift)))
        }
        var spki = DER.Serializer()
        try spki.serialize(issuer.publicKey)
        let issuerKeyHash = Array(SHA256.hash(data: spki.serializedBytes))
        var signed: [UInt8] = [0, 0] + timestampBytes + [0, 1] + issuerKeyHash
        signed += [UInt8(tbs.count >> 16 & 0xff), UInt8(tbs.count >> 8 & 0xff), UInt8(tbs.count & 0xff)] + tbs
        signed += [0, 0]
        let signature = Array(try self.key.signature(for: SHA256.hash(data: signed)).derRepresentation)
        let logID = Array(SHA256.hash(data: Array(self.key.publicKey.derRepresentation)))
        return [0] + logID + timestampBytes + [0, 0, 4, 3]
            + [UInt8(signature.count >> 8), UInt8(signature.count & 0xff)] + signature
    }

    /// Issues the leaf of `blueprint` from `issuer` with an SCT from each of `logs` embedded (issued at `time`): the
    /// certificate is first made without the list (its TBSCertificate is what the logs sign), then again with the
    /// same serial number and the list as its last extension.
    public static func issue(
        _ blueprint: CertificateBlueprint,
        issuer: TestIdentity,
        logs: [TestTransparencyLog],
        at time: Date
    ) throws -> TestIdentity {
        var fixed = blueprint
        fixed.serialNumber = fixed.serialNumber ?? CertificateFactory.makeSerialNumber()
        let precertificate = try fixed.issue(issuer: issuer)
        let tbs = Array(precertificate.certificate.tbsCertificateBytes)
        var list: [UInt8] = []
        for log in logs {
            let sct = try log.sct(tbs: tbs, issuer: issuer.certificate, at: time)
            list += [UInt8(sct.count >> 8), UInt8(sct.count & 0xff)] + sct
        }
        list = [UInt8(list.count >> 8), UInt8(list.count & 0xff)] + list
        var octets = DER.Serializer()
        try octets.serialize(ASN1OctetString(contentBytes: list[...]))
        fixed.extraExtensions.append(
            Certificate.Extension(
                oid: [1, 3, 6, 1, 4, 1, 11129, 2, 4, 2],
                critical: false,
                value: ArraySlice(octets.serializedBytes)
            )
        )
        return try fixed.issue(issuer: issuer)
    }

    /// A server leaf for `host` (a P-256 key, serverAuth, digitalSignature), valid from an hour ago for `lifetime`
    /// seconds: what ``issue(_:issuer:logs:at:)`` takes.
    public static func leafBlueprint(host: String, lifetime: TimeInterval) -> CertificateBlueprint {
        var blueprint = CertificateBlueprint(
            commonName: host,
            privateKey: Certificate.PrivateKey(P256.Signing.PrivateKey()),
            notBefore: Date() - 3_600,
            notAfter: Date() + lifetime
        )
        blueprint.subjectAlternativeNames = [.dnsName(host)]
        blueprint.extendedKeyUsage = [.serverAuth]
        blueprint.keyUsage = KeyUsage(digitalSignature: true)
        return blueprint
    }

    /// `logs` as the flat JSON log list `--ct-logs` reads.
    public static func listJSON(_ logs: [TestTransparencyLog]) -> String {
        let items = logs.map { log in
            #"{"description":"\#(log.name)","operator":"\#(log.operatorName)","key":"\#(Data(log.key.publicKey.derRepresentation).base64EncodedString())"}"#
        }
        return #"{"logs":[\#(items.joined(separator: ","))]}"#
    }
}
