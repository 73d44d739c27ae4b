import BulwarkPolicy
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A ``PolicyUpdater``'s files in its directory: the last good bundle, exactly as it was received
/// (`policy-bundle.json`, which `bulwark policy verify` reads), and the updater's state (`policy-updater-state.json`:
/// the highest version accepted and the trusted keys, which a key-rotation bundle changes).
///
/// Every file is replaced atomically: written to a temporary file in the same directory, the file synced, renamed
/// over the old one, the directory synced. A crash at any point leaves either the old file or the new one, never a
/// part of one; a temporary file left by a crash is removed at the next start. The bundle is written before the
/// state, so a crash between the two leaves a newer bundle with an older state, which the next start verifies under
/// the older state's keys (a rotation bundle is signed by those) and completes.
struct PolicyUpdaterStorage: Sendable {
    static let bundleName = "policy-bundle.json"
    static let stateName = "policy-updater-state.json"
    static let stateFormat = "bulwark-policy-updater-state/1"
    static let lockName = "policy-updater.lock"

    /// Where a simulated crash stops a write (for tests).
    enum Fault: Sendable, Hashable {
        /// After the temporary file is written and synced, before it is renamed.
        case stopAfterTemporaryFileSynced
        /// The bundle is stored, then writing the state fails (a full disk, without a crash).
        case stateWriteFails
    }

    /// A file that could not be written, in words.
    struct WriteError: Error, CustomStringConvertible {
        var description: String
    }

    /// What the state file holds.
    struct State: Codable, Hashable, Sendable {
        var format: String = PolicyUpdaterStorage.stateFormat
        /// The highest bundle version accepted: an older one is a rollback.
        var highestVersion: UInt64
        /// The trusted keys, as public key lines.
        var trustedKeys: [String]
        /// How many of them must sign.
        var threshold: Int
        /// The keys the stored bundle was verified with, when they are not ``trustedKeys``: a key-rotation bundle is
        /// signed by the keys it replaces, so it verifies again at the next start under those.
        var bundleTrustedKeys: [String]?
        /// How many of ``bundleTrustedKeys`` must sign.
        var bundleThreshold: Int?
        /// The SHA-256 of the signed payload accepted at ``highestVersion`` (nil in files written before it was
        /// kept): another payload at that version is refused (`version_reused`).
        var highestVersionPayloadSHA256: String?

        init(
            highestVersion: UInt64,
            highestVersionPayloadSHA256: String?,
            trustedKeys: PolicyTrustedKeys,
            bundleVerifiedWith: PolicyTrustedKeys
        ) {
            self.highestVersion = highestVersion
            self.highestVersionPayloadSHA256 = highestVersionPayloadSHA256
            self.trustedKeys = trustedKeys.keys.map(\.line)
            self.threshold = trustedKeys.threshold
            if bundleVerifiedWith != trustedKeys {
                self.bundleTrustedKeys = bundleVerifiedWith.keys.map(\.line)
                self.bundleThreshold = bundleVerifiedWith.threshold
            }
        }

        /// The trusted keys, or nil when the lines do not make a trusted-key set.
        var keys: PolicyTrustedKeys? { Self.keys(self.trustedKeys, threshold: self.threshold) }

        /// The keys the stored bundle was verified with, when they differ from ``keys``.
        var bundleKeys: PolicyTrustedKeys? {
            guard let lines = self.bundleTrustedKeys, let threshold = self.bundleThreshold else { return nil }
            return Self.keys(lines, threshold: threshold)
        }

        private static func keys(_ lines: [String], threshold: Int) -> PolicyTrustedKeys? {
            var keys: [PolicyPublicKey] = []
            for line in lines {
                guard let key = try? PolicyPublicKey(line: line) else { return nil }
                keys.append(key)
            }
            return try? PolicyTrustedKeys(keys: keys, threshold: threshold)
        }
    }

    let directory: String

    var bundlePath: String { self.directory + "/" + Self.bundleName }
    var statePath: String { self.directory + "/" + Self.stateName }

