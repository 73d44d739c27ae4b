import Testing

// The tags that decide which `swift test` process of scripts/test runs a suite (scripts/test-suites reads them from
// the sources). A suite without one of these tags runs in the shared in-process run.
extension Tag {
    /// The suite starts other programs (curl, nginx, openssl, mitmproxy, the bulwark executable). Such suites run in
    /// a process of their own, so no file descriptor of a child can be closed or reused under an in-process client
    /// test. `ProcessRunner` records an issue when a test without this tag starts a program.
    @Tag public static var externalPeers: Self

    /// The suite bounds a duration on the wall clock (a timeout must end a request within N seconds). Such suites run
    /// in a process of their own, so CPU-heavy suites cannot stretch their clocks.
    @Tag public static var timing: Self

    /// The fault-injection soak: it counts the process's file descriptors before and after, so it runs alone.
    @Tag public static var soak: Self

    /// The output encoders, run a second time with their vector kernels turned off (`BULWARK_VECTOR_ENCODING=scalar`).
    @Tag public static var encoders: Self

    /// The suite computes for tens of seconds without suspending (a million-entry revocation list in a debug build).
    /// Such suites run in a process of their own: in the shared run each holds one of the cooperative pool's threads
    /// (two on a 2-core machine) for that long, and two of them at once stall every async test there.
    @Tag public static var compute: Self

    /// The suite starts programs that take the machine for seconds (SwiftPM resolving a package: 21 clones and their
    /// manifests compiled; about 70 `bulwark` processes). It carries `.externalPeers` too, and runs after the other
    /// external-program suites, in a process of its own: beside them, on a clean CI run, a revocation fetch through
    /// squid overran its 4 s budget.
    @Tag public static var alone: Self
}
