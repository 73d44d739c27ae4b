import BulwarkTestHelpers
import Foundation
import Testing

@_spi(Benchmarks) @testable import BulwarkEncoding

// Every vector path (AVX-512 VBMI, AVX2, SSE2, NEON, the Swift engine alone) forced in-process, each held to the
// Swift engine alone and to the reference encoders byte for byte (issue 24, item 5).

@Suite("Every vector path of the encoders gives the reference's bytes", .tags(.encoders))
struct VectorPathTests {
    /// The paths this processor can run: on x86-64, the Swift engine, SSE2 and whichever of AVX2 and AVX-512 VBMI
    /// it has; on arm64, the Swift engine and NEON.
    static let paths = VectorPath.allCases.filter(\.isSupported)

    /// The encoders that take text, on a path, with their reference.
    static let textEncoders:
        [(name: String, encode: @Sendable (String, VectorPath) -> String, reference: @Sendable (String) -> String)] = [
            ("HTMLEncoder.text", { HTMLEncoder.text($0, path: $1) }, ReferenceEncoders.text),
            ("HTMLEncoder.attribute", { HTMLEncoder.attribute($0, path: $1) }, ReferenceEncoders.attribute),
            (
                "JavaScriptEncoder.stringLiteral", { JavaScriptEncoder.stringLiteral($0, path: $1) },
                ReferenceEncoders.javaScript
            ),
            (
                "URLComponentEncoder.encode", { URLComponentEncoder.encode($0, path: $1) },
                ReferenceEncoders.urlComponent
            ),
        ]

    /// The encoders that take bytes (invalid UTF-8 included), on a path, with their reference.
    static let byteEncoders:
        [(name: String, encode: @Sendable ([UInt8], VectorPath) -> String, reference: @Sendable ([UInt8]) -> String)] =
            [
                ("HTMLEncoder.text(utf8:)", { HTMLEncoder.text(utf8: $0, path: $1) }, ReferenceEncoders.text(utf8:)),
                (
                    "HTMLEncoder.attribute(utf8:)", { HTMLEncoder.attribute(utf8: $0, path: $1) },
                    ReferenceEncoders.attribute(utf8:)
                ),
                (
                    "JavaScriptEncoder.stringLiteral(utf8:)", { JavaScriptEncoder.stringLiteral(utf8: $0, path: $1) },
                    ReferenceEncoders.javaScript(utf8:)
                ),
                (
                    "URLComponentEncoder.encode(bytes:)", { URLComponentEncoder.encode(bytes: $0, path: $1) },
                    ReferenceEncoders.urlComponent(bytes:)
                ),
            ]

