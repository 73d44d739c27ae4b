import ArgumentParser
import Bulwark
import Foundation
import X509

/// The options shared by commands that connect: a policy file or roots and pins, TLS version, address overrides.
struct PolicyOptions: ParsableArguments {
    @Option(
        name: .customLong("policy"),
        help: ArgumentHelp(
            "A policy file (format bulwark-policy/1) instead of --ca and --pin.",
            discussion: "Its hosts, pins, roots, revocation checks, TLS minimum, allowlist, redirect policy and client "
                + "certificates apply; --revocation is ignored (the policy says which hosts are checked), and "
                + "--tls13, --resolve and --cert/--key/--p12 still apply.",
            valueName: "file"
        )
    )
    var policyFile: String?

    @Option(name: .customLong("ca"), help: "A PEM or DER file of trust anchors, added to the system roots.")
    var caFiles: [String] = []

    @Option(
        name: .customLong("cacert"),
        help: ArgumentHelp(
            "A PEM or DER file of trust anchors that replace the system roots, as curl's --cacert.",
            discussion: "With --ca too, the anchors of both are the only roots.",
            valueName: "file"
        )
    )
    var caCertificateFiles: [String] = []

    @Option(
        name: .customLong("pin"),
        help: "A sha256/BASE64 public-key pin. Give at least two (a backup) unless --allow-single-pin."
    )
    var pins: [String] = []

    @Option(
        name: .customLong("pinnedpubkey"),
        help: ArgumentHelp(
            "curl's public-key pins: \"sha256//BASE64;sha256//BASE64\", or a PEM or DER public key file.",
            discussion: "The same pins as --pin (sha256//X is sha256/X); the chain and the host name are still "
                + "verified, and two pins (a backup) are needed unless --allow-single-pin.",
            valueName: "hashes|file"
        )
    )
    var pinnedPublicKeys: [String] = []

    @Flag(help: "Accept a single --pin (TrustKit and Bulwark refuse that by default: a key change locks you out).")
    var allowSinglePin = false

    @Flag(help: "Offer TLS 1.3 only.")
    var tls13 = false

    @Option(help: "Connect HOST:PORT to ADDR instead of resolving HOST, as curl's --resolve.")
    var resolve: [String] = []

    @Option(
        name: [.customShort("E"), .customLong("cert")],
        help: "A PEM file of the client certificate chain, leaf first (mutual TLS): sent to this host only, if it asks."
    )
    var certificateFile: String?

    @Option(name: .customLong("key"), help: "The --cert private key (PEM or DER), read into locked memory.")
    var keyFile: String?

    @Option(help: "A file holding the passphrase of an encrypted --key or of --p12.")
    var keyPassphraseFile: String?

    @Option(
        name: .customLong("p12"),
        help: "A PKCS#12 file (client certificate chain and key), instead of --cert/--key."
    )
    var pkcs12File: String?

    @Option(
        name: .customLong("ct"),
        help: ArgumentHelp(
            "Certificate Transparency: enforce (refuse a certificate whose SCTs do not meet Chrome's policy), report "
                + "(say so and go on) or off.",
            discussion: "The SCTs embedded in the certificate are verified with the keys of the --ct-logs list. "
                + "With --policy, its certificateTransparency section and each host's mode decide instead.",
            valueName: "enforce|report|off"
        )
    )
    var certificateTransparency: CertificateTransparencyOption?

    @Option(
        name: .customLong("ct-logs"),
        help: ArgumentHelp(
            "A Certificate Transparency log list: the public log list's v3 JSON, or a flat list of logs naming their "
                + "operators.",
            valueName: "file"
        )
    )
    var certificateTransparencyLogs: String?

