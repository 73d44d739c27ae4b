import BulwarkTestHelpers
import Foundation
import Testing

@_spi(Testing) @testable import BulwarkPolicy

/// Records what ``SecretBytes/_observeBeforeRelease`` sees: the address and bytes of every released buffer.
final class ReleaseLog: @unchecked Sendable {
    private let lock = NSLock()
    private var records: [(address: UInt, bytes: [UInt8])] = []

    func append(_ buffer: UnsafeRawBufferPointer) {
        let record = (UInt(bitPattern: buffer.baseAddress), Array(buffer))
        self.lock.lock()
        defer { self.lock.unlock() }
        self.records.append(record)
    }

    /// The bytes of the releases at `address` after the first `mark` releases (other tests may release buffers at
    /// other addresses meanwhile, and a freed address is reused).
    func released(at address: UInt, since mark: Int = 0) -> [[UInt8]] {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.records.dropFirst(mark).filter { $0.address == address }.map(\.bytes)
    }

    /// The first release at `address` after the first `mark` releases: the buffer that had the address at `mark`
    /// (an address is only reused once freed).
    func firstRelease(at address: UInt, since mark: Int) -> [UInt8]? {
        self.released(at: address, since: mark).first
    }

    /// The number of releases seen so far, to pass to ``released(at:since:)``.
    var mark: Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.records.count
    }

    /// Every release seen.
    var all: [[UInt8]] {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.records.map(\.bytes)
    }

    /// Installs a log as the release hook for the duration of `body`.
    static func observing<Result>(_ body: (ReleaseLog) async throws -> Result) async rethrows -> Result {
        let log = ReleaseLog()
        SecretBytes._observeBeforeRelease = { log.append($0) }
        defer { SecretBytes._observeBeforeRelease = nil }
        return try await body(log)
    }
}

/// The address of a secret's buffer.
func address(of secret: borrowing SecretBytes) -> UInt {
    secret.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
}

/// The address of a boxed secret's buffer (0 once wiped).
func address(of box: SecretBox) -> UInt {
    box.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) } ?? 0
}

/// Makes a secret and lets it go, returning the address its buffer had.
func makeAndDropSecret(_ bytes: [UInt8]) -> UInt {
    makeAndDropSecret(bytes, log: nil).address
}

/// Makes a secret and drops it: its address, and the log's mark taken once the secret exists (a buffer another test
/// released at the same address before this one was allocated there comes before the mark).
func makeAndDropSecret(_ bytes: [UInt8], log: ReleaseLog?) -> (address: UInt, mark: Int) {
    let secret = SecretBytes(bytes)
    return (address(of: secret), log?.mark ?? 0)
}

/// `dump` output as a string.
func dumped(_ value: Any) -> String {
    var output = ""
    dump(value, to: &output)
    return output
}

/// Every test that installs the release hook lives in this one serialized suite: the hook is process-wide.
@Suite("Zeroization, seen by the release hook", .serialized)
struct ZeroizationTests {
    @Test("a secret's buffer holds only zeros when it is released")
    func secretZeroizedOnRelease() async {
        await ReleaseLog.observing { log in
            let bytes = [UInt8](repeating: 0xA5, count: 61) + Array("correct horse battery staple".utf8)
            let (address, mark) = makeAndDropSecret(bytes, log: log)
            let release = log.firstRelease(at: address, since: mark)
            #expect(release?.count == bytes.count)
            #expect(release?.allSatisfy { $0 == 0 } == true)
        }
    }

    @Test("every release the hook sees is zeroized, whichever test made the secret")
    func everyReleaseIsZero() async {
        await ReleaseLog.observing { log in
            for length in [1, 7, 16, 4095, 4096, 4097, 70_000] {
                _ = makeAndDropSecret([UInt8](repeating: 0xFF, count: length))
            }
            #expect(log.all.count >= 7)
            #expect(log.all.allSatisfy { $0.allSatisfy { $0 == 0 } })
        }
    }

    @Test("a secret moved into a box is zeroized by wipe(), not before")
    func boxWipe() async {
        await ReleaseLog.observing { log in
            let box = SecretBox(SecretBytes(utf8: "box secret value"))
            let address = address(of: box)
            let mark = log.mark
            #expect(log.released(at: address, since: mark).isEmpty)
            #expect(box.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == "box secret value")
            box.wipe()
            #expect(log.firstRelease(at: address, since: mark) == [UInt8](repeating: 0, count: 16))
            #expect(box.isWiped)
            #expect(box.withUnsafeBytes { _ in 1 } == nil)
            #expect(box.description == "<wiped>")
        }
    }

