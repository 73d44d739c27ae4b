import Foundation

/// The ``HexEscapeKernel`` of one table on each ``VectorPath``: the one of ``VectorPath/selected``, made with the
/// table, and the others made the first time they are asked for (by tests and benchmarks), so that a process holds
/// only the tables of the path it uses.
final class HexEscapeKernels: @unchecked Sendable {
    /// What the kernels write, or nil if the table has no kernel.
    let shape: HexEscapeShape?
    /// The kernel of ``VectorPath/selected``, or nil (the Swift engine alone, or no kernel for the table).
    let selected: HexEscapeKernel?
    private let lock = NSLock()
    /// The kernels of the other paths made so far (nil: the path has none here); guarded by `lock`.
    private var others: [VectorPath: HexEscapeKernel?] = [:]

    init(shape: HexEscapeShape?) {
        self.shape = shape
        self.selected = shape.flatMap { HexEscapeKernel(shape: $0, path: .selected) }
    }

    /// The kernel for `path`, or nil if there is none (the path is ``VectorPath/scalar``, the processor cannot run
    /// it, or the table has no kernel).
    func kernel(for path: VectorPath) -> HexEscapeKernel? {
        if path == .selected { return self.selected }
        guard let shape = self.shape else { return nil }
        self.lock.lock()
        defer { self.lock.unlock() }
        if let made = self.others[path] { return made }
        let made = HexEscapeKernel(shape: shape, path: path)
        self.others[path] = made
        return made
    }
}