    /// The log list of `--ct-logs`, or of the `--policy` file, or nil.
    func logList() throws -> CertificateTransparencyLogList? {
        if let path = self.certificateTransparencyLogs {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--ct-logs: cannot read \"\(path)\"")
            }
            do {
                return try CertificateTransparencyLogList(jsonData: data)
            } catch {
                throw ValidationError("--ct-logs \(path): \(error)")
            }
        }
        guard let path = self.policyFile else { return nil }
        return try PolicyFile(contentsOfFile: path).certificateTransparency
    }

    /// The client configuration of `--policy FILE`, or else one whose policy covers exactly `host` (with revocation
    /// checking as `revocation` says); `--tls13`, `--cert`/`--key`/`--p12` and `--resolve` apply to both.
    func configuration(host: String, revocation: RevocationOption = .off) throws -> BulwarkClient.Configuration {
        var configuration =
            try self.policyFile.map { try BulwarkClient.Configuration(policyFile: $0) }
            ?? self.commandLineConfiguration(host: host, revocation: revocation)
        if self.tls13 { configuration.tls.minimumVersion = .tls13 }
        if let identity = try self.clientIdentity() {
            configuration.clientIdentities.set(identity, for: try HostPattern.exact(host))
        }
        for entry in self.resolve {
            let parts = entry.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, Int(parts[1]) != nil else {
                throw ValidationError("--resolve takes HOST:PORT:ADDR, got \"\(entry)\"")
            }
            _ = try HostName.canonicalize(parts[0])
            configuration.resolveOverrides[BulwarkClient.Endpoint(host: parts[0], port: Int(parts[1]) ?? 0)] =
                BulwarkClient.ResolvedAddress(parts[2])
        }
        return configuration
    }

    /// Whether `--policy FILE` names a proxy (its `proxy` section).
    func setsProxy() throws -> Bool {
        guard let path = self.policyFile else { return false }
        return try PolicyFile(contentsOfFile: path).proxy != nil
    }

    /// The options `--policy FILE` replaces or decides, refused beside it (when the options are read).
    private func refuseOptionsAPolicyReplaces() throws {
        if !self.caFiles.isEmpty || !self.caCertificateFiles.isEmpty || !self.pins.isEmpty
            || !self.pinnedPublicKeys.isEmpty || self.allowSinglePin
        {
            throw ValidationError(
                "--policy replaces --ca, --cacert, --pin, --pinnedpubkey and --allow-single-pin: give the policy file "
                    + "or those"
            )
        }
        if self.certificateTransparency != nil || self.certificateTransparencyLogs != nil {
            throw ValidationError(
                "--ct and --ct-logs do not apply with --policy: its certificateTransparency section and each host's "
                    + "mode decide"
            )
        }
    }

    /// The configuration of `--ca` and `--pin`: a policy that covers exactly `host`.
    private func commandLineConfiguration(
        host: String,
        revocation: RevocationOption
    ) throws -> BulwarkClient.Configuration {
        var anchors: [Certificate] = []
        for (option, files) in [("--ca", self.caFiles), ("--cacert", self.caCertificateFiles)] {
            for file in files {
                do {
                    anchors += try CertificateLoader.certificates(atPath: file)
                } catch {
                    throw ValidationError("\(option): \(error)")
                }
            }
        }
        // --cacert replaces the system roots (curl's meaning); --ca alone adds to them.
        let roots: TrustRoots =
            !self.caCertificateFiles.isEmpty ? .custom(anchors) : anchors.isEmpty ? .system : .systemAnd(anchors)
        let evaluator: any ServerTrustEvaluating
        let pins = try self.allPins()
        if pins.isEmpty {
            evaluator = DefaultTrustEvaluator(roots: roots)
        } else {
            evaluator = PublicKeysTrustEvaluator(
                pinSet: try PinSet(pins, allowSinglePin: self.allowSinglePin),
                roots: roots
            )
        }
        var checked: any ServerTrustEvaluating =
            switch revocation {
            case .off: evaluator
            case .soft: evaluator.checkingRevocation(mode: .soft)
            case .hard: evaluator.checkingRevocation(mode: .hard)
            }
        if let mode = self.certificateTransparency, mode != .off {
            guard let logs = try self.logList() else {
                throw ValidationError("--ct \(mode.rawValue) needs --ct-logs FILE: the logs whose SCTs count")
            }
            checked = CertificateTransparencyTrustEvaluator(
                checked,
                logs: logs,
                mode: mode == .enforce ? .enforce : .reportOnly
            )
        }
        return BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [(try HostPattern.exact(host), checked)])
        )
    }
}

