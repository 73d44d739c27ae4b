import ArgumentParser
import Bulwark
import BulwarkPolicy
import Foundation
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#endif

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch a URL under a trust policy.",
        discussion: """
            The policy covers only the URL's host: default chain and host validation against the system roots \
            plus any --ca files, or public-key pinning with --pin. The body goes to standard output or to \
            --output; the status line, the verified chain and a progress line for long downloads go to standard \
            error. Redirects are followed under Bulwark's redirect policy (the URL's host only, https only, no port \
            change, at most --max-redirects hops); each hop and its verdict is printed on standard error. \
            curl's names work where the meaning is the same (--cacert, --pinnedpubkey, -x, -E, -X, -d, -I, -i, \
            -s, -v, -f, -L); -k/--insecure is refused. \
            \(FailureExit.help) A refused redirect exits with 8; --fail on an HTTP status of 400 or more exits \
            with 22; an output that cannot be written (its reader went away) with 23, as curl.
            """
    )

    @Argument(help: "The https URL to fetch.")
    var url: String

    @OptionGroup var policy: PolicyOptions

    @Option(help: RevocationOption.help)
    var revocation: RevocationOption = .off

    @Option(
        name: .customLong("allow-host"),
        help:
            "Only send requests (and follow redirects) to hosts matching these patterns (example.com, *.example.com, **.example.com)."
    )
    var allowedHosts: [String] = []

    @OptionGroup var eventLog: EventLogOptions

    @OptionGroup var proxyOptions: ProxyOptions

    @OptionGroup(title: "curl's options") var curl: CurlOptions

    @Option(name: [.customShort("H"), .customLong("header")], help: "A request header, \"Name: value\".")
    var headers: [String] = []

    @Option(
        help: ArgumentHelp(
            "Send the bearer token in this file (trailing newlines removed) as Authorization, only to URLs in --credential-scope.",
            discussion:
                "The token never appears on the command line, in output or in errors; it is kept in locked, zeroized memory until sent.",
            valueName: "path"
        )
    )
    var bearerTokenFile: String?

    @Option(
        help: ArgumentHelp(
            "The base URL the bearer token may be sent under (default: the fetched URL's origin). Redirect hops outside it go without the token.",
            valueName: "url"
        )
    )
    var credentialScope: String?

    @Option(name: [.customShort("o"), .long], help: "Write the body to this file.")
    var output: String?

    @Option(name: [.customShort("m"), .long], help: "Give up after this many seconds.")
    var maxTime: Double = 60

    @Option(
        name: [.customLong("max-redirects"), .customLong("max-redirs")],
        help: "Follow at most this many redirects (0: none)."
    )
    var maxRedirects: Int = 5

    /// The exit status of a refused redirect.
    static let redirectRefusedExit: Int32 = 8

    func run() async throws {
        do {
            try await self.fetch()
        } catch let error as ValidationError {
            throw error
        } catch let error as ExitCode {
            throw error
        } catch let error as OutputWriteError {
            printError("bulwark fetch: \(error)")
            throw ExitCode(OutputWriteError.exitStatus)
        } catch let error as BulwarkError where error.code == .redirectRefused {
            Self.printRedirects(error.redirects)
            printError("bulwark fetch: \(error)")
            throw ExitCode(Self.redirectRefusedExit)
        } catch {
            printError("bulwark fetch: \(error)")
            throw ExitCode(FailureExit.code(for: error))
        }
    }

    func validate() throws {
        guard self.maxTime.isFinite, self.maxTime > 0, self.maxTime <= 31_536_000 else {
            throw ValidationError(
                "-m/--max-time takes a number of seconds above 0 (at most a year), got \(self.maxTime)"
            )
        }
    }

    private func fetch() async throws {
        OutputWriteError.ignoreBrokenPipes()
        var headers = try self.requestHeaders()
        self.curl.addHeaders(to: &headers)
        let body = try self.curl.body()
        let request = BulwarkRequest(
            url: self.url,
            method: self.curl.requestMethod,
            headers: headers,
            body: body.map { .bytes($0) }
        )
        if URL(string: self.url) == nil {
            // Text that is not a URL: the client's own invalid_url error says so, before any policy is read.
            let client = BulwarkClient(configuration: .init(trust: ServerTrustManager(patterns: [])))
            defer { Task { await client.shutdown() } }
            _ = try await client.execute(request)
        }
        guard let host = request.url.host else { throw ValidationError("\"\(self.url)\" has no host") }
        var configuration = try self.policy.configuration(host: host, revocation: self.revocation)
        if !self.allowedHosts.isEmpty {
            configuration.allowlist = try HostAllowlist(patterns: self.allowedHosts)
        }
        var monitors: [any EventMonitor] = []
        if let monitor = try self.eventLog.monitor() { monitors.append(monitor) }
        if self.curl.verbose { monitors.append(VerboseEventMonitor()) }
        if monitors.count == 1 {
            configuration.eventMonitor = monitors[0]
        } else if monitors.count > 1 {
            configuration.eventMonitor = CompositeEventMonitor(monitors)
        }
        guard self.maxRedirects >= 0 else { throw ValidationError("--max-redirects must be 0 or more") }
        configuration.credentials = try self.credentialStore(for: request.url)
        configuration.redirects.maximumHops = self.maxRedirects
        // A policy file's proxy section stands unless --proxy is given; without one, the environment's (as curl).
        let policySetsProxy = try self.policy.setsProxy()
        try self.proxyOptions.apply(to: &configuration.proxy, policySetsProxy: policySetsProxy)
        let client = BulwarkClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        // The pins -v names and marks, read once (a --pinnedpubkey file is read again for nothing else).
        let verbosePins = self.curl.verbose && self.policy.policyFile == nil ? try self.policy.allPins() : []
        if self.curl.verbose { self.printVerboseRequest(request, pins: verbosePins) }
        let response = try await client.execute(request, timeout: .milliseconds(Int64(self.maxTime * 1000)))
        let quiet = self.curl.silent && !self.curl.verbose
        if !quiet {
            Self.printRedirects(response.redirects)
            printError(
                "\(response.httpVersion.alpnIdentifier) \(response.status.code) \(response.status.reasonPhrase)"
            )
            if let trusted = response.serverTrust?.trustedChain {
                printError("trusted; verified chain:")
                let pins = Set(verbosePins)
                for certificate in trusted.certificates {
                    let summary = CertificateSummary(certificate)
                    let matched = pins.contains(summary.publicKeyPin.description) ? "  (matches a pin)" : ""
                    printError("  \(summary.pinLine)\(matched)")
                }
            }
        }
        // Security notices (an unknown revocation status, a report-only violation) are printed even with -s; the pin
        // that matched is news, not a warning, and -s keeps standard error empty for a pinned fetch that succeeds.
        for notice in response.serverTrust?.trustedChain?.notices ?? [] where !(quiet && notice.code == "pin_matched") {
            printError("notice: \(notice)")
        }
        if self.curl.verbose { Self.printVerboseResponse(response) }
        if self.curl.fail, response.status.code >= 400 {
            printError(
                "bulwark fetch: the server answered \(response.status.code) \(response.status.reasonPhrase) "
                    + "(--fail: no body written)"
            )
            throw ExitCode(CurlOptions.httpErrorExit)
        }
        let total = response.headers.first(name: "content-length").flatMap(Int.init)
        let sink: FileHandle
        if let output {
            // Opened and truncated in place, as curl does: creating it anew (a file written aside and renamed over
            // the path) would replace a link, a pipe or a device such as /dev/null with a regular file.
            let descriptor = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw ValidationError("-o/--output: cannot open \(output): \(String(cString: strerror(errno)))")
            }
            sink = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        } else {
            sink = FileHandle.standardOutput
        }
        let destination = self.output ?? "standard output"
        if self.curl.include || self.curl.head {
            try OutputWriteError.write(Data(Self.headerBlock(response).utf8), to: sink, destination: destination)
        }
        var progress = Progress(total: total, enabled: self.output != nil && !self.curl.silent)
        for try await buffer in response.body {
            try OutputWriteError.write(Data(buffer.readableBytesView), to: sink, destination: destination)
            progress.advance(by: buffer.readableBytes)
        }
        progress.finish()
        if self.output != nil { try sink.close() }
    }

    /// The status line and header fields as `-i` and `-I` print them, as curl does: `HTTP/2 200` (HTTP/1.1 adds the
    /// reason phrase), the fields as received, a blank line; CRLF line ends.
    static func headerBlock(_ response: BulwarkResponse) -> String {
        var text = "\(response.httpVersion) \(response.status.code)"
        if response.httpVersion.major < 2 { text += " \(response.status.reasonPhrase)" }
        text += "\r\n"
        for (name, value) in response.headers { text += "\(name): \(value)\r\n" }
        return text + "\r\n"
    }

    /// `-v`: the pins or the policy file, then the request as given on one `> ` line on standard error: the method,
    /// the URL without query, the header fields (credentials as `<redacted>`) and the body's size. What the policy
    /// decides follows as `* ` lines.
    private func printVerboseRequest(_ request: BulwarkRequest, pins: [String]) {
        if let policyFile = self.policy.policyFile {
            printError("* policy file: \(policyFile)")
        } else if !pins.isEmpty {
            printError("* pins: \(pins.joined(separator: ", "))")
        }
        printError("> \(request)")
    }

    /// `-v`: the response's status line and header fields as `< ` lines on standard error (credentials as
    /// `<redacted>`), and the negotiated protocol.
    private static func printVerboseResponse(_ response: BulwarkResponse) {
        if let trust = response.serverTrust {
            for (index, certificate) in trust.presentedChain.enumerated() {
                printError("* presented [\(index)] \(certificate.subject), issued by \(certificate.issuer)")
            }
            printError("* ALPN: \(trust.applicationProtocol)")
        }
        printError("< \(response.httpVersion) \(response.status.code) \(response.status.reasonPhrase)")
        for (name, value) in response.headers {
            printError("< \(name): \(HeaderField.isRedacted(name: name) ? "<redacted>" : value)")
        }
    }

    /// One line per redirect on standard error: `redirect N: STATUS FROM -> METHOD TO: follow`, or the refusal's
    /// reason and sentence. URLs are shown without queries.
    static func printRedirects(_ redirects: [RedirectRecord]) {
        for (index, record) in redirects.enumerated() {
            printError("redirect \(index + 1): \(record)")
        }
    }

    /// The store for `--bearer-token-file`, scoped by `--credential-scope` or the URL's origin; nil without a token.
    private func credentialStore(for url: URL) throws -> CredentialStore? {
        guard let path = self.bearerTokenFile else {
            guard self.credentialScope == nil else {
                throw ValidationError("--credential-scope needs --bearer-token-file")
            }
            return nil
        }
        let scope: CredentialScope
        do {
            if let base = self.credentialScope {
                scope = try .under(base)
            } else {
                var origin = URLComponents()
                origin.scheme = url.scheme
                origin.host = url.host
                origin.port = url.port
                origin.path = "/"
                scope = try .under(origin.string ?? "")
            }
        } catch {
            throw ValidationError("--credential-scope: \(error)")
        }
        let credential: Credential
        do {
            credential = try .bearer(try SecretBytes(contentsOfFile: path))
        } catch let error as SecretBytesError {
            throw ValidationError("--bearer-token-file: \(error)")
        } catch {
            throw ValidationError("--bearer-token-file \(path): \(error)")
        }
        let store = CredentialStore()
        store.add(credential, scope: scope)
        return store
    }

    private func requestHeaders() throws -> HTTPHeaders {
        var headers = HTTPHeaders()
        for header in self.headers {
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                throw ValidationError("-H takes \"Name: value\", got \"\(terminalSafe(header))\"")
            }
            let name = String(header[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            guard HTTPToken.isToken(name) else {
                throw ValidationError("-H: \"\(terminalSafe(name))\" is not a header field name")
            }
            guard !CurlOptions.holdsControlCharacter(value) else {
                throw ValidationError("-H: the value of \"\(name)\" holds a control character")
            }
            headers.add(name: name, value: value)
        }
        return headers
    }
}

