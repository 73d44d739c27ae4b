import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The sole owner of some secret bytes — a token, a password, a key — in memory that is locked, zeroized and never
/// copied behind the caller's back.
///
/// - **Non-copyable.** `SecretBytes` is `~Copyable`: it cannot be copied, only moved (`consume`) or borrowed, so
///   exactly one value owns the bytes and the compiler rejects code that would duplicate them.
/// - **Own memory.** The bytes live in a buffer allocated for them alone, never in an `Array`, `Data` or `String`,
///   whose storage Swift may copy or reallocate without wiping the old copy.
/// - **Locked where allowed.** The buffer's pages are locked with `mlock` so they are not written to swap, and on
///   Linux excluded from core dumps (`MADV_DONTDUMP`) whether or not the lock succeeds. Locking can fail (the
///   `RLIMIT_MEMLOCK` limit, a sandbox); the secret is then kept unlocked, ``isMemoryLocked`` says so, the failure is
///   counted in ``memoryLockFailureCount`` and reported to ``memoryLockMonitor`` as a `secret_memory_not_locked`
///   security event.
/// - **Zeroized on release.** When the value is destroyed, the buffer is overwritten with zeros by `explicit_bzero`
///   (glibc, musl) or `memset_s` (Darwin) — functions the optimizer may not remove, unlike a plain store to memory
///   that is freed right after — and only then unlocked and freed.
/// - **Constant-time comparison.** ``isEqual(to:)-(SecretBytes)`` looks at every byte whatever the first
///   difference; only the lengths may leak through timing.
/// - **Redacted.** ``description``, ``debugDescription`` and string interpolation (`"\(secret)"`) give
///   `<redacted>`.
/// - **Scoped reading.** ``withUnsafeBytes(_:)`` is the only way to read the bytes; the pointer must not escape it.
///
/// ## Printing and reflection
///
/// `CustomStringConvertible`, `CustomDebugStringConvertible` and `CustomReflectable` require `Copyable` conformers
/// in Swift 6.3, so `SecretBytes` cannot adopt them. It has the `description` and `debugDescription` properties
/// anyway, and `DefaultStringInterpolation` gets an overload for it, so `"\(secret)"` compiles and gives
/// `<redacted>`. Everything else that prints or reflects — `print`, `dump`, `String(describing:)`,
/// `String(reflecting:)`, `Mirror(reflecting:)` — takes a copyable `Any`, so **passing a `SecretBytes` to them does
/// not compile**. Copyable types that hold a secret (``SecretBox``, ``Credential``, ``CredentialStore``) adopt those
/// protocols and print and reflect as `<redacted>`, without children.
///
/// ```swift
/// let token = SecretBytes(utf8: "s3cr3t")
/// print("token: \(token)")                        // token: <redacted>
/// let header = token.withUnsafeBytes { "Bearer " + String(decoding: $0, as: UTF8.self) }
/// ```
///
/// What `SecretBytes` cannot do: wipe the copies its *input* lived in (an `Array` or `String` you built it from —
/// prefer ``init(wiping:)`` or ``init(contentsOfFile:trimmingTrailingNewlines:maximumSize:)``), or the copies made
/// from its bytes inside ``withUnsafeBytes(_:)`` (such as a header value handed to the network stack).
public struct SecretBytes: ~Copyable, @unchecked Sendable {
    // @unchecked Sendable: the buffer is owned by exactly one non-copyable value and only ever read through it.

    /// The buffer, or nil when ``count`` is 0.
    private let start: UnsafeMutableRawPointer?
    /// The number of secret bytes.
    public let count: Int
    /// Whether the buffer's pages are locked in memory (`mlock` succeeded).
    public let isMemoryLocked: Bool