extension PolicyOptions {
    func validate() throws {
        if self.policyFile != nil {
            try self.refuseOptionsAPolicyReplaces()
        }
        if let certificateFile = self.certificateFile, certificateFile.contains(":"),
            !FileManager.default.fileExists(atPath: certificateFile)
        {
            throw ValidationError(CurlOptions.Refusal.certificatePassword)
        }
        var pins: Set<Pin> = []
        for text in try self.allPins() {
            do {
                pins.insert(try Pin(text))
            } catch {
                throw ValidationError("--pin: \(error)")
            }
        }
        if pins.count == 1, !self.allowSinglePin {
            throw ValidationError(
                "one pin given: give a backup pin too (a second --pin, or a second sha256// entry of --pinnedpubkey), "
                    + "so that a key change does not lock you out; --allow-single-pin accepts the risk"
            )
        }
    }

    /// The pins of `--pin` and of `--pinnedpubkey` (curl's `sha256//A;sha256//B`, or a public key file), as
    /// `sha256/` strings.
    func allPins() throws -> [String] {
        var pins = self.pins
        for value in self.pinnedPublicKeys {
            pins += try Self.curlPins(value)
        }
        return pins
    }

    /// The pins of one `--pinnedpubkey` value: `sha256//BASE64` entries separated by `;`, or a file name.
    static func curlPins(_ value: String) throws -> [String] {
        guard value.hasPrefix("sha256//") else {
            guard !value.contains(";") else {
                throw ValidationError(
                    "--pinnedpubkey takes \"sha256//BASE64;sha256//BASE64\" or a public key file, got \"\(value)\""
                )
            }
            guard let contents = FileManager.default.contents(atPath: value) else {
                throw ValidationError(
                    "--pinnedpubkey: cannot read the public key file \"\(value)\" (pins are written sha256//BASE64)"
                )
            }
            do {
                return [try Pin.publicKey(ofPublicKeyFile: Array(contents)).description]
            } catch {
                throw ValidationError("--pinnedpubkey \(value): \(error)")
            }
        }
        var pins: [String] = []
        for entry in value.split(separator: ";", omittingEmptySubsequences: false) {
            let entry = entry.trimmingCharacters(in: .whitespaces)
            guard entry.hasPrefix("sha256//") else {
                throw ValidationError(
                    "--pinnedpubkey: \"\(entry)\" is not a pin; each is sha256// and the key's SHA-256 in base64, "
                        + "separated by ;"
                )
            }
            let pin = "sha256/" + entry.dropFirst("sha256//".count)
            do {
                _ = try Pin(pin)
            } catch {
                throw ValidationError("--pinnedpubkey: \(error)")
            }
            pins.append(pin)
        }
        return pins
    }

