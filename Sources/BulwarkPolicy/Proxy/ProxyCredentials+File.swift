extension ProxyCredentials {
    /// Why a proxy credentials file cannot be used; the text never holds the file's contents.
    public struct FileError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong, in words, with the file's path.
        public let description: String
    }

    /// Reads the credentials from a file holding one line `user:password` (one trailing newline is allowed), as
    /// `bulwark fetch --proxy-user-file` and a policy file's `credentialsFile` name it. The bytes go straight into
    /// locked memory, and the password never passes through a `String`.
    ///
    /// - Throws: ``FileError`` naming the path when the file cannot be read, holds more than one line, has no colon,
    ///   or a part the credentials refuse (``init(username:password:)``).
    public init(contentsOfFile path: String) throws(FileError) {
        let line: SecretBytes
        do {
            line = try SecretBytes(contentsOfFile: path)
        } catch {
            throw FileError(description: "cannot read the proxy credentials file \"\(path)\": \(error)")
        }
        let made: Result<ProxyCredentials, FileError> = line.withUnsafeBytes { bytes in
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), !bytes.contains(UInt8(ascii: "\n")) else {
                return .failure(
                    FileError(description: "the proxy credentials file \"\(path)\" must hold one line, user:password")
                )
            }
            let user = String(decoding: bytes[..<colon], as: UTF8.self)
            let rest = UnsafeRawBufferPointer(rebasing: bytes[(colon + 1)...])
            do {
                return .success(
                    try ProxyCredentials(
                        username: user,
                        password: SecretBytes(count: rest.count) { $0.copyMemory(from: rest) }
                    )
                )
            } catch {
                return .failure(FileError(description: "the proxy credentials file \"\(path)\": \(error)"))
            }
        }
        self = try made.get()
    }
}
