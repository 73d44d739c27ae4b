import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a whole file that must be a regular file of at most a given size: what a policy (or a signed bundle's
/// policy) names is read this way, so a name such as a FIFO, `/dev/zero`, `/dev/stdin` or a directory is refused at
/// once instead of blocking or reading without end.
///
/// The file is opened without blocking (a FIFO with no writer does not hold the caller up), checked with `fstat` on
/// the descriptor that is then read (no race between the check and the read), and read up to one byte past the
/// limit (a file that grew after `fstat` is refused too).
enum BoundedFileReader {
    /// Why a file could not be read, as words that follow its path.
    struct Failure: Error, Hashable {
        let words: String
    }

    /// The bytes of the regular file at `path`, at most `maximumSize` of them.
    static func read(_ path: String, maximumSize: Int) throws(Failure) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw Failure(words: errno == ENOENT ? "no such file" : "it cannot be opened")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Failure(words: "its status cannot be read") }
        guard status.st_mode & S_IFMT == S_IFREG else {
            let kind: String
            switch status.st_mode & S_IFMT {
            case S_IFDIR: kind = "a directory"
            case S_IFIFO: kind = "a FIFO"
            case S_IFCHR: kind = "a character device"
            case S_IFBLK: kind = "a block device"
            case S_IFSOCK: kind = "a socket"
            default: kind = "not a file"
            }
            throw Failure(words: "it is not a regular file (\(kind))")
        }
        guard Int(status.st_size) <= maximumSize else {
            throw Failure(words: "it is larger than \(maximumSize) bytes")
        }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size) + 1)
        var count = 0
        while count < bytes.count {
            let read = bytes.withUnsafeMutableBytes { buffer in
                systemRead(descriptor, buffer.baseAddress! + count, buffer.count - count)
            }
            if read < 0 && errno == EINTR { continue }
            guard read >= 0 else { throw Failure(words: "it cannot be read") }
            if read == 0 { break }
            count += read
            if count == bytes.count && count <= maximumSize {
                // Grown since fstat: read on, up to one byte past the limit.
                bytes += [UInt8](repeating: 0, count: min(maximumSize + 1, count * 2) - count)
            }
        }
        guard count <= maximumSize else { throw Failure(words: "it is larger than \(maximumSize) bytes") }
        return Array(bytes.prefix(count))
    }
}

/// The C library's `read(2)`.
private func systemRead(_ descriptor: CInt, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(descriptor, buffer, count)
    #elseif canImport(Musl)
    Musl.read(descriptor, buffer, count)
    #else
    Darwin.read(descriptor, buffer, count)
    #endif
}
