import Foundation

/// A shareable, wipeable holder of a ``SecretBytes``: a reference type, so it can be stored in copyable values,
/// captured in closures and passed between tasks, where a non-copyable secret cannot go.
///
/// ``wipe()`` destroys the secret at once (zeroizing it) for every holder of the box; so does releasing the last
/// reference. The box prints and reflects as `<redacted>`, without children, so `print`, `dump`, `Mirror` and string
/// interpolation of the box or of anything that holds it cannot show the bytes.
public final class SecretBox: @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    // @unchecked Sendable: the secret is only touched under `lock`.
    private let lock = NSLock()
    private var secret: SecretBytes?

    /// A box that owns `secret`.
    public init(_ secret: consuming SecretBytes) {
        self.secret = .some(secret)
    }

    /// Calls `body` with the secret bytes, or returns nil without calling it if the box was wiped.
    ///
    /// The box is locked while `body` runs, so a concurrent ``wipe()`` waits for it; `body` must not call back into
    /// the box. The pointer must not escape `body`.
    public func withUnsafeBytes<Result, E: Error>(
        _ body: (UnsafeRawBufferPointer) throws(E) -> Result
    ) throws(E) -> Result? {
        self.lock.lock()
        defer { self.lock.unlock() }
        switch self.secret {
        case .some(let secret):
            // A borrow, not a copy: SecretBytes cannot be copied.
            return try secret.withUnsafeBytes(body)
        case .none:
            return nil
        }
    }

    /// Destroys the secret now: its memory is zeroized, unlocked and freed. Later reads return nil.
    public func wipe() {
        self.lock.lock()
        let secret = self.secret.take()
        self.lock.unlock()
        _ = consume secret
    }

    /// Whether the box was wiped.
    public var isWiped: Bool {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.secret == nil
    }

    /// Whether the box holds a secret equal to `other`, compared in constant time; false once wiped.
    public func isEqual(to other: borrowing SecretBytes) -> Bool {
        self.withUnsafeBytes { other.isEqual(to: $0) } ?? false
    }

    /// `<redacted>`, or `<wiped>` once wiped.
    public var description: String { self.isWiped ? "<wiped>" : "<redacted>" }

    /// Same as ``description``.
    public var debugDescription: String { self.description }

    /// A mirror with no children: reflection shows nothing of the secret.
    public var customMirror: Mirror {
        Mirror(self, children: [], displayStyle: .class)
    }
}