    /// The stored bundle's bytes (at most `maximumSize` + 1 of them, enough for the verifier to refuse a larger
    /// one), or nil when there is none.
    func readBundle(maximumSize: Int) -> [UInt8]? {
        guard let handle = FileHandle(forReadingAtPath: self.bundlePath) else { return nil }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: maximumSize + 1)).map { Array($0 ?? Data()) }
    }

    /// The stored state, or nil when there is none or it cannot be read.
    func readState() -> State? {
        guard let data = FileManager.default.contents(atPath: self.statePath),
            let state = try? JSONDecoder().decode(State.self, from: data), state.format == Self.stateFormat
        else { return nil }
        return state
    }

    /// Stores `bundle`, then `state`; see the type's description.
    func write(bundle: [UInt8], state: State, fault: Fault?) throws(WriteError) {
        do {
            try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        } catch {
            throw WriteError(description: "could not create the directory \(self.directory)")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let stateBytes = try? encoder.encode(state) else {
            throw WriteError(description: "the updater's state could not be encoded")
        }
        // The bundle in force now, put back if the state cannot be written after the new bundle (a full disk): a
        // bundle refused as storage_failed must not be the one the next start applies.
        let previous = FileManager.default.contents(atPath: self.bundlePath).map(Array.init)
        try self.writeAtomically(bundle, name: Self.bundleName, fault: fault == .stateWriteFails ? nil : fault)
        do throws(WriteError) {
            if fault == .stateWriteFails { throw WriteError(description: "writing the state failed (simulated)") }
            try self.writeAtomically(Array(stateBytes), name: Self.stateName, fault: nil)
        } catch {
            if let previous {
                try? self.writeAtomically(previous, name: Self.bundleName, fault: nil)
            } else {
                unlink(self.bundlePath)
            }
            throw error
        }
    }

    /// Runs `body` holding an exclusive `flock` on `policy-updater.lock` in the directory, so that updaters of one
    /// directory in several processes read and write its state one at a time. When the lock file cannot be made
    /// (no directory yet, a read-only file system), `body` runs without it: the storage's writes then fail on their
    /// own.
    func withDirectoryLock<T>(_ body: () -> T) -> T {
        try? FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        let descriptor = open(self.directory + "/" + Self.lockName, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return body() }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
        defer { flock(descriptor, LOCK_UN) }
        return body()
    }

    /// Removes temporary files a crash left behind; returns how many.
    @discardableResult
    func removeTemporaryFiles() -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: self.directory)) ?? []
        var removed = 0
        for name in names
        where name.hasPrefix(".") && name.contains(".tmp-")
            && (name.hasPrefix("." + Self.bundleName) || name.hasPrefix("." + Self.stateName))
        {
            if unlink(self.directory + "/" + name) == 0 { removed += 1 }
        }
        return removed
    }

    /// Writes `bytes` to a temporary file next to `name`, syncs it, renames it to `name`, syncs the directory.
    private func writeAtomically(_ bytes: [UInt8], name: String, fault: Fault?) throws(WriteError) {
        let path = self.directory + "/" + name
        let temporary = self.directory + "/." + name + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.failure("create", temporary) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                systemWrite(descriptor, buffer.baseAddress! + written, buffer.count - written)
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let error = Self.failure("write", temporary)
                close(descriptor)
                unlink(temporary)
                throw error
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            let error = Self.failure("sync", temporary)
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        if fault == .stopAfterTemporaryFileSynced {
            throw WriteError(description: "stopped after syncing \(temporary) (a simulated crash)")
        }
        guard rename(temporary, path) == 0 else {
            let error = Self.failure("rename", temporary)
            unlink(temporary)
            throw error
        }
        let directoryDescriptor = open(self.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryDescriptor >= 0 else { throw Self.failure("open", self.directory) }
        defer { close(directoryDescriptor) }
        guard fsync(directoryDescriptor) == 0 else { throw Self.failure("sync", self.directory) }
    }

    private static func failure(_ what: String, _ path: String) -> WriteError {
        WriteError(description: "could not \(what) \(path): \(Connector.words(errno: errno))")
    }
}

/// The C library's `write(2)` (the name `write` is taken by the storage's own method).
private func systemWrite(_ descriptor: CInt, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(descriptor, bytes, count)
    #elseif canImport(Musl)
    Musl.write(descriptor, bytes, count)
    #else
    Darwin.write(descriptor, bytes, count)
    #endif
}