    @Test("a secret whose initializer throws is zeroized before the error propagates")
    func throwingInitializerZeroizes() async {
        struct Failure: Error {}
        await ReleaseLog.observing { log in
            let recorded = SharedBox<UInt>(0)
            let mark = SharedBox<UInt>(0)
            #expect(throws: Failure.self) {
                _ = try SecretBytes(count: 32) { (buffer) throws(Failure) in
                    buffer.copyBytes(from: [UInt8](repeating: 0x42, count: 32))
                    recorded.value = UInt(bitPattern: buffer.baseAddress)
                    mark.value = UInt(log.mark)
                    throw Failure()
                }
            }
            #expect(log.firstRelease(at: recorded.value, since: Int(mark.value)) == [UInt8](repeating: 0, count: 32))
        }
    }

    @Test("a secret read from a file and trimmed: the untrimmed buffer is zeroized too")
    func fileTrimZeroizes() async throws {
        let path = FileManager.default.temporaryDirectory.appending(path: "bulwark-secret-\(UUID())").path
        try Data("file-secret-value\r\n\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await ReleaseLog.observing { log in
            let before = log.all.count
            let secret = try SecretBytes(contentsOfFile: path)
            let count = secret.count
            #expect(count == 17)
            // The 20-byte buffer the file was read into was released, zeroized.
            #expect(log.all.dropFirst(before).contains([UInt8](repeating: 0, count: 20)))
            let address = address(of: secret)
            let mark = log.mark
            _ = consume secret
            #expect(log.firstRelease(at: address, since: mark) == [UInt8](repeating: 0, count: 17))
        }
    }

    @Test("credential factories that refuse a value zeroize it")
    func refusedCredentialZeroized() async {
        await ReleaseLog.observing { log in
            let recorded = SharedBox<UInt>(0)
            let mark = SharedBox<UInt>(0)
            #expect(throws: CredentialError.self) {
                let secret = SecretBytes(utf8: "token\r\nX-Injected: 1")
                recorded.value = address(of: secret)
                mark.value = UInt(log.mark)
                return try Credential.bearer(secret)
            }
            #expect(log.firstRelease(at: recorded.value, since: Int(mark.value)) == [UInt8](repeating: 0, count: 20))
        }
    }

    @Test("sign-out zeroizes every credential in the store")
    func signOutZeroizesEverything() async throws {
        try await ReleaseLog.observing { log in
            let store = CredentialStore()
            let bearer = try Credential.bearer(SecretBytes(utf8: "bearer-token-1234"))
            let basic = try Credential.basic(username: "alice", password: SecretBytes(utf8: "pa55word"))
            let header = try Credential.header("X-Auth-Token", value: SecretBytes(utf8: "xauth-5678"))
            let cookie = try Credential.cookie(name: "session", value: SecretBytes(utf8: "cookie-9abc"))
            let credentials = [bearer, basic, header, cookie]
            let addresses = credentials.map { address(of: $0.secret) }
            let scope = try CredentialScope.under("https://api.example.com/v1/")
            for credential in credentials {
                store.add(credential, scope: scope)
            }
            let mark = log.mark
            #expect(Set(addresses).count == 4)

            #expect(store.signOut() == 4)
            let lengths = [17, 14, 10, 11]  // "alice:pa55word" is 14 bytes
            for (address, length) in zip(addresses, lengths) {
                #expect(log.firstRelease(at: address, since: mark) == [UInt8](repeating: 0, count: length))
            }
            let wiped = credentials.map(\.isWiped)
            let values = credentials.map { $0.makeHeaderValue() }
            #expect(wiped == [true, true, true, true])
            #expect(values == [nil, nil, nil, nil])

            var headers: [(name: String, value: String)] = []
            let attachment = try await store.attach(to: &headers, for: URL(string: "https://api.example.com/v1/me")!)
            #expect(attachment == .nothingInScope)
            #expect(headers.isEmpty)
        }
    }

    @Test("a secret whose memory cannot be locked is counted and reported to the memory-lock monitor")
    func lockFailureReported() throws {
        let calls = RecordingPageCalls(failLocks: true, forward: true)
        let recorder = RecordingEventMonitor()
        SecretBytes.memoryLockMonitor = SecretMakingMonitor(recorder: recorder)
        defer { SecretBytes.memoryLockMonitor = nil }
        let before = SecretBytes.memoryLockFailureCount
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let (locked, interior) = PageLockRegistry.shared.withSystemCalls(calls.systemCalls) {
            let secret = SecretBytes(count: 3 * pageSize) { $0.initializeMemory(as: UInt8.self, repeating: 0x5A) }
            // A page inside the buffer: no other secret can be on it.
            let interior = (address(of: secret) + UInt(pageSize)) & ~UInt(pageSize - 1)
            return (secret.isMemoryLocked, UnsafeMutableRawPointer(bitPattern: interior)!)
        }
        #expect(!locked)
        #expect(SecretBytes.memoryLockFailureCount > before)
        let events = recorder.events.filter { $0.details[.bytes]?.number == 3 * pageSize }
        #expect(events.count == 1)
        #expect(events.first?.kind == .secretMemoryNotLocked)
        #expect(events.first?.shortDescription == "secret_memory_not_locked:mlock_failed")
        #expect(events.first?.message.contains("Cannot allocate memory") == true)
        #expect(events.first?.message.contains("ENOMEM") == false)
        // The monitor made a secret while recording, whose lock failed too: counted, not reported (no recursion).
        #expect(!recorder.events.contains { $0.details[.bytes]?.number == 37 })
        #expect(calls.calls(on: interior) == ["dontdump", "mlock", "dodump"])
    }

    @Test("cookie values are zeroized when replaced and when the jar is cleared")
    func cookieValuesZeroized() async throws {
        await ReleaseLog.observing { log in
            let jar = CookieJar()
            let site = URL(string: "https://www.example.com/")!
            jar.store(setCookieFields: ["sid=first-value", "csrf=token-value; Domain=example.com"], from: site)
            let sid = jar.allCookies.first { $0.name == "sid" }!
            let sidAddress = sid.withUnsafeValueBytes { UInt(bitPattern: $0.baseAddress) } ?? 0
            let mark = log.mark
            jar.store(setCookieFields: ["sid=second"], from: site)
            #expect(log.firstRelease(at: sidAddress, since: mark) == [UInt8](repeating: 0, count: 11))
            let addresses = jar.allCookies.map { cookie in
                (cookie.withUnsafeValueBytes { UInt(bitPattern: $0.baseAddress) } ?? 0, cookie.name == "sid" ? 6 : 11)
            }
            let cleared = log.mark
            #expect(jar.removeAll() == 2)
            for (address, length) in addresses {
                #expect(log.firstRelease(at: address, since: cleared) == [UInt8](repeating: 0, count: length))
            }
        }
    }

    @Test("a refresh that completes after sign-out is wiped, not installed")
    func lateRefreshWiped() async throws {
        try await ReleaseLog.observing { log in
            let gate = Gate()
            let made = SharedBox<UInt>(0)
            // Counted once the secret exists: a buffer other tests released earlier at the same address (before this
            // one was allocated there) must not be taken for it.
            let madeAt = SharedBox<UInt>(0)
            let store = CredentialStore()
            store.add(nil, scope: try .under("https://api.example.com/")) { _ in
                await gate.wait()
                let credential = try Credential.bearer(SecretBytes(utf8: "late-token"))
                made.value = address(of: credential.secret)
                madeAt.value = UInt(log.mark)
                return credential
            }
            let attach = Task {
                var headers: [(name: String, value: String)] = []
                let result = try await store.attach(to: &headers, for: URL(string: "https://api.example.com/x")!)
                return (result, headers.map(\.name))
            }
            await gate.waitUntilWaiting()
            store.signOut()
            await gate.open()
            let (result, names) = try await attach.value
            #expect(result == .nothingInScope)
            #expect(names.isEmpty)
            #expect(made.value != 0)
            #expect(log.firstRelease(at: made.value, since: Int(madeAt.value)) == [UInt8](repeating: 0, count: 10))
            #expect(store.count == 0)
        }
    }
}

