import Foundation

/// The file of a tamper-evident log, opened and read with system calls.
///
/// A log is a regular file: a FIFO, a device or a directory at its path is refused before anything is read or
/// written (a FIFO opened for writing without a reader would block, and `/dev/zero` would be read forever). It is
/// opened with `O_NONBLOCK` so that the check happens after `open(2)` returns, never inside it. Files are read with
/// `read(2)`: Foundation's `FileManager.contents(atPath:)` leaked a 4 KiB buffer per call on Linux (LeakSanitizer,
/// in the event-log fuzz target), once per log opened.
enum TamperEvidentLogFile {
    /// The end of a log as a writer about to append finds it.
    struct Tail {
        /// The last line that ends with a newline: its 1-based number, and its bytes without the newline, or nil
        /// when it is longer than the limit it was read with.
        var lastLine: (number: Int, bytes: [UInt8]?)?
        /// The bytes after the last newline when the file does not end with one (a line torn by a crash): their
        /// line number and length.
        var tornLine: (number: Int, length: Int)?
    }

    /// A descriptor of the regular file at `path`: read-only, or for reading and appending (created with mode
    /// 0600 when missing).
    static func openLog(_ path: String, appending: Bool) throws -> Int32 {
        let flags = appending ? O_RDWR | O_CREAT | O_APPEND : O_RDONLY
        let descriptor = open(path, flags | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard descriptor >= 0 else {
            throw TamperEvidentLogError(.unreadable, line: nil, detail: "cannot open \(path): \(Self.reason())")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = Self.reason()
            Self.closeDescriptor(descriptor)
            throw TamperEvidentLogError(.unreadable, line: nil, detail: "cannot read \(path): \(reason)")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            Self.closeDescriptor(descriptor)
            throw TamperEvidentLogError(
                .unreadable,
                line: nil,
                detail: "\(path) is not a regular file (a log is never a pipe, a device or a directory)"
            )
        }
        return descriptor
    }

    static func closeDescriptor(_ descriptor: Int32) {
        #if canImport(Darwin)
        _ = Darwin.close(descriptor)
        #elseif canImport(Glibc)
        _ = Glibc.close(descriptor)
        #elseif canImport(Musl)
        _ = Musl.close(descriptor)
        #endif
    }

    /// The text of the last system error, without its number.
    static func reason() -> String {
        String(cString: strerror(errno))
    }

    /// Reads the whole file, from its start, in chunks of 64 KiB, handing each to `body`.
    private static func read(
        _ descriptor: Int32,
        path: String,
        _ body: (UnsafeRawBufferPointer) -> Void
    ) throws {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var offset: off_t = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            if count > 0 {
                chunk.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                offset += off_t(count)
            } else if count == 0 {
                return
            } else if errno != EINTR {
                throw TamperEvidentLogError(.unreadable, line: nil, detail: "cannot read \(path): \(Self.reason())")
            }
        }
    }

    /// All of the file's bytes.
    static func readAll(_ descriptor: Int32, path: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try Self.read(descriptor, path: path) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// The last complete line of the file and what follows it, in one pass that holds at most `limit` bytes of a
    /// line: a line longer than that is counted but not kept.
    static func tail(of descriptor: Int32, path: String, limit: Int) throws -> Tail {
        var tail = Tail()
        var number = 1
        var current: [UInt8] = []
        var length = 0
        func take(_ bytes: UnsafeRawBufferPointer) {
            length += bytes.count
            if length <= limit {
                current.append(contentsOf: bytes)
            } else if !current.isEmpty {
                current = []
            }
        }
        try Self.read(descriptor, path: path) { chunk in
            var start = 0
            while start < chunk.count {
                guard let found = memchr(chunk.baseAddress! + start, 0x0A, chunk.count - start) else {
                    take(UnsafeRawBufferPointer(rebasing: chunk[start...]))
                    return
                }
                let newline = chunk.baseAddress!.distance(to: UnsafeRawPointer(found))
                take(UnsafeRawBufferPointer(rebasing: chunk[start..<newline]))
                tail.lastLine = (number, length <= limit ? current : nil)
                number += 1
                current = []
                length = 0
                start = newline + 1
            }
        }
        if length > 0 { tail.tornLine = (number, length) }
        return tail
    }

    /// Writes all of `bytes` with as few `write(2)` calls as the system allows (one for a regular file, in practice).
    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }
}
