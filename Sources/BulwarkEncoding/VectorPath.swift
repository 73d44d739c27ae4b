import CBulwarkVector
import Foundation

/// How the output encoders write the hexadecimal escapes of a table (`&#xHH;`, `%HH`, `\xHH`): with one of the
/// vector kernels of `CBulwarkVector` (see ``HexEscapeKernel``), or with the Swift engine alone. Every path gives the
/// same bytes.
///
/// The encoders use ``selected``: the fastest path this processor has, unless the environment says otherwise when the
/// process first encodes:
/// - `BULWARK_NO_VECTOR_ENCODING=1` leaves out the AVX-512 VBMI kernel, and the next fastest path (AVX2, SSE2) is
///   used;
/// - `BULWARK_VECTOR_ENCODING=avx512|avx2|sse2|neon|scalar` uses the path named, or, if the processor does not have
///   it, the fastest one below it (AVX-512 VBMI, then AVX2, then SSE2, then the Swift engine alone; NEON, then the
///   Swift engine alone). `scalar` is the Swift engine alone.
@_spi(Benchmarks)
public enum VectorPath: Int32, CaseIterable, Sendable {
    /// No kernel: the Swift engine writes every group.
    case scalar = 0
    /// x86-64's baseline: bytes classified and written through tables one at a time.
    case sse2 = 1
    /// x86-64 with AVX2: a byte shuffle and a 32-byte store for every 4 bytes of a group with an escape.
    case avx2 = 2
    /// x86-64 with AVX-512 VBMI: a byte permutation and a 64-byte store for every 8 bytes of a group with an escape.
    case avx512 = 3
    /// arm64: three 64-byte table lookups and three 16-byte stores for every 8 bytes of a group with an escape.
    case neon = 4

    /// The path the encoders use in this process (see above).
    public static let selected: VectorPath = Self.choose(environment: ProcessInfo.processInfo.environment)

    /// Whether this processor can run the path.
    public var isSupported: Bool { bulwark_vector_supported(self.rawValue) }

    /// The path's name, as `BULWARK_VECTOR_ENCODING` takes it.
    public var name: String {
        switch self {
        case .scalar: return "scalar"
        case .sse2: return "sse2"
        case .avx2: return "avx2"
        case .avx512: return "avx512"
        case .neon: return "neon"
        }
    }

    /// The next slower path, or nil for ``scalar``.
    var fallback: VectorPath? {
        switch self {
        case .scalar: return nil
        case .sse2, .neon: return .scalar
        case .avx2: return .sse2
        case .avx512: return .avx2
        }
    }

    /// `self` if the processor has it, otherwise the fastest path below it that it has.
    var supportedOrBelow: VectorPath {
        var path = self
        while !path.isSupported, let next = path.fallback { path = next }
        return path
    }

    /// The path the encoders would use with `environment` (see above).
    public static func choose(environment: [String: String]) -> VectorPath {
        if let name = environment["BULWARK_VECTOR_ENCODING"],
            let named = Self.allCases.first(where: { $0.name == name })
        {
            return named.supportedOrBelow
        }
        let fastest: VectorPath = environment["BULWARK_NO_VECTOR_ENCODING"] == "1" ? .avx2 : .avx512
        return bulwark_vector_supported(VectorPath.neon.rawValue) ? .neon : fastest.supportedOrBelow
    }
}
