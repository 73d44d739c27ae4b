import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Counts how many secrets use each memory page, so that a page is locked (`mlock`) and excluded from core dumps
/// (`MADV_DONTDUMP`, Linux) when the first secret on it arrives, and unlocked and included again only when the last
/// one leaves.
///
/// Page locks do not nest: one `munlock` unlocks a page however many `mlock` calls locked it. Secrets are small and
/// share pages with each other and with ordinary allocations, so unlocking a page on each release would silently
/// unlock the neighbours.
///
/// The two protections are independent: a page is excluded from core dumps whether or not `mlock` succeeds (it fails
/// when the process is over its `RLIMIT_MEMLOCK`), and a page whose lock failed is tried again when the next secret
/// arrives on it.
final class PageLockRegistry: @unchecked Sendable {
    // @unchecked Sendable: all mutable state is guarded by `lock`.

    /// The system calls the registry makes, replaceable so that tests can make `mlock` fail (it never fails for
    /// root, and a lowered `RLIMIT_MEMLOCK` would fail every other test's secrets as well).
    struct SystemCalls: Sendable {
        /// Locks pages (`mlock`): returns 0, or the `errno` value of the failure.
        var lockPages: @Sendable (UnsafeMutableRawPointer, Int) -> Int32
        /// Unlocks pages (`munlock`).
        var unlockPages: @Sendable (UnsafeMutableRawPointer, Int) -> Void
        /// Excludes pages from core dumps (true: `MADV_DONTDUMP`) or includes them again (false: `MADV_DODUMP`).
        /// Linux only; elsewhere nothing.
        var excludeFromCoreDumps: @Sendable (UnsafeMutableRawPointer, Int, Bool) -> Void

        /// The real calls.
        static let live = SystemCalls(
            lockPages: { address, length in mlock(address, length) == 0 ? 0 : errno },
            unlockPages: { address, length in _ = munlock(address, length) },
            excludeFromCoreDumps: { address, length, exclude in
                #if os(Linux)
                _ = madvise(address, length, exclude ? MADV_DONTDUMP : MADV_DODUMP)
                #endif
            }
        )
    }

    /// What ``lock(_:count:)`` achieved for one buffer.
    struct LockOutcome: Hashable, Sendable {
        /// Whether every page under the buffer is locked.
        var isLocked: Bool
        /// The `errno` value of the first `mlock` that failed, if one did.
        var systemError: Int32?
    }

    /// One page in use by secrets.
    private struct Page {
        /// The number of registered secrets on the page.
        var users: Int
        /// Whether `mlock` succeeded for the page.
        var isLocked: Bool
    }

    /// The registry of the process.
    static let shared = PageLockRegistry()

    private let lock = NSLock()
    /// The pages in use by secrets, by page address.
    private var pagesInUse: [UInt: Page] = [:]
    private var systemCalls: SystemCalls
    private let pageSize: UInt

    /// A registry of its own; the process uses ``shared``.
    init(systemCalls: SystemCalls = .live) {
        let size = sysconf(Int32(_SC_PAGESIZE))
        self.pageSize = size > 0 ? UInt(size) : 4096
        self.systemCalls = systemCalls
    }

    /// The addresses of the pages `count` bytes at `start` touch.
    private func pages(_ start: UnsafeMutableRawPointer, count: Int) -> StrideThrough<UInt> {
        let first = UInt(bitPattern: start) & ~(self.pageSize - 1)
        let last = (UInt(bitPattern: start) + UInt(count) - 1) & ~(self.pageSize - 1)
        return stride(from: first, through: last, by: Int(self.pageSize))
    }

    /// Registers a secret's buffer of `count` bytes at `start`: its pages are excluded from core dumps and locked.
    /// Call ``unlock(_:count:)`` for the buffer whatever the outcome: the pages stay registered (and excluded from core
    /// dumps) even when locking fails.
    func lock(_ start: UnsafeMutableRawPointer, count: Int) -> LockOutcome {
        self.lock.lock()
        defer { self.lock.unlock() }
        var outcome = LockOutcome(isLocked: true, systemError: nil)
        for page in self.pages(start, count: count) {
            guard let address = UnsafeMutableRawPointer(bitPattern: page) else { continue }
            var state = self.pagesInUse[page] ?? Page(users: 0, isLocked: false)
            if state.users == 0 {
                self.systemCalls.excludeFromCoreDumps(address, Int(self.pageSize), true)
            }
            if !state.isLocked {
                let error = self.systemCalls.lockPages(address, Int(self.pageSize))
                state.isLocked = error == 0
                if error != 0 && outcome.systemError == nil {
                    outcome.systemError = error
                }
            }
            outcome.isLocked = outcome.isLocked && state.isLocked
            state.users += 1
            self.pagesInUse[page] = state
        }
        return outcome
    }

    /// Unregisters a secret's buffer that ``lock(_:count:)`` registered: a page no other secret uses is unlocked (if
    /// it was locked) and included in core dumps again.
    func unlock(_ start: UnsafeMutableRawPointer, count: Int) {
        self.lock.lock()
        defer { self.lock.unlock() }
        for page in self.pages(start, count: count) {
            guard var state = self.pagesInUse[page] else { continue }
            state.users -= 1
            guard state.users == 0 else {
                self.pagesInUse[page] = state
                continue
            }
            self.pagesInUse[page] = nil
            guard let address = UnsafeMutableRawPointer(bitPattern: page) else { continue }
            if state.isLocked {
                self.systemCalls.unlockPages(address, Int(self.pageSize))
            }
            self.systemCalls.excludeFromCoreDumps(address, Int(self.pageSize), false)
        }
    }

    /// The number of pages locked on behalf of secrets (for tests).
    var lockedPageCount: Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.pagesInUse.values.filter(\.isLocked).count
    }

    /// The number of pages in use by secrets, locked or not (for tests).
    var registeredPageCount: Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.pagesInUse.count
    }

    /// Runs `body` with `calls` in place of the registry's system calls (for tests).
    func withSystemCalls<Result>(_ calls: SystemCalls, _ body: () throws -> Result) rethrows -> Result {
        let previous = self.lock.withLock {
            defer { self.systemCalls = calls }
            return self.systemCalls
        }
        defer { self.lock.withLock { self.systemCalls = previous } }
        return try body()
    }
}