/// A gate a refresh provider waits at until the test opens it.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var arrivals: [CheckedContinuation<Void, Never>] = []
    private var arrived = 0

    func wait() async {
        self.arrived += 1
        for arrival in self.arrivals { arrival.resume() }
        self.arrivals.removeAll()
        guard !self.isOpen else { return }
        await withCheckedContinuation { self.waiters.append($0) }
    }

    func waitUntilWaiting() async {
        guard self.arrived == 0 else { return }
        await withCheckedContinuation { self.arrivals.append($0) }
    }

    func open() {
        self.isOpen = true
        for waiter in self.waiters { waiter.resume() }
        self.waiters.removeAll()
    }
}

@Suite("Secret bytes")
struct SecretBytesTests {
    @Test("reading is scoped and gives the bytes back")
    func scopedRead() {
        let secret = SecretBytes([1, 2, 3, 255])
        let (count, isEmpty, bytes) = (secret.count, secret.isEmpty, secret.withUnsafeBytes { Array($0) })
        #expect(count == 4 && !isEmpty)
        #expect(bytes == [1, 2, 3, 255])
        let text = SecretBytes(utf8: "héllo")
        let decoded = (text.count, text.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
        #expect(decoded == (6, "héllo"))
        let empty = SecretBytes([])
        let emptiness = (empty.isEmpty, empty.withUnsafeBytes { $0.count })
        #expect(emptiness == (true, 0))
    }

    @Test("init(wiping:) empties the source array")
    func wipingInit() {
        var source = Array("wipe me".utf8)
        let secret = SecretBytes(wiping: &source)
        #expect(source.isEmpty)
        let bytes = secret.withUnsafeBytes { Array($0) }
        #expect(bytes == Array("wipe me".utf8))
    }

    @Test("init(wiping:) zeroes the caller's storage in place, also when another array shares it (issue 16, defect 13)")
    func wipingInitZeroesTheCallersStorage() {
        var source = Array("wipe me, please".utf8)
        // `alias` shares `source`'s storage (copy-on-write): it is how the caller can still see that storage.
        let alias = source
        let secret = SecretBytes(wiping: &source)
        #expect(source.isEmpty)
        #expect(alias == [UInt8](repeating: 0, count: 15), "the caller's storage still holds the secret")
        let bytes = secret.withUnsafeBytes { Array($0) }
        #expect(bytes == Array("wipe me, please".utf8))
    }

    @Test("constant-time equality compares every byte and the lengths")
    func equality() {
        let secret = SecretBytes(utf8: "0123456789abcdef")
        func equal(_ other: consuming SecretBytes) -> Bool { secret.isEqual(to: other) }
        let results = [
            equal(SecretBytes(utf8: "0123456789abcdef")),
            equal(SecretBytes(utf8: "x123456789abcdef")),
            equal(SecretBytes(utf8: "0123456789abcdeX")),
            equal(SecretBytes(utf8: "0123456789abcde")),
            equal(SecretBytes(utf8: "0123456789abcdef0")),
        ]
        #expect(results == [true, false, false, false, false])
        let emptyEqual = SecretBytes([]).isEqual(to: SecretBytes([]))
        let emptyDiffers = SecretBytes([]).isEqual(to: SecretBytes([0]))
        #expect(emptyEqual && !emptyDiffers)
        let raw = Array("0123456789abcdef".utf8)
        let rawEqual = raw.withUnsafeBytes { secret.isEqual(to: $0) }
        #expect(rawEqual)
        let boxEqual = SecretBox(SecretBytes(utf8: "abc")).isEqual(to: SecretBytes(utf8: "abc"))
        #expect(boxEqual)
        // Every single-bit difference at every position is seen.
        var missed = 0
        for index in 0..<raw.count {
            for bit in 0..<8 {
                var changed = raw
                changed[index] ^= 1 << bit
                if equal(SecretBytes(changed)) { missed += 1 }
            }
        }
        #expect(missed == 0)
    }

    @Test("description, debugDescription and string interpolation are <redacted>")
    func redactedText() {
        let secret = SecretBytes(utf8: "hunter2-hunter2")
        let (description, debugDescription) = (secret.description, secret.debugDescription)
        #expect(description == "<redacted>")
        #expect(debugDescription == "<redacted>")
        #expect("token=\(secret)" == "token=<redacted>")
        let box = SecretBox(SecretBytes(utf8: "hunter2-hunter2"))
        for text in [box.description, box.debugDescription, "\(box)", String(reflecting: box), dumped(box)] {
            #expect(!text.contains("hunter2"))
        }
        #expect(Mirror(reflecting: box).children.isEmpty)
    }

    @Test("the memory is locked where the OS allows it, and unlocked once no secret uses the page")
    func memoryLocking() throws {
        let secret = SecretBytes([UInt8](repeating: 7, count: 100))
        // Locking may be refused (RLIMIT_MEMLOCK); either way the secret works.
        let intact = secret.withUnsafeBytes { $0.allSatisfy { $0 == 7 } }
        #expect(intact)

        // Page reference counting, on pages no other secret uses.
        let registry = PageLockRegistry()
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let region = UnsafeMutableRawPointer.allocate(byteCount: 3 * pageSize, alignment: pageSize)
        defer { region.deallocate() }
        guard registry.lock(region, count: 16).isLocked else { return }  // mlock not allowed here
        #expect(registry.lockedPageCount == 1)
        #expect(registry.lock(region + 100, count: 16).isLocked)
        #expect(registry.lockedPageCount == 1)
        #expect(registry.lock(region + pageSize - 8, count: 16).isLocked)  // straddles two pages
        #expect(registry.lockedPageCount == 2)
        registry.unlock(region, count: 16)
        #expect(registry.lockedPageCount == 2)
        registry.unlock(region + 100, count: 16)
        #expect(registry.lockedPageCount == 2)
        registry.unlock(region + pageSize - 8, count: 16)
        #expect(registry.lockedPageCount == 0)
    }

    @Test("a page whose mlock fails is still excluded from core dumps, and included again when its last secret leaves")
    func dontDumpWithoutLock() {
        let calls = RecordingPageCalls(failLocks: true)
        let registry = PageLockRegistry(systemCalls: calls.systemCalls)
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let region = UnsafeMutableRawPointer.allocate(byteCount: 2 * pageSize, alignment: pageSize)
        defer { region.deallocate() }
        let first = registry.lock(region, count: 16)
        #expect(!first.isLocked)
        #expect(first.systemError == ENOMEM)
        #expect(calls.calls(on: region) == ["dontdump", "mlock"], "MADV_DONTDUMP must not depend on mlock")
        // A second secret on the page: the lock is tried again, the page is already excluded.
        #expect(!registry.lock(region + 64, count: 16).isLocked)
        #expect(calls.calls(on: region) == ["dontdump", "mlock", "mlock"])
        registry.unlock(region, count: 16)
        #expect(registry.registeredPageCount == 1)
        registry.unlock(region + 64, count: 16)
        // Included in core dumps again; no munlock of a page that was never locked.
        #expect(calls.calls(on: region) == ["dontdump", "mlock", "mlock", "dodump"])
        #expect(registry.registeredPageCount == 0)
        #expect(registry.lockedPageCount == 0)
    }

    #if os(Linux)
    @Test("on Linux a secret's pages really are excluded from core dumps (VmFlags dd in /proc/self/smaps)")
    func coreDumpExclusionIsApplied() throws {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let secret = SecretBytes(count: 3 * pageSize) { $0.initializeMemory(as: UInt8.self, repeating: 0x5A) }
        // A page inside the buffer: the mapping holding it must carry the "dd" (do not dump) flag.
        let interior = (address(of: secret) + UInt(pageSize)) & ~UInt(pageSize - 1)
        // procfs files report a size of 0: read to the end rather than by size.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        let smaps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try handle.close()
        var inMapping = false
        var flags: [Substring]?
        for line in smaps.split(separator: "\n") {
            if let range = line.split(separator: " ").first, range.contains("-"), !line.hasSuffix(":"),
                let dash = range.firstIndex(of: "-"),
                let start = UInt(range[..<dash], radix: 16),
                let end = UInt(range[range.index(after: dash)...], radix: 16)
            {
                inMapping = start <= interior && interior < end
            } else if inMapping, line.hasPrefix("VmFlags:") {
                flags = line.dropFirst("VmFlags:".count).split(separator: " ")
                break
            }
        }
        #expect(flags?.contains("dd") == true, "\(flags.map { $0.joined(separator: " ") } ?? "no mapping found")")
        _ = secret.count
    }
    #endif

    @Test("a secret file is read whole, with trailing newlines trimmed unless asked not to")
    func fromFile() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-secrets-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appending(path: "key").path
        try Data("line-one\nline-two\r\n\n".utf8).write(to: URL(fileURLWithPath: path))
        let trimmed = try SecretBytes(contentsOfFile: path)
        let trimmedText = trimmed.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(trimmedText == "line-one\nline-two")
        let whole = try SecretBytes(contentsOfFile: path, trimmingTrailingNewlines: false)
        let wholeCount = whole.count
        #expect(wholeCount == 20)

        let emptyPath = directory.appending(path: "empty").path
        try Data().write(to: URL(fileURLWithPath: emptyPath))
        let empty = try SecretBytes(contentsOfFile: emptyPath).isEmpty
        #expect(empty)
    }

