import Crypto
import Foundation
import SwiftASN1
import X509

extension Pin {
    /// The public-key pin of a public key file: a SubjectPublicKeyInfo in PEM (`-----BEGIN PUBLIC KEY-----`) or DER,
    /// as curl's `--pinnedpubkey FILE` and `openssl pkey -pubout` write it. The pin is SHA-256 of the key's DER
    /// encoding, the value `sha256/…` pins hold.
    ///
    /// - Parameter contents: The file's bytes.
    /// - Throws: ``PinError`` when the bytes are not one public key in PEM or DER (a certificate, a private key or
    ///   several PEM blocks are refused, naming what was found).
    public static func publicKey(ofPublicKeyFile contents: [UInt8]) throws(PinError) -> Pin {
        let der: [UInt8]
        let text = String(decoding: contents, as: UTF8.self)
        if text.contains("-----BEGIN ") {
            let documents: [PEMDocument]
            do {
                documents = try PEMDocument.parseMultiple(pemString: text)
            } catch {
                throw PinError(.unknownFormat, input: "public key file", detail: "its PEM is malformed")
            }
            guard documents.count == 1, let document = documents.first else {
                throw PinError(
                    .unknownFormat,
                    input: "public key file",
                    detail: "it holds \(documents.count) PEM blocks; expected one PUBLIC KEY"
                )
            }
            guard document.discriminator == "PUBLIC KEY" else {
                throw PinError(
                    .unknownFormat,
                    input: "public key file",
                    detail: "it holds a \(document.discriminator), not a PUBLIC KEY (openssl pkey -pubout writes one)"
                )
            }
            der = document.derBytes
        } else {
            der = contents
        }
        do {
            _ = try Certificate.PublicKey(derEncoded: der)
        } catch {
            throw PinError(
                .unknownFormat,
                input: "public key file",
                detail: "it is not a public key (a DER SubjectPublicKeyInfo of an RSA, EC or Ed25519 key)"
            )
        }
        return try Pin(publicKeySHA256: Array(SHA256.hash(data: der)))
    }
}