    /// A secret of `count` bytes, which `body` writes into a buffer that is already locked. Bytes `body` leaves
    /// unwritten are zero. If `body` throws, the buffer is zeroized and freed and the error is rethrown.
    public init<E: Error>(
        count: Int,
        initializingWith body: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        precondition(count >= 0, "a secret cannot have a negative count")
        guard count > 0 else {
            try body(UnsafeMutableRawBufferPointer(start: nil, count: 0))
            self.start = nil
            self.count = 0
            self.isMemoryLocked = false
            return
        }
        let start = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
        start.initializeMemory(as: UInt8.self, repeating: 0, count: count)
        let outcome = PageLockRegistry.shared.lock(start, count: count)
        if !outcome.isLocked {
            Self.reportLockFailure(count: count, systemError: outcome.systemError)
        }
        do {
            try body(UnsafeMutableRawBufferPointer(start: start, count: count))
        } catch {
            Self.release(start, count: count)
            throw error
        }
        self.start = start
        self.count = count
        self.isMemoryLocked = outcome.isLocked
    }

    /// A copy of `bytes`. The array itself is left as it is; see ``init(wiping:)``.
    public init(_ bytes: [UInt8]) {
        self.init(count: bytes.count) { buffer in
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
        }
    }

    /// Moves the contents of `bytes` into a secret: copies them, then overwrites the array's own storage with zeros,
    /// in place, and empties the array.
    ///
    /// An `Array` shares its storage with its copies until one of them is mutated (copy-on-write). Wiping through a
    /// mutating method would first give `bytes` a fresh copy, zero that copy and leave the secret in the storage the
    /// other copies still hold. This initializer writes the zeros into the storage `bytes` refers to when it is
    /// called, without making it unique first: every array that shares that storage (a copy made earlier, such as
    /// the value behind a computed property that was passed `inout`) reads zeros afterwards. That is the point: after
    /// the call, the bytes exist only in the secret.
    ///
    /// > Important: Do not pass an array built from an array literal (`var key: [UInt8] = [0x2a, …]`). An optimized
    /// > build may keep such an array in constant storage that every evaluation of the literal shares, which would
    /// > read zeros afterwards. A secret written in source code is in the binary anyway.
    public init(wiping bytes: inout [UInt8]) {
        self.init(bytes)
        // `withUnsafeBufferPointer` reads without making the storage unique: the pointer is to the caller's storage.
        bytes.withUnsafeBufferPointer { storage in
            Self.zeroize(UnsafeMutableRawPointer(mutating: storage.baseAddress), count: storage.count)
        }
        bytes.removeAll()
    }

    /// The UTF-8 bytes of `string`. The string itself cannot be wiped: where the secret comes from outside the
    /// program, read it into a byte buffer or a file instead.
    public init(utf8 string: String) {
        var string = string
        let count = string.utf8.count
        self.init(count: count) { buffer in
            string.withUTF8 { buffer.copyMemory(from: UnsafeRawBufferPointer($0)) }
        }
    }