    @Test("a secret is read from a pipe (process substitution) and from a character device")
    func fromStream() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-fifo-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A reader that gives up early must not kill the test process through the writer.
        signal(SIGPIPE, SIG_IGN)
        // 10,001 bytes: more than the first 4 KiB buffer, so the buffer grows twice. The limit counts the newline.
        let payload = String(repeating: "0123456789", count: 1000) + "\n"
        for (limit, succeeds) in [(1 << 20, true), (10_001, true), (10_000, false)] {
            let path = directory.appending(path: "fifo-\(limit)").path
            #expect(mkfifo(path, 0o600) == 0)
            let writer = Thread {
                let descriptor = open(path, O_WRONLY)
                Array(payload.utf8).withUnsafeBytes { _ = write(descriptor, $0.baseAddress!, $0.count) }
                close(descriptor)
            }
            writer.start()
            if succeeds {
                let secret = try SecretBytes(contentsOfFile: path, maximumSize: limit)
                let text = secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                #expect(text == String(payload.dropLast()))
            } else {
                let error = #expect(throws: SecretBytesError.self) {
                    _ = try SecretBytes(contentsOfFile: path, maximumSize: limit)
                }
                #expect(error?.code == .tooLarge)
                // Let the writer finish.
                while !writer.isFinished { usleep(1000) }
            }
        }
        let null = try SecretBytes(contentsOfFile: "/dev/null")
        let isEmpty = null.isEmpty
        #expect(isEmpty)
    }

    @Test("file errors name the path and the problem, never the contents")
    func fileErrors() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-secrets-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let big = directory.appending(path: "big").path
        try Data(String(repeating: "TOPSECRET", count: 20).utf8).write(to: URL(fileURLWithPath: big))

        let cases: [(String, Int, SecretBytesError.Code)] = [
            (directory.appending(path: "missing").path, 1 << 20, .cannotOpen),
            (directory.path, 1 << 20, .unsupportedFileType),
            (big, 100, .tooLarge),
        ]
        for (path, limit, code) in cases {
            let error = #expect(throws: SecretBytesError.self) {
                _ = try SecretBytes(contentsOfFile: path, maximumSize: limit)
            }
            #expect(error?.code == code)
            #expect(error?.path == path)
            #expect(error?.description.contains(path) == true)
            #expect(error?.description.contains("TOPSECRET") == false)
        }
    }
}

