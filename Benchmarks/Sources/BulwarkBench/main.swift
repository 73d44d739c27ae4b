import Foundation

// BulwarkBench: Bulwark against AsyncHTTPClient on one local TLS server. See BENCHMARKS.md and scripts/bench.
// The instruction-counting modes run before the first `await`, with the main thread blocked (see InstructionCount).
InstructionCount.runIfRequested(CommandLine.arguments)
KeepAliveInstructionCount.runIfRequested(CommandLine.arguments)
do {
    let options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
    if let kind = options.profileTrust {
        try await TrustProfile.run(kind: kind, iterations: options.profileIterations)
    } else if options.childFirstRequest != nil {
        try await FirstRequest.runChild(options)
    } else if options.childMemory != nil {
        try await MemoryChild.run(options)
    } else if options.childDownload != nil || options.childUpload != nil {
        try await ChildDownload.run(options)
    } else {
        try await Bench.run(options)
    }
} catch {
    FileHandle.standardError.write(Data("BulwarkBench: \(error)\n".utf8))
    exit(1)
}