    /// The identity of `--cert`/`--key` (with `--key-passphrase-file`) or `--p12`, or nil. Files only: the key and the
    /// passphrase are read straight into locked memory.
    func clientIdentity() throws -> ClientIdentity? {
        if self.pkcs12File != nil && (self.certificateFile != nil || self.keyFile != nil) {
            throw ValidationError("--p12 holds the certificate and the key: give it or --cert and --key, not both")
        }
        if let pkcs12File = self.pkcs12File {
            guard let passphraseFile = self.keyPassphraseFile else {
                throw ValidationError("--p12 needs --key-passphrase-file")
            }
            return try ClientIdentity.pkcs12(
                try SecretBytes(contentsOfFile: pkcs12File, trimmingTrailingNewlines: false),
                passphrase: try SecretBytes(contentsOfFile: passphraseFile)
            )
        }
        switch (self.certificateFile, self.keyFile) {
        case (nil, nil):
            if self.keyPassphraseFile != nil {
                throw ValidationError("--key-passphrase-file goes with --key or --p12")
            }
            return nil
        case (let certificateFile?, let keyFile?):
            guard let chain = FileManager.default.contents(atPath: certificateFile) else {
                throw ValidationError("--cert: cannot read \"\(certificateFile)\"")
            }
            let key = try SecretBytes(contentsOfFile: keyFile, trimmingTrailingNewlines: false)
            if let passphraseFile = self.keyPassphraseFile {
                return try ClientIdentity.pem(
                    certificateChain: Array(chain),
                    privateKey: key,
                    passphrase: try SecretBytes(contentsOfFile: passphraseFile)
                )
            }
            return try ClientIdentity.pem(certificateChain: Array(chain), privateKey: key)
        default:
            throw ValidationError("--cert and --key go together")
        }
    }
}

/// `--revocation`: whether and how strictly certificates are checked for revocation (OCSP, then CRL).
enum RevocationOption: String, ExpressibleByArgument, CaseIterable {
    /// Every certificate of the verified chain needs a "not revoked" answer.
    case hard
    /// Only a definite "revoked" refuses; an unknown status is reported.
    case soft
    /// No revocation check.
    case off

    static let help = ArgumentHelp(
        "Check the verified chain for revoked certificates: hard (an unknown status refuses), soft (only a revoked "
            + "certificate refuses) or off.",
        discussion: "The check asks each certificate's OCSP responder, then fetches its CRL, over http:// (the "
            + "answers are signed), with a 3 s timeout per fetch.",
        valueName: "hard|soft|off"
    )
}

/// `--ct`: what a certificate whose SCTs do not meet the policy does.
enum CertificateTransparencyOption: String, ExpressibleByArgument, CaseIterable {
    case enforce
    case report
    case off
}

/// Exit statuses per failure class, shared by `fetch` and `inspect`.
enum FailureExit {
    /// The configuration `make` builds; an error in it (a pin, a certificate or key file, a policy file) is printed
    /// as `bulwark COMMAND: …` and ends the command with its exit status (64 for bad options and files).
    static func configuration<Value>(_ command: String, _ make: () throws -> Value) throws -> Value {
        do {
            return try make()
        } catch let error as ValidationError {
            throw error
        } catch {
            printError("bulwark \(command): \(error)")
            throw ExitCode(Self.code(for: error))
        }
    }

    static func code(for error: any Error) -> Int32 {
        if error is PinError || error is HostPatternError || error is CertificateLoadingError
            || error is ClientIdentityError || error is SecretBytesError || error is PolicyFileError
        {
            return 64
        }
        guard let error = error as? BulwarkError else { return 1 }
        switch error.code {
        case .invalidURL, .plainHTTPNotAllowed: return 2
        case .connectFailed, .proxyHandshakeFailed, .proxyRefused, .proxyAuthRequired, .proxyAuthFailed,
            .proxyAuthSchemeUnsupported:
            return 3
        case .tlsHandshakeFailed, .clientCertificateRejected: return 4
        case .trustRefused, .hostNotAllowed, .proxyUntrusted: return 5
        case .connectTimeout, .tlsHandshakeTimeout, .readTimeout, .deadlineExceeded: return 6
        default: return 7
        }
    }

    static let help = """
        Exit status: 0 success, 1 other failure, 2 bad URL, 3 cannot connect, 4 TLS handshake \
        failed or the server refused the client certificate, 5 the trust policy refused the server (or the host is \
        not in --allow-host), 6 a timeout, 7 the response failed, 64 bad options or files.
        """
}
