#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Counts how many secrets use each memory page, so that a page is locked (`mlock`) when the first secret on it
/// arrives and unlocked (`munlock`) only when the last one leaves.
///
/// Page locks do not nest: one `munlock` unlocks a page however many `mlock` calls locked it. Secrets are small and
/// share pages with each other and with ordinary allocations, so unlocking a page on each release would silently
/// unlock the neighbours. On Linux the pages are also excluded from core dumps (`MADV_DONTDUMP`) while locked.
final class PageLockRegistry: @unchecked Sendable {
    /// The registry of the process.
    static let shared = PageLockRegistry()

    private let lock = NSLock()
    /// The number of locked secrets on each locked page, by page address.
    private var users: [UInt: Int] = [:]
    private let pageSize: UInt

    /// A registry of its own; the process uses ``shared``.
    init() {
        let size = sysconf(Int32(_SC_PAGESIZE))
        self.pageSize = size > 0 ? UInt(size) : 4096
    }

    /// The addresses of the pages `count` bytes at `start` touch.
    private func pages(_ start: UnsafeMutableRawPointer, count: Int) -> StrideThrough<UInt> {
        let first = UInt(bitPattern: start) & ~(self.pageSize - 1)
        let last = (UInt(bitPattern: start) + UInt(count) - 1) & ~(self.pageSize - 1)
        return stride(from: first, through: last, by: Int(self.pageSize))
    }

    /// Locks the pages under `count` bytes at `start`.
    ///
    /// - Returns: Whether every page is locked; on failure no page is left locked on this buffer's behalf.
    func lock(_ start: UnsafeMutableRawPointer, count: Int) -> Bool {
        self.lock.lock()
        defer { self.lock.unlock() }
        var newlyLocked: [UInt] = []
        for page in self.pages(start, count: count) where self.users[page] == nil {
            guard let address = UnsafeMutableRawPointer(bitPattern: page),
                mlock(address, Int(self.pageSize)) == 0
            else {
                for locked in newlyLocked {
                    self.release(page: locked)
                }
                return false
            }
            #if os(Linux)
            _ = madvise(address, Int(self.pageSize), MADV_DONTDUMP)
            #endif
            newlyLocked.append(page)
        }
        for page in self.pages(start, count: count) {
            self.users[page, default: 0] += 1
        }
        return true
    }

    /// Releases the pages under `count` bytes at `start`, which ``lock(_:count:)`` locked: a page no other secret
    /// uses is unlocked.
    func unlock(_ start: UnsafeMutableRawPointer, count: Int) {
        self.lock.lock()
        defer { self.lock.unlock() }
        for page in self.pages(start, count: count) {
            guard let users = self.users[page] else { continue }
            if users > 1 {
                self.users[page] = users - 1
            } else {
                self.users[page] = nil
                self.release(page: page)
            }
        }
    }

    /// The number of pages locked on behalf of secrets (for tests).
    var lockedPageCount: Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.users.count
    }

    private func release(page: UInt) {
        guard let address = UnsafeMutableRawPointer(bitPattern: page) else { return }
        #if os(Linux)
        _ = madvise(address, Int(self.pageSize), MADV_DODUMP)
        #endif
        _ = munlock(address, Int(self.pageSize))
    }
}