    /// The contents of the file at `path` (for `--key-file` options), read straight into locked memory.
    ///
    /// A regular file is read in one piece into a buffer of its size. A pipe, socket or character device (process
    /// substitution such as `--key-file <(pass show api)`, or `/dev/stdin`) is read until its end into locked
    /// buffers that grow by doubling; each outgrown buffer is zeroized. When trailing newlines are trimmed, the
    /// buffer holding them is zeroized as well.
    ///
    /// - Parameters:
    ///   - path: A regular file, pipe, socket or character device (symbolic links are followed).
    ///   - trimmingTrailingNewlines: Whether trailing `\n` and `\r\n` are dropped, as editors and `echo` add them.
    ///   - maximumSize: The largest secret accepted, in bytes.
    /// - Throws: ``SecretBytesError`` naming the path and the problem; never the contents.
    public init(
        contentsOfFile path: String,
        trimmingTrailingNewlines: Bool = true,
        maximumSize: Int = 1 << 20
    ) throws(SecretBytesError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw SecretBytesError(.cannotOpen, path: path, systemError: errno)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw SecretBytesError(.readFailed, path: path, systemError: errno)
        }
        let contents: SecretBytes
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            let size = Int(status.st_size)
            guard size <= maximumSize else {
                throw SecretBytesError(.tooLarge, path: path, limit: maximumSize)
            }
            contents = try SecretBytes(count: size) { (buffer) throws(SecretBytesError) in
                let read = try Self.readFully(descriptor, into: buffer, path: path)
                guard read == size else {
                    throw SecretBytesError(.readFailed, path: path)
                }
            }
        case S_IFIFO, S_IFSOCK, S_IFCHR:
            contents = try Self.readStream(descriptor, path: path, maximumSize: maximumSize)
        default:
            throw SecretBytesError(.unsupportedFileType, path: path)
        }
        guard trimmingTrailingNewlines else {
            self = contents
            return
        }
        let trimmed = contents.withUnsafeBytes { bytes in
            var end = bytes.count
            while end > 0 && bytes[end - 1] == UInt8(ascii: "\n") {
                end -= 1
                if end > 0 && bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            }
            return end
        }
        self = trimmed < contents.count ? contents.prefix(trimmed) : contents
    }

    /// Reads from `descriptor` until `buffer` is full or the input ends, retrying on `EINTR`.
    ///
    /// - Returns: The number of bytes read.
    private static func readFully(
        _ descriptor: Int32,
        into buffer: UnsafeMutableRawBufferPointer,
        path: String
    ) throws(SecretBytesError) -> Int {
        var offset = 0
        while offset < buffer.count {
            let result = systemRead(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if result < 0 && errno == EINTR { continue }
            guard result >= 0 else {
                throw SecretBytesError(.readFailed, path: path, systemError: errno)
            }
            if result == 0 { break }
            offset += result
        }
        return offset
    }

    /// Reads a stream to its end into locked buffers that double in size, zeroizing each outgrown one.
    private static func readStream(
        _ descriptor: Int32,
        path: String,
        maximumSize: Int
    ) throws(SecretBytesError) -> SecretBytes {
        var buffer = SecretBytes(count: min(4096, maximumSize + 1)) { _ in }
        var used = 0
        while true {
            if used == buffer.count {
                guard buffer.count <= maximumSize else {
                    throw SecretBytesError(.tooLarge, path: path, limit: maximumSize)
                }
                // The outgrown buffer is destroyed, and so zeroized, by the assignment.
                buffer = buffer.withUnsafeBytes { old in
                    SecretBytes(count: min(old.count * 2, maximumSize + 1)) { $0.copyMemory(from: old) }
                }
            }
            let read = try buffer.withUnsafeMutableBytes { (bytes) throws(SecretBytesError) in
                let free = UnsafeMutableRawBufferPointer(rebasing: bytes[used...])
                return try Self.readFully(descriptor, into: free, path: path)
            }
            if read == 0 { break }
            used += read
        }
        guard used <= maximumSize else {
            throw SecretBytesError(.tooLarge, path: path, limit: maximumSize)
        }
        return buffer.prefix(used)
    }

    /// A new secret holding the first `length` bytes of this one (which is destroyed, and so zeroized).
    private consuming func prefix(_ length: Int) -> SecretBytes {
        self.withUnsafeBytes { bytes in
            SecretBytes(count: length) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<length])) }
        }
    }

    /// Calls `body` with the buffer for writing: only while a secret is being built.
    private func withUnsafeMutableBytes<Result, E: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(E) -> Result
    ) throws(E) -> Result {
        try body(UnsafeMutableRawBufferPointer(start: self.start, count: self.count))
    }

    deinit {
        if let start = self.start {
            Self.release(start, count: self.count)
        }
    }

    /// Whether the secret has no bytes.
    public var isEmpty: Bool { self.count == 0 }

    /// Calls `body` with the secret bytes: the only way to read them. The pointer is valid only inside `body`
    /// and must not escape it; copies made from it are the caller's to wipe.
    public func withUnsafeBytes<Result: ~Copyable, E: Error>(
        _ body: (UnsafeRawBufferPointer) throws(E) -> Result
    ) throws(E) -> Result {
        try body(UnsafeRawBufferPointer(start: self.start, count: self.count))
    }

    /// Whether both secrets hold the same bytes, in time that depends only on the lengths.
    public func isEqual(to other: borrowing SecretBytes) -> Bool {
        other.withUnsafeBytes { theirs in
            self.withUnsafeBytes { ours in Self.constantTimeEquals(ours, theirs) }
        }
    }

    /// Whether the secret equals `bytes` (a token received to be checked, say), in time that depends only on the
    /// lengths.
    public func isEqual(to bytes: UnsafeRawBufferPointer) -> Bool {
        self.withUnsafeBytes { ours in Self.constantTimeEquals(ours, bytes) }
    }

    /// `<redacted>`.
    public var description: String { "<redacted>" }

    /// `<redacted>`.
    public var debugDescription: String { "<redacted>" }

    // MARK: - Memory-lock failures

    /// Receives a `secret_memory_not_locked` ``SecurityEvent`` each time a secret's memory cannot be locked: nil (the
    /// default) reports to nobody. Process-wide, like the page locks themselves.
    ///
    /// Secrets are made everywhere — by the CLI reading a key file, by the cookie jar for each cookie, by code that
    /// has no client or event monitor at hand — so the report cannot go to a client's monitor. Set this once at start
    /// up, usually to the same monitor as the client's:
    ///
    /// ```swift
    /// let monitor = LoggingEventMonitor(logger: logger)
    /// SecretBytes.memoryLockMonitor = monitor
    /// configuration.eventMonitor = monitor
    /// ```
    ///
    /// The monitor is called synchronously, on the thread that made the secret, with no lock of Bulwark's held. A
    /// secret the monitor itself makes while recording is counted but not reported again. Without a monitor, the
    /// failures are still counted in ``memoryLockFailureCount``.
    public static var memoryLockMonitor: (any EventMonitor)? {
        get { lockFailures.monitor }
        set { lockFailures.monitor = newValue }
    }

    /// The number of secrets made since the process started whose memory could not be locked (`mlock` failed): they
    /// may be written to swap. On Linux their pages are excluded from core dumps all the same.
    public static var memoryLockFailureCount: Int { lockFailures.count }

    private static let lockFailures = LockFailures()

    /// True while ``memoryLockMonitor`` records an event on this thread or task.
    @TaskLocal private static var isReportingLockFailure = false

    /// Counts a failed lock and reports it to ``memoryLockMonitor``.
    private static func reportLockFailure(count: Int, systemError: Int32?) {
        let (total, monitor) = self.lockFailures.record()
        guard let monitor, !self.isReportingLockFailure else { return }
        var reason = "the memory lock failed"
        if let systemError, let text = strerror(systemError) {
            reason += " (\(String(cString: text)))"
        }
        #if os(Linux)
        let dumps = "; its pages are excluded from core dumps"
        #else
        let dumps = ""
        #endif
        let event = SecurityEvent(
            kind: .secretMemoryNotLocked,
            reason: "mlock_failed",
            message: "a secret of \(count) bytes is kept in memory that may be written to swap: \(reason)\(dumps); "
                + "raise the locked-memory limit (ulimit -l, RLIMIT_MEMLOCK) to lock it",
            details: [.bytes: .number(count), .failures: .number(total)]
        )
        self.$isReportingLockFailure.withValue(true) {
            monitor.record(event)
        }
    }

    /// The lock-protected failure count and monitor.
    private final class LockFailures: @unchecked Sendable {
        private let lock = NSLock()
        private var failures = 0
        private var eventMonitor: (any EventMonitor)?

        var count: Int { self.lock.withLock { self.failures } }

        var monitor: (any EventMonitor)? {
            get { self.lock.withLock { self.eventMonitor } }
            set { self.lock.withLock { self.eventMonitor = newValue } }
        }

        /// Counts one failure; returns the new count and the monitor to report to.
        func record() -> (Int, (any EventMonitor)?) {
            self.lock.withLock {
                self.failures += 1
                return (self.failures, self.eventMonitor)
            }
        }
    }

    // MARK: - Testing hook

    /// Called with the buffer of every non-empty secret as it is released: after zeroization, before it is
    /// unlocked and freed. For tests that check zeroization; nil (the default) in production.
    @_spi(Testing)
    public static var _observeBeforeRelease: (@Sendable (UnsafeRawBufferPointer) -> Void)? {
        get { releaseObserver.value }
        set { releaseObserver.value = newValue }
    }

    private static let releaseObserver = ReleaseObserver()

    /// The lock-protected testing hook.
    private final class ReleaseObserver: @unchecked Sendable {
        private let lock = NSLock()
        private var observer: (@Sendable (UnsafeRawBufferPointer) -> Void)?

        var value: (@Sendable (UnsafeRawBufferPointer) -> Void)? {
            get {
                self.lock.lock()
                defer { self.lock.unlock() }
                return self.observer
            }
            set {
                self.lock.lock()
                defer { self.lock.unlock() }
                self.observer = newValue
            }
        }
    }

    // MARK: - Memory

    /// Zeroizes, reports to the testing hook, unregisters (unlocking its pages if no other secret uses them) and
    /// frees a buffer.
    private static func release(_ start: UnsafeMutableRawPointer, count: Int) {
        self.zeroize(start, count: count)
        if let observer = self.releaseObserver.value {
            observer(UnsafeRawBufferPointer(start: start, count: count))
        }
        PageLockRegistry.shared.unlock(start, count: count)
        start.deallocate()
    }

    /// Overwrites `count` bytes at `start` with zeros in a way the optimizer may not remove, even though the
    /// memory is freed right after.
    ///
    /// `explicit_bzero` (glibc 2.25+, musl) and `memset_s` (C11 Annex K, Darwin) exist for this. Elsewhere a loop of
    /// volatile-like stores through a function that is never inlined or optimized stands in.
    static func zeroize(_ start: UnsafeMutableRawPointer?, count: Int) {
        guard let start, count > 0 else { return }
        #if canImport(Glibc) || canImport(Musl)
        explicit_bzero(start, count)
        #elseif canImport(Darwin)
        _ = memset_s(start, count, 0, count)
        #else
        self.unoptimizedZero(start, count: count)
        #endif
    }

    #if !(canImport(Glibc) || canImport(Musl) || canImport(Darwin))
    /// Zeroes byte by byte in a function the optimizer leaves alone, so the stores cannot be elided.
    @inline(never)
    @_optimize(none)
    private static func unoptimizedZero(_ start: UnsafeMutableRawPointer, count: Int) {
        let bytes = start.assumingMemoryBound(to: UInt8.self)
        for index in 0..<count {
            bytes[index] = 0
        }
    }
    #endif

    /// Compares every byte of equal-length buffers, accumulating differences with XOR and OR, so the time does not
    /// depend on where the first difference is. Never inlined, so the loop cannot be merged into a caller's branch.
    @inline(never)
    static func constantTimeEquals(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<lhs.count {
            difference |= lhs[index] ^ rhs[index]
        }
        return difference == 0
    }
}

/// `read(2)`, under a name the ``SecretBytes`` methods do not shadow.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

/// String interpolation that keeps a secret's bytes out of every string.
extension DefaultStringInterpolation {
    /// Interpolates a secret as `<redacted>`: `"token: \(secret)"` never shows its bytes.
    public mutating func appendInterpolation(_ secret: borrowing SecretBytes) {
        self.appendLiteral("<redacted>")
    }
}
