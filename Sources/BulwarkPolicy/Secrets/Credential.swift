import Foundation

/// A credential a ``CredentialStore`` attaches to requests in its scope: a bearer token, HTTP basic authentication,
/// a custom header (`X-Auth-Token`, `X-API-Key`) or a cookie.
///
/// The secret part lives in a ``SecretBox`` (locked, zeroized memory). The header value is made from it only when a
/// request is sent (``makeHeaderValue()``), and the credential prints and reflects as
/// `Credential(bearer, Authorization: <redacted>)`: `print`, `dump`, `Mirror` and string interpolation show the kind
/// and the header name, never the value.
///
/// Values are checked when the credential is made, so a secret can never smuggle a header line or a cookie into a
/// request: a bearer token must be visible ASCII; a header value visible ASCII, spaces and tabs, without spaces at
/// either end; a cookie value the `cookie-octet`s of RFC 6265; a basic-auth user name must not hold a colon, and
/// neither user name nor password a control character. The errors say what is wrong, never where in the value.
///
/// `Credential` is a value that shares its box: copies refer to the same secret, and ``wipe()`` (which the store's
/// ``CredentialStore/signOut()`` calls) wipes it for all of them.
public struct Credential: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What kind of credential this is; compare with the static members.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// `Authorization: Bearer <token>` (RFC 6750).
        public static let bearer = Kind("bearer")
        /// `Authorization: Basic <base64(user:password)>` (RFC 7617).
        public static let basic = Kind("basic")
        /// `<name>: <value>`, for schemes such as `X-Auth-Token`.
        public static let header = Kind("header")
        /// `Cookie: <name>=<value>` (RFC 6265).
        public static let cookie = Kind("cookie")
        /// `bearer`, `basic`, `header` or `cookie`.
        public var description: String { self.name }
    }

    /// What kind of credential this is.
    public let kind: Kind
    /// The header the credential is sent in: `Authorization`, `Cookie`, or the custom header's name.
    public let headerName: String
    /// The cookie's name, for a cookie credential.
    public let cookieName: String?
    /// When the credential stops being valid, if known; a ``CredentialStore`` with a refresh provider refreshes it
    /// shortly before.
    public let expiresAt: Date?
    /// The secret part: the token, `user:password`, the header value or the cookie value.
    let secret: SecretBox

    private init(kind: Kind, headerName: String, cookieName: String? = nil, expiresAt: Date?, secret: SecretBox) {
        self.kind = kind
        self.headerName = headerName
        self.cookieName = cookieName
        self.expiresAt = expiresAt
        self.secret = secret
    }

    /// A bearer token, sent as `Authorization: Bearer <token>`.
    ///
    /// - Throws: ``CredentialError`` if the token is empty or holds anything but visible ASCII.
    public static func bearer(
        _ token: consuming SecretBytes,
        expiresAt: Date? = nil
    ) throws(CredentialError)
        -> Credential
    {
        try Self.check(token, .emptyValue, .invalidValue, header: "Authorization", allowed: Self.isVisible)
        return Credential(kind: .bearer, headerName: "Authorization", expiresAt: expiresAt, secret: SecretBox(token))
    }

    /// HTTP basic authentication, sent as `Authorization: Basic <base64(username:password)>`. The user name is kept
    /// with the password in locked memory.
    ///
    /// - Throws: ``CredentialError`` if the user name holds a colon or a control character, or the password a
    ///   control character.
    public static func basic(username: String, password: consuming SecretBytes) throws(CredentialError) -> Credential {
        let user = Array(username.utf8)
        guard !user.contains(UInt8(ascii: ":")), !user.contains(where: Self.isControl) else {
            throw CredentialError(.invalidUsername, headerName: "Authorization")
        }
        let hasControl = password.withUnsafeBytes { $0.contains(where: Self.isControl) }
        guard !hasControl else {
            throw CredentialError(.invalidValue, headerName: "Authorization")
        }
        let combined = password.withUnsafeBytes { password in
            SecretBytes(count: user.count + 1 + password.count) { buffer in
                user.withUnsafeBytes { buffer.copyMemory(from: $0) }
                buffer[user.count] = UInt8(ascii: ":")
                UnsafeMutableRawBufferPointer(rebasing: buffer[(user.count + 1)...]).copyMemory(from: password)
            }
        }
        return Credential(kind: .basic, headerName: "Authorization", expiresAt: nil, secret: SecretBox(combined))
    }

    /// A custom header such as `X-Auth-Token: <value>`.
    ///
    /// - Throws: ``CredentialError`` if the name is not an HTTP token, names a header that frames or routes the
    ///   request (`Host`, `Content-Length`, `Transfer-Encoding`, `Connection`, …) or `Cookie` (use
    ///   ``cookie(name:value:expiresAt:)``), or if the value is empty, holds anything but visible ASCII, spaces and
    ///   tabs, or starts or ends with a space or tab.
    public static func header(
        _ name: String,
        value: consuming SecretBytes,
        expiresAt: Date? = nil
    )
        throws(CredentialError) -> Credential
    {
        guard HTTPToken.isToken(name) else {
            throw CredentialError(.invalidHeaderName, headerName: Self.printable(name))
        }
        guard !Self.reservedHeaderNames.contains(name.lowercased()) else {
            throw CredentialError(.reservedHeaderName, headerName: name)
        }
        try Self.check(value, .emptyValue, .invalidValue, header: name) { Self.isSpace($0) || Self.isVisible($0) }
        let padded = value.withUnsafeBytes { bytes in
            Self.isSpace(bytes[0]) || Self.isSpace(bytes[bytes.count - 1])
        }
        guard !padded else {
            throw CredentialError(.invalidValue, headerName: name)
        }
        return Credential(kind: .header, headerName: name, expiresAt: expiresAt, secret: SecretBox(value))
    }

    /// A cookie, sent in the `Cookie` header as `<name>=<value>` (joined with other cookies by `; `).
    ///
    /// - Throws: ``CredentialError`` if the name is not an HTTP token or the value holds a character outside
    ///   RFC 6265's `cookie-octet` (space, `"`, `,`, `;`, `\`, controls, non-ASCII).
    public static func cookie(
        name: String,
        value: consuming SecretBytes,
        expiresAt: Date? = nil
    )
        throws(CredentialError) -> Credential
    {
        guard HTTPToken.isToken(name) else {
            throw CredentialError(.invalidCookieName, headerName: "Cookie")
        }
        let valid = value.withUnsafeBytes { $0.allSatisfy(Self.isCookieOctet) }
        guard valid else {
            throw CredentialError(.invalidValue, headerName: "Cookie")
        }
        return Credential(
            kind: .cookie,
            headerName: "Cookie",
            cookieName: name,
            expiresAt: expiresAt,
            secret: SecretBox(value)
        )
    }

    /// Destroys the secret now (zeroizing it) for every copy of this credential.
    public func wipe() {
        self.secret.wipe()
    }

    /// Whether the secret was wiped.
    public var isWiped: Bool { self.secret.isWiped }

    /// Whether the credential is expired, or expires within `margin` seconds of `now`.
    public func isExpired(at now: Date, margin: TimeInterval = 0) -> Bool {
        guard let expiresAt = self.expiresAt else { return false }
        return expiresAt.timeIntervalSince(now) <= margin
    }

    /// The header field value, made now from the secret: `Bearer <token>`, `Basic <base64>`, the header's value,
    /// or `<name>=<value>` for a cookie; nil once wiped.
    ///
    /// This string is the one copy of the secret outside locked memory; Swift strings cannot be wiped, so make it
    /// only to send the request, and do not keep it.
    public func makeHeaderValue() -> String? {
        self.secret.withUnsafeBytes { secret -> String in
            switch self.kind {
            case .bearer: return Self.string(prefix: "Bearer ", secret, base64: false)
            case .basic: return Self.string(prefix: "Basic ", secret, base64: true)
            case .cookie: return Self.string(prefix: (self.cookieName ?? "") + "=", secret, base64: false)
            default: return Self.string(prefix: "", secret, base64: false)
            }
        }
    }

    /// `Credential(bearer, Authorization: <redacted>)`, `Credential(cookie, session=<redacted>)`, with `<wiped>`
    /// once wiped.
    public var description: String {
        let value = self.isWiped ? "<wiped>" : "<redacted>"
        if let cookieName = self.cookieName {
            return "Credential(\(self.kind), \(cookieName)=\(value))"
        }
        return "Credential(\(self.kind), \(self.headerName): \(value))"
    }

    /// Same as ``description``.
    public var debugDescription: String { self.description }

    /// The kind, header and cookie name, and expiry: never the secret.
    public var customMirror: Mirror {
        var children: [(label: String?, value: Any)] = [
            ("kind", self.kind.description), ("headerName", self.headerName),
        ]
        if let cookieName = self.cookieName { children.append(("cookieName", cookieName)) }
        if let expiresAt = self.expiresAt { children.append(("expiresAt", expiresAt)) }
        children.append(("secret", self.isWiped ? "<wiped>" : "<redacted>"))
        return Mirror(self, children: children, displayStyle: .struct)
    }

    // MARK: - Checks

    /// Header names a credential must not set: they frame or route the request, or have their own credential kind.
    static let reservedHeaderNames: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer", "keep-alive",
        "proxy-connection", "expect", "cookie",
    ]

    /// Throws `empty` if `secret` is empty and `invalid` if a byte is not `allowed`.
    private static func check(
        _ secret: borrowing SecretBytes,
        _ empty: CredentialError.Code,
        _ invalid: CredentialError.Code,
        header: String,
        allowed: (UInt8) -> Bool
    ) throws(CredentialError) {
        guard !secret.isEmpty else {
            throw CredentialError(empty, headerName: header)
        }
        guard secret.withUnsafeBytes({ $0.allSatisfy(allowed) }) else {
            throw CredentialError(invalid, headerName: header)
        }
    }

    private static func isVisible(_ byte: UInt8) -> Bool {
        byte >= 0x21 && byte <= 0x7E
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09
    }

    private static func isControl(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x7F
    }

    /// `cookie-octet` of RFC 6265: visible ASCII but `"`, `,`, `;` and `\`.
    private static func isCookieOctet(_ byte: UInt8) -> Bool {
        Self.isVisible(byte) && byte != 0x22 && byte != 0x2C && byte != 0x3B && byte != 0x5C
    }

    /// A header name for an error message: non-token characters replaced by `?`.
    private static func printable(_ name: String) -> String {
        String(decoding: name.utf8.map { HTTPToken.isTokenByte($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    // MARK: - Header values

    /// `prefix` followed by `secret`, or by its base64 encoding, written straight into the string's storage.
    private static func string(prefix: String, _ secret: UnsafeRawBufferPointer, base64: Bool) -> String {
        let prefixBytes = Array(prefix.utf8)
        let bodyCount = base64 ? (secret.count + 2) / 3 * 4 : secret.count
        return String(unsafeUninitializedCapacity: prefixBytes.count + bodyCount) { output in
            _ = output.initialize(from: prefixBytes)
            let body = UnsafeMutableBufferPointer(rebasing: output[prefixBytes.count...])
            if base64 {
                Self.base64(secret, into: body)
            } else {
                _ = body.initialize(from: secret)
            }
            return prefixBytes.count + bodyCount
        }
    }

    /// Standard base64 with padding (RFC 4648 section 4), without intermediate buffers.
    private static func base64(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableBufferPointer<UInt8>) {
        let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        let digits = alphabet.utf8Start
        var written = 0
        var index = 0
        while index < input.count {
            let remaining = input.count - index
            let first = UInt32(input[index])
            let second = remaining > 1 ? UInt32(input[index + 1]) : 0
            let third = remaining > 2 ? UInt32(input[index + 2]) : 0
            let group = first << 16 | second << 8 | third
            output[written] = digits[Int(group >> 18 & 0x3F)]
            output[written + 1] = digits[Int(group >> 12 & 0x3F)]
            output[written + 2] = remaining > 1 ? digits[Int(group >> 6 & 0x3F)] : UInt8(ascii: "=")
            output[written + 3] = remaining > 2 ? digits[Int(group & 0x3F)] : UInt8(ascii: "=")
            written += 4
            index += 3
        }
    }
}