    /// Each encoder on `bytes` (and on them as repaired text) gives the same bytes on every path as the Swift engine
    /// alone, and the Swift engine alone gives the reference's (unless `checksReference` is false: the 1 MiB inputs,
    /// where the debug build of the reference is slow, and which the Swift engine meets in ``EncoderDifferentialTests``
    /// at the sizes that matter to it); returns how many comparisons failed, each recorded once.
    @discardableResult
    static func expectSame(
        bytes: [UInt8],
        checksReference: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Int {
        var failures = 0
        let text = String(decoding: bytes, as: UTF8.self)
        func compare(_ name: String, _ encode: (VectorPath) -> String, _ reference: () -> String) {
            let scalar = encode(.scalar)
            if checksReference && !scalar.utf8.elementsEqual(reference().utf8) {
                failures += 1
                Issue.record(
                    "\(name) on scalar differs from the reference on \(bytes.count) bytes \(bytes.prefix(64))",
                    sourceLocation: sourceLocation
                )
            }
            for path in self.paths where path != .scalar {
                if !encode(path).utf8.elementsEqual(scalar.utf8) {
                    failures += 1
                    Issue.record(
                        "\(name) on \(path.name) differs from scalar on \(bytes.count) bytes \(bytes.prefix(64))",
                        sourceLocation: sourceLocation
                    )
                }
            }
        }
        for encoder in self.byteEncoders {
            compare(encoder.name, { encoder.encode(bytes, $0) }, { encoder.reference(bytes) })
        }
        for encoder in self.textEncoders {
            compare(encoder.name, { encoder.encode(text, $0) }, { encoder.reference(text) })
        }
        return failures
    }

    @Test("the hexadecimal tables have a kernel on every vector path the processor has, and only there")
    func kernelsOnEveryPath() {
        #expect(Self.paths.contains(.scalar))
        for path in VectorPath.allCases {
            let expected = path != .scalar && path.isSupported
            #expect(HTMLEncoder.vectorKernels(on: path).attribute == expected, "attribute on \(path.name)")
            #expect(URLComponentEncoder.usesVectorKernel(on: path) == expected, "URL component on \(path.name)")
            #expect(JavaScriptEncoder.usesVectorKernel(on: path) == expected, "JavaScript on \(path.name)")
            // Named entities have no hexadecimal shape.
            #expect(HTMLEncoder.vectorKernels(on: path).text == false)
        }
        #if arch(x86_64)
        #expect(VectorPath.sse2.isSupported)
        #expect(!VectorPath.neon.isSupported)
        #if os(Linux)
        // The processor's own detection agrees with the kernel's (the flags include what the system saves).
        let flags = Set(
            ((try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? "")
                .split(separator: "\n").first { $0.hasPrefix("flags") }?.split(separator: " ").map(String.init) ?? []
        )
        #expect(VectorPath.avx2.isSupported == flags.contains("avx2"))
        let avx512 = ["avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512vbmi"].allSatisfy(flags.contains)
        #expect(VectorPath.avx512.isSupported == avx512)
        #endif
        #elseif arch(arm64)
        #expect(VectorPath.neon.isSupported)
        #expect(!VectorPath.sse2.isSupported && !VectorPath.avx2.isSupported && !VectorPath.avx512.isSupported)
        #endif
        print("vector paths here: \(Self.paths.map(\.name)); selected \(VectorPath.selected.name)")
    }

    @Test("the environment chooses the path: BULWARK_NO_VECTOR_ENCODING=1 and BULWARK_VECTOR_ENCODING")
    func environment() {
        let fastest = VectorPath.allCases.filter(\.isSupported).max { $0.rawValue < $1.rawValue }!
        #expect(VectorPath.choose(environment: [:]) == fastest)
        #expect(VectorPath.choose(environment: ["BULWARK_NO_VECTOR_ENCODING": "0"]) == fastest)
        let withoutAVX512 = VectorPath.choose(environment: ["BULWARK_NO_VECTOR_ENCODING": "1"])
        #expect(withoutAVX512 != .avx512)
        #expect(withoutAVX512 == (fastest == .avx512 ? .avx2.supportedOrBelow : fastest))
        for path in VectorPath.allCases {
            let chosen = VectorPath.choose(environment: ["BULWARK_VECTOR_ENCODING": path.name])
            #expect(chosen == (path.isSupported ? path : path.supportedOrBelow), "\(path.name)")
            #expect(chosen.isSupported)
            // The named path wins over BULWARK_NO_VECTOR_ENCODING.
            let both = VectorPath.choose(
                environment: ["BULWARK_VECTOR_ENCODING": path.name, "BULWARK_NO_VECTOR_ENCODING": "1"]
            )
            #expect(both == chosen)
        }
        #expect(VectorPath.choose(environment: ["BULWARK_VECTOR_ENCODING": "scalar"]) == .scalar)
        #expect(VectorPath.choose(environment: ["BULWARK_VECTOR_ENCODING": "bogus"]) == fastest)
        #expect(VectorPath.avx512.supportedOrBelow.rawValue <= VectorPath.avx512.rawValue)
        #expect(VectorPath.selected == VectorPath.choose(environment: ProcessInfo.processInfo.environment))
    }

    @Test("random text and bytes of every length from 0 to 300, on every path")
    func everyLength() {
        var generator = SeededGenerator(seed: 0x24_0005)
        for length in 0...300 {
            for round in 0..<4 {
                var bytes =
                    round % 2 == 0
                    ? DifferentialInputs.randomText(&generator, maximumLength: length + 8)
                    : DifferentialInputs.randomBytes(&generator, maximumLength: length + 8)
                // Exactly `length` bytes, even if that cuts a character (the byte encoders then see invalid UTF-8).
                while bytes.count < length { bytes.append(UInt8.random(in: 0x20...0x7E, using: &generator)) }
                bytes.removeLast(bytes.count - length)
                if Self.expectSame(bytes: bytes) > 0 { return }
            }
        }
    }

    @Test("every escape-relevant byte and stop at every lane of the groups around each vector width")
    func everyLane() {
        // Backgrounds dense in escapes (so the kernels write every lane) and plain (so a group has one escape).
        let backgrounds = [
            Array(String(repeating: "a <b> & \"c\" ", count: 12).utf8), Array(repeating: 0x61, count: 140),
        ]
        let pieces: [[UInt8]] = [
            [0x00], [0x01], [0x09], [0x0A], [0x0D], [0x1F], [0x20], [0x22], [0x24], [0x26], [0x27], [0x2F], [0x3C],
            [0x3D], [0x3E], [0x5C], [0x60], [0x7E], [0x7F], [0x80], [0xC3, 0xA9], [0xE2, 0x80, 0xA8],
            [0xE2, 0x80, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0xFF],
            // Near a line separator, which the AVX2 and AVX-512 kernels copy: U+2014, U+202A, U+2068, a separator
            // after another 0xE2, and a separator's first two bytes without its last.
            [0xE2, 0x80, 0x94], [0xE2, 0x80, 0xAA], [0xE2, 0x81, 0xA8], [0xE2, 0xE2, 0x80, 0xA8], [0xE2, 0x80],
        ]
        for background in backgrounds {
            for piece in pieces {
                // Offsets 0-69 cover every lane of the groups of 16, 32 and 64 bytes from the start.
                for offset in 0..<70 {
                    var bytes = background
                    bytes.replaceSubrange(offset..<offset + piece.count, with: piece)
                    if Self.expectSame(bytes: bytes) > 0 { return }
                }
            }
        }
    }

    /// The benchmark's input of 1 MiB, and random text and random bytes of 256 KiB (32 of the encoders' 8 KiB blocks;
    /// at 1 MiB they took most of a minute of a 2-core machine in each `scripts/test` run), made in one order from one
    /// seed, so that each is the same whichever is asked for.
    enum LongInput: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case benchmark, randomText, randomBytes
        var testDescription: String { self.rawValue }

        var bytes: [UInt8] {
            var generator = SeededGenerator(seed: 0x1_0000_0024)
            let snippet = "Café review: the <b>best</b> croissant & \"flat white\" in town, isn't it? 5 > 3 — été. "
            if self == .benchmark {
                return Array(String(repeating: snippet, count: (1 << 20) / snippet.utf8.count + 1).utf8)
            }
            var text: [UInt8] = []
            while text.count < 1 << 18 { text += DifferentialInputs.randomText(&generator, maximumLength: 4096) }
            if self == .randomText { return text }
            var bytes: [UInt8] = []
            while bytes.count < 1 << 18 { bytes += DifferentialInputs.randomBytes(&generator, maximumLength: 4096) }
            return bytes
        }
    }

    /// One case per input: the cases run side by side (the benchmark's computes for about half a minute in a debug
    /// build).
    @Test(
        "long inputs: the benchmark's 1 MiB, random text and random bytes of 256 KiB, on every path",
        arguments: LongInput.allCases
    )
    func longInputs(_ input: LongInput) {
        Self.expectSame(bytes: input.bytes, checksReference: false)
    }

    @Test("a group of sixteen bytes at the end of the input, in each layout, with and without escapes")
    func groupsAtTheEnd() {
        // The kernels read sixteen bytes per group and stop `lookahead` bytes before the end; the last groups and the
        // tail go through the Swift engine. Every split between them, on every path.
        for prefix in ["", "<", String(repeating: "<", count: 40), String(repeating: "a", count: 40)] {
            for count in 0..<80 {
                let body = String(repeating: "x y", count: count)
                Self.expectSame(bytes: Array((prefix + body).utf8))
                Self.expectSame(bytes: Array((prefix + body + "\u{2028}").utf8))
            }
        }
    }
}
