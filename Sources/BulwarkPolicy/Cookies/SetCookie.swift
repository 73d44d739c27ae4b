import Foundation

/// One `Set-Cookie` header field parsed by the algorithm of RFC 6265 section 5.2 (with the size limits and control
/// character rule of RFC 6265bis), before the storage model decides whether to keep it.
///
/// The value goes straight into a ``SecretBox``; nothing here prints it.
struct SetCookie {
    var name: String
    var value: SecretBox
    var expires: Date?
    /// `Max-Age` in seconds; zero or less means "expire now". Wins over `expires`.
    var maxAge: Int?
    /// The `Domain` attribute without a leading dot, not yet canonicalized.
    var domain: String?
    /// The `Path` attribute when it is usable (starts with `/`).
    var path: String?
    var secure = false
    var httpOnly = false
    var sameSite: Cookie.SameSite?

    /// The largest name plus value, and the largest attribute value, RFC 6265bis lets a jar keep.
    static let maximumNameValueSize = 4096
    static let maximumAttributeValueSize = 1024

    /// Why a `Set-Cookie` field was ignored.
    enum Failure: Error, Equatable {
        case noNameValuePair
        case emptyName
        case controlCharacter
        case tooLarge
    }

    /// Parses one `Set-Cookie` field value.
    static func parse(_ field: String) throws(Failure) -> SetCookie {
        let bytes = Array(field.utf8)
        // RFC 6265bis 5.6 step 1: a control character other than tab makes the whole field invalid.
        guard !bytes.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else {
            throw .controlCharacter
        }
        let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        let pair = bytes[..<semicolon]
        guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else {
            throw .noNameValuePair
        }
        let name = Self.trimmed(pair[..<equals])
        let value = Self.trimmed(pair[(equals + 1)...])
        guard !name.isEmpty else { throw .emptyName }
        guard name.count + value.count <= Self.maximumNameValueSize else { throw .tooLarge }

        var valueBytes = Array(value)
        var cookie = SetCookie(
            name: String(decoding: name, as: UTF8.self),
            value: SecretBox(SecretBytes(wiping: &valueBytes))
        )
        var rest = bytes[semicolon...]
        while !rest.isEmpty {
            rest = rest.dropFirst()  // the ";"
            let end = rest.firstIndex(of: UInt8(ascii: ";")) ?? rest.endIndex
            cookie.apply(attribute: rest[..<end])
            rest = rest[end...]
        }
        return cookie
    }

    /// RFC 6265 section 5.2 steps for one `; attribute[=value]`; an unknown or malformed attribute is ignored.
    private mutating func apply(attribute: ArraySlice<UInt8>) {
        let equals = attribute.firstIndex(of: UInt8(ascii: "="))
        let name = String(decoding: Self.trimmed(attribute[..<(equals ?? attribute.endIndex)]), as: UTF8.self)
        let rawValue = equals.map { Self.trimmed(attribute[($0 + 1)...]) } ?? []
        guard rawValue.count <= Self.maximumAttributeValueSize else { return }
        let value = String(decoding: rawValue, as: UTF8.self)
        switch name.lowercased() {
        case "expires":
            if let date = CookieDate.parse(value[...]) { self.expires = date }
        case "max-age":
            // 5.2.2: a digit or "-" first, digits after; anything else is ignored.
            let digits = value.hasPrefix("-") ? value.dropFirst() : value[...]
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return }
            let magnitude = Int(digits) ?? Int.max  // more digits than Int holds: very far in the future
            self.maxAge = value.hasPrefix("-") ? -1 : magnitude
        case "domain":
            guard !value.isEmpty else { return }
            self.domain = value.hasPrefix(".") ? String(value.dropFirst()) : value
        case "path":
            self.path = value.hasPrefix("/") ? value : nil
        case "secure":
            self.secure = true
        case "httponly":
            self.httpOnly = true
        case "samesite":
            self.sameSite = Cookie.SameSite.allCases.first { $0.rawValue.lowercased() == value.lowercased() }
        default:
            break
        }
    }

    /// `bytes` without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }) else { return [] }
        let last = bytes.lastIndex(where: { !isSpace($0) })!
        return bytes[first...last]
    }
}
