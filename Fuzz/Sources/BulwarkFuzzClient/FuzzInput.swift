import Foundation

// A copy of BulwarkFuzzPolicy's FuzzInput.swift (each executable is one module).

/// Reads structured choices from the front of a fuzz input; the rest is the text or bytes under test.
struct FuzzInput {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The next byte, or 0 when the input is used up.
    mutating func byte() -> UInt8 {
        guard self.offset < self.bytes.count else { return 0 }
        defer { self.offset += 1 }
        return self.bytes[self.offset]
    }

    /// One of `choices`, picked by the next byte.
    mutating func pick<T>(_ choices: [T]) -> T {
        choices[Int(self.byte()) % choices.count]
    }

    /// Everything not read yet.
    var rest: ArraySlice<UInt8> {
        self.bytes[min(self.offset, self.bytes.count)...]
    }

    /// Everything not read yet as text (invalid UTF-8 becomes U+FFFD, as a header decoder would make it).
    var restText: String {
        String(decoding: self.rest, as: UTF8.self)
    }
}

/// Stops the fuzzer: a property the code promises does not hold. libFuzzer saves the input as a crash.
func violated(_ property: String, _ detail: @autoclosure () -> String) -> Never {
    fatalError("oracle violated: \(property): \(detail())")
}

/// `BULWARK_FUZZ_TRACE=1` prints what each input led to (run it on the seeds with `-runs=0` to see that the
/// oracles are reached: responses, bodies, errors).
let tracing = ProcessInfo.processInfo.environment["BULWARK_FUZZ_TRACE"] == "1"

func trace(_ text: @autoclosure () -> String) {
    if tracing { print("trace:", text()) }
}
