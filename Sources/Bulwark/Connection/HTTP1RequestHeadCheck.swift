import BulwarkPolicy
import NIOHTTP1

/// What an HTTP/1.1 request head must be before any byte of it is written: the one check of a head on Bulwark's
/// HTTP/1.1 connections (NIOHTTP1's `NIOHTTPRequestHeadersValidator` is left out of their pipelines), in one pass.
///
/// A method is a token (RFC 9110 section 9.1); the target is not empty and holds only the bytes RFC 9112 section 3.2
/// allows in a request line (letters, digits, `-._~:/?#[]@!$&'()*+,;=%`), so no space, control character or byte
/// outside ASCII can split the line; every field name is a token (so never empty); no field value holds a control
/// character other than HTAB (RFC 9110 section 5.5: CR, LF and NUL would start a new field or request).
///
/// A refusal says what was wrong and names the field, quoted, but never shows a value (it may be a credential) nor a
/// name that is not a token (it may be a whole "Authorization: Bearer …" line).
enum HTTP1RequestHeadCheck {
    /// What makes `head` unsendable, or nil when it may be written.
    static func problem(in head: HTTPRequestHead) -> String? {
        if case .RAW(let method) = head.method, !HTTPToken.isToken(method) {
            return "the request's method is not a token (\(method.utf8.count) bytes)"
        }
        guard Self.isSendableTarget(head.uri) else {
            return head.uri.isEmpty
                ? "the request's target is empty"
                : "the request's target has a space, a control character or a byte a request line cannot carry"
        }
        for (name, value) in head.headers {
            guard HTTPToken.isToken(name) else {
                return "the request has a field whose name is not a token (\(name.utf8.count) bytes)"
            }
            guard Self.isSendableValue(value) else {
                return "the request's field \(name.shownAsFieldName) has a line break or another control character in"
                    + " its value"
            }
        }
        return nil
    }

    /// The bytes RFC 9112 section 3.2 allows in a request-target (RFC 3986's unreserved, reserved and `%`), at least one.
    static func isSendableTarget(_ target: String) -> Bool {
        var target = target
        return target.withUTF8 { bytes in !bytes.isEmpty && bytes.allSatisfy(Self.isTargetByte) }
    }

    static func isTargetByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: ":"),
            UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "["), UInt8(ascii: "]"),
            UInt8(ascii: "@"), UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","),
            UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: "%"):
            return true
        default:
            return false
        }
    }

    /// No control character but HTAB: no NUL, CR, LF, other C0 byte or DEL (bytes from 0x80 are obs-text, allowed).
    static func isSendableValue(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            bytes.allSatisfy { $0 == UInt8(ascii: "\t") || ($0 >= 0x20 && $0 != 0x7F) }
        }
    }
}

extension String {
    /// A field name for an error: quoted and escaped, at most 32 characters.
    var shownAsFieldName: String {
        String(self.unicodeScalars.prefix(32)).debugDescription
    }
}
