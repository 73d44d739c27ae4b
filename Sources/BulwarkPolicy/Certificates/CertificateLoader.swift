import Foundation
import SwiftASN1
import X509

/// Reads X.509 certificates from PEM (any number of `CERTIFICATE` blocks) or DER input.
public enum CertificateLoader {
    /// Parses every certificate in `bytes`.
    ///
    /// PEM input may hold several `CERTIFICATE` blocks and other blocks (keys, CRLs), which are skipped.
    /// Input without any PEM block is parsed as a single DER certificate.
    ///
    /// - Parameters:
    ///   - bytes: The PEM or DER input.
    ///   - source: A label for error messages (usually the file path).
    /// - Throws: ``CertificateLoadingError`` naming `source` when nothing valid is found or a block is malformed.
    public static func certificates(
        from bytes: [UInt8],
        source: String
    ) throws(CertificateLoadingError) -> [Certificate] {
        if let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN ") {
            return try self.certificates(fromPEM: text, source: source)
        }
        guard !bytes.isEmpty else { throw .noCertificates(in: source) }
        do {
            return [try Certificate(derEncoded: bytes)]
        } catch {
            throw .malformedDER(in: source, detail: Self.words(bytes), underlying: String(reflecting: error))
        }
    }

    /// Parses every `CERTIFICATE` block of a PEM string; other block types are skipped.
    public static func certificates(
        fromPEM text: String,
        source: String
    ) throws(CertificateLoadingError) -> [Certificate] {
        let documents: [PEMDocument]
        do {
            documents = try PEMDocument.parseMultiple(pemString: text)
        } catch {
            throw .malformedPEM(
                in: source,
                detail: "the PEM framing is broken (a BEGIN without its END, or bad base64)",
                underlying: String(reflecting: error)
            )
        }
        var result: [Certificate] = []
        for (index, document) in documents.enumerated() where document.discriminator == "CERTIFICATE" {
            do {
                result.append(try Certificate(derEncoded: document.derBytes))
            } catch {
                throw .malformedPEM(
                    in: source,
                    detail: "block \(index + 1): \(Self.words(document.derBytes))",
                    underlying: String(reflecting: error)
                )
            }
        }
        guard !result.isEmpty else { throw .noCertificates(in: source) }
        return result
    }

    /// Why `der` is not a certificate Bulwark can use, in words (see ``CertificateProblems``).
    private static func words(_ der: [UInt8]) -> String {
        CertificateProblems.sentencesWhyUnparsable(der).joined(separator: "; ")
    }

    /// The largest certificate file read (1 MiB; the system's whole root bundle is about 220 KiB).
    public static let maximumFileSize = 1 << 20

    /// Reads and parses a PEM or DER file: a regular file of at most ``maximumFileSize`` bytes (a FIFO, a device
    /// such as `/dev/zero` or a directory is refused at once, never waited on or read without end).
    public static func certificates(atPath path: String) throws(CertificateLoadingError) -> [Certificate] {
        let bytes: [UInt8]
        do throws(BoundedFileReader.Failure) {
            bytes = try BoundedFileReader.read(path, maximumSize: Self.maximumFileSize)
        } catch {
            throw .unreadable(path, detail: error.words)
        }
        return try self.certificates(from: bytes, source: path)
    }
}
