import CFuzzDriver
import Foundation

/// The fuzz targets of this executable, by the name `scripts/fuzz` passes in `BULWARK_FUZZ_TARGET`.
let fuzzTargets: [String: @Sendable (FuzzInput) -> Void] = [
    "redirects": RedirectsTarget.run,
    "hosts": HostsTarget.run,
    "cookies": CookiesTarget.run,
    "certificates": CertificatesTarget.run,
    "event-log": EventLogTarget.run,
    "crl": CRLTarget.run,
    "ocsp": OCSPTarget.run,
    "encoders": EncodersTarget.run,
    "sct": SCTTarget.run,
]

/// The target chosen at start-up; read by the libFuzzer callback, which cannot capture context.
nonisolated(unsafe) var selectedTarget: (@Sendable (FuzzInput) -> Void)?

/// libFuzzer's callback: one input, run through the selected target. Always returns 0 (keep the input). The
/// exported name is required: `-sanitize=fuzzer` links libFuzzer whole, and its own `main` refers to it.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    selectedTarget?(FuzzInput(bytes))
    return 0
}

/// SwiftPM links an executable with `main` aliased to `<Module>_main`; with `-sanitize=fuzzer` this keeps the entry
/// ours, so the target can be chosen before libFuzzer reads its own flags.
@_cdecl("BulwarkFuzzPolicy_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let name = ProcessInfo.processInfo.environment["BULWARK_FUZZ_TARGET"] ?? ""
    guard let target = fuzzTargets[name] else {
        let names = fuzzTargets.keys.sorted().joined(separator: ", ")
        FileHandle.standardError.write(Data("set BULWARK_FUZZ_TARGET to one of: \(names)\n".utf8))
        return 2
    }
    selectedTarget = target
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzOne(data, size) }
}