/// System calls that record what the registry asks for; `mlock` fails with `ENOMEM` when told to.
final class RecordingPageCalls: @unchecked Sendable {
    private let lock = NSLock()
    private var log: [String] = []
    let failLocks: Bool
    let forward: Bool

    /// - Parameters:
    ///   - failLocks: Whether `mlock` fails (with `ENOMEM`, as over `RLIMIT_MEMLOCK`).
    ///   - forward: Whether the other calls also reach the system (for the process-wide registry).
    init(failLocks: Bool, forward: Bool = false) {
        self.failLocks = failLocks
        self.forward = forward
    }

    var calls: [String] { self.lock.withLock { self.log } }

    private func append(_ entry: String) { self.lock.withLock { self.log.append(entry) } }

    func calls(on page: UnsafeMutableRawPointer) -> [String] {
        let suffix = " \(UInt(bitPattern: page))"
        return self.calls.filter { $0.hasSuffix(suffix) }.map { String($0.dropLast(suffix.count)) }
    }

    var systemCalls: PageLockRegistry.SystemCalls {
        PageLockRegistry.SystemCalls(
            lockPages: { address, length in
                self.append("mlock \(UInt(bitPattern: address))")
                if self.failLocks { return ENOMEM }
                return PageLockRegistry.SystemCalls.live.lockPages(address, length)
            },
            unlockPages: { address, length in
                self.append("munlock \(UInt(bitPattern: address))")
                if self.forward || !self.failLocks { PageLockRegistry.SystemCalls.live.unlockPages(address, length) }
            },
            excludeFromCoreDumps: { address, length, exclude in
                self.append("\(exclude ? "dontdump" : "dodump") \(UInt(bitPattern: address))")
                if self.forward { PageLockRegistry.SystemCalls.live.excludeFromCoreDumps(address, length, exclude) }
            }
        )
    }
}

/// Records events, and makes a 37-byte secret while recording each (as a monitor that signs or encrypts might).
struct SecretMakingMonitor: EventMonitor {
    let recorder: RecordingEventMonitor

    func record(_ event: SecurityEvent) {
        self.recorder.record(event)
        let secret = SecretBytes([UInt8](repeating: 1, count: 37))
        _ = secret.count
    }
}