/// A one-line progress display on standard error, redrawn at most every half second.
struct Progress {
    let total: Int?
    let enabled: Bool
    var received = 0
    let start = ContinuousClock.now
    var lastDraw = ContinuousClock.now

    init(total: Int?, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    mutating func advance(by count: Int) {
        self.received += count
        guard self.enabled, ContinuousClock.now - self.lastDraw > .milliseconds(500) else { return }
        self.lastDraw = ContinuousClock.now
        self.draw(end: "\r")
    }

    func finish() {
        if self.enabled { self.draw(end: "\n") }
    }

    private func draw(end: String) {
        let elapsed = ContinuousClock.now - self.start
        let seconds = max(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, 0.001)
        let mib = Double(self.received) / 1_048_576
        let of = self.total.map { String(format: " / %.1f MiB", Double($0) / 1_048_576) } ?? ""
        try? FileHandle.standardError.write(
            contentsOf: Data(String(format: "  %.1f MiB%@  %.1f MiB/s%@", mib, of, mib / seconds, end).utf8)
        )
    }
}

/// `-v`: each security event as `* ` lines on standard error, as it happens. Events never carry secrets.
struct VerboseEventMonitor: EventMonitor {
    func record(_ event: SecurityEvent) {
        let lines = String(describing: event).split(separator: "\n", omittingEmptySubsequences: false)
        printError(lines.map { "* " + $0 }.joined(separator: "\n"))
    }
}
