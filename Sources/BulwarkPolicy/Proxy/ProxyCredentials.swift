/// A user name and password for a proxy: sent in the `Proxy-Authorization` header of an HTTP `CONNECT` request
/// (Basic, RFC 7617) or in a SOCKS5 username/password negotiation (RFC 1929), and nowhere else: never inside the
/// tunnel, never to the origin server.
///
/// Both parts live in one ``SecretBox`` (locked, zeroized memory), as `user:password`. The value prints, dumps and
/// reflects as `ProxyCredentials(<redacted>)`: neither the user name nor the password ever shows.
///
/// Copies share the box: ``wipe()`` destroys the secret for all of them.
public struct ProxyCredentials: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// `user:password`.
    private let secret: SecretBox
    /// The number of bytes of the user name at the start of ``secret``.
    private let usernameCount: Int

    /// The longest user name or password SOCKS5 can carry (RFC 1929: one length byte).
    public static let maximumPartLength = 255

    /// Credentials of `username` and `password`.
    ///
    /// - Throws: ``CredentialError`` with ``CredentialError/Code/invalidUsername`` if the user name holds a colon
    ///   (Basic authentication could not carry it) or a control character, or is longer than 255 bytes; with
    ///   ``CredentialError/Code/invalidValue`` if the password holds a control character or is longer than 255 bytes.
    public init(username: String, password: consuming SecretBytes) throws(CredentialError) {
        let user = Array(username.utf8)
        guard user.count <= Self.maximumPartLength, !user.contains(UInt8(ascii: ":")),
            !user.contains(where: Self.isControl)
        else {
            throw CredentialError(.invalidUsername, headerName: "Proxy-Authorization")
        }
        let valid = password.withUnsafeBytes {
            $0.count <= Self.maximumPartLength && !$0.contains(where: Self.isControl)
        }
        guard valid else {
            throw CredentialError(.invalidValue, headerName: "Proxy-Authorization")
        }
        let combined = password.withUnsafeBytes { password in
            SecretBytes(count: user.count + 1 + password.count) { buffer in
                user.withUnsafeBytes { buffer.copyMemory(from: $0) }
                buffer[user.count] = UInt8(ascii: ":")
                UnsafeMutableRawBufferPointer(rebasing: buffer[(user.count + 1)...]).copyMemory(from: password)
            }
        }
        self.secret = SecretBox(combined)
        self.usernameCount = user.count
    }

    /// Calls `body` with the bytes `user:password` (what Basic authentication encodes); nil, without calling it,
    /// once the credentials were wiped. The pointer must not escape `body`.
    public func withBasicBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        self.secret.withUnsafeBytes(body)
    }

    /// Calls `body` with the user name's bytes and the password's bytes (what SOCKS5 sends); nil, without calling it,
    /// once the credentials were wiped. The pointers must not escape `body`.
    public func withUsernameAndPassword<Result>(
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Result
    ) -> Result? {
        let split = self.usernameCount
        return self.secret.withUnsafeBytes { bytes in
            body(
                UnsafeRawBufferPointer(rebasing: bytes[..<split]),
                UnsafeRawBufferPointer(rebasing: bytes[(split + 1)...])
            )
        }
    }

    /// Destroys the secret now for every copy; a proxy that asks for credentials afterwards gets none.
    public func wipe() {
        self.secret.wipe()
    }

    /// Whether two values share the same secret (the same box): credentials made separately are never equal, so
    /// connections are pooled apart for them.
    public static func == (lhs: ProxyCredentials, rhs: ProxyCredentials) -> Bool {
        lhs.secret === rhs.secret
    }

    /// Hashes the identity of the box, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self.secret))
    }

    /// `ProxyCredentials(<redacted>)`.
    public var description: String { "ProxyCredentials(<redacted>)" }

    /// Same as ``description``.
    public var debugDescription: String { self.description }

    /// A mirror with no children: reflection shows nothing of the secret.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    private static func isControl(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x7F }
}
