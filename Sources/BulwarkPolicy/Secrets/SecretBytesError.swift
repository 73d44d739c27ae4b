#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An error raised when a secret cannot be read from a file.
///
/// The description names the path and the problem, never any of the file's contents:
///
/// ```text
/// cannot read a secret from "/run/keys/api": the file is larger than 1048576 bytes
/// ```
public struct SecretBytesError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem was found; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The file could not be opened (missing, no permission, …).
        public static let cannotOpen = Code("cannotOpen")
        /// The path names a directory or a block device: neither a regular file nor a stream (pipe, socket,
        /// character device).
        public static let unsupportedFileType = Code("unsupportedFileType")
        /// The file is larger than the limit given.
        public static let tooLarge = Code("tooLarge")
        /// Reading failed, or a regular file got shorter while it was read.
        public static let readFailed = Code("readFailed")
        /// The code's stable label.
        public var description: String { self.name }
    }

    /// Which problem was found.
    public let code: Code
    /// The path as given (paths are not secrets).
    public let path: String
    /// The `errno` value of the failing call, if there was one.
    public let systemError: Int32?
    /// The size limit, for ``Code/tooLarge``.
    public let limit: Int?

    init(_ code: Code, path: String, systemError: Int32? = nil, limit: Int? = nil) {
        self.code = code
        self.path = path
        self.systemError = systemError
        self.limit = limit
    }

    /// Names the path and the problem, e.g. `cannot read a secret from "key": No such file or directory`.
    public var description: String {
        var reason: String
        switch self.code {
        case .cannotOpen: reason = "the file cannot be opened"
        case .unsupportedFileType: reason = "it is neither a regular file nor a pipe, socket or character device"
        case .tooLarge: reason = "the file is larger than \(self.limit ?? 0) bytes"
        default: reason = "reading failed"
        }
        if let systemError = self.systemError, let message = strerror(systemError) {
            reason += " (\(String(cString: message)))"
        } else if self.code == .readFailed {
            reason += " (the file got shorter while it was read)"
        }
        return "cannot read a secret from \"\(self.path)\": \(reason)"
    }
}
