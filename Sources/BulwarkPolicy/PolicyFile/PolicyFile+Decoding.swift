import Foundation
import X509

extension PolicyFile {
    /// Reads a policy file. Relative certificate paths in it start at the file's directory.
    ///
    /// - Throws: ``PolicyFileError`` naming the JSON pointer and line of the first problem.
    public init(contentsOfFile path: String) throws(PolicyFileError) {
        let bytes = try Self.readFile(path, maximumSize: Self.maximumSize, pointer: "")
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try self.init(jsonBytes: bytes, baseDirectory: directory)
    }

    /// Reads a policy from its bytes (UTF-8 JSON).
    ///
    /// - Parameters:
    ///   - bytes: The policy file's bytes.
    ///   - baseDirectory: Where relative certificate paths start; nil refuses relative paths.
    /// - Throws: ``PolicyFileError`` naming the JSON pointer and line of the first problem.
    public init(jsonBytes bytes: [UInt8], baseDirectory: String?) throws(PolicyFileError) {
        guard bytes.count <= Self.maximumSize else {
            throw PolicyFileError(
                .unreadable,
                pointer: "",
                line: nil,
                detail: "the policy is \(bytes.count) bytes; the limit is \(Self.maximumSize)"
            )
        }
        let json: PolicyJSON
        do throws(PolicyJSON.SyntaxError) {
            json = try PolicyJSON.parse(bytes)
        } catch {
            throw PolicyFileError(
                .syntax,
                pointer: "",
                line: error.line,
                detail: "not valid JSON at column \(error.column): \(error.detail)"
            )
        }
        var decoder = PolicyFileDecoder(directory: baseDirectory)
        self = try decoder.document(json)
    }

    package static func readFile(_ path: String, maximumSize: Int, pointer: String) throws(PolicyFileError) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw PolicyFileError(.unreadable, pointer: pointer, line: nil, detail: "cannot open \"\(path)\"")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maximumSize + 1) ?? Data()
        } catch {
            throw PolicyFileError(.unreadable, pointer: pointer, line: nil, detail: "cannot read \"\(path)\"")
        }
        guard data.count <= maximumSize else {
            throw PolicyFileError(
                .unreadable,
                pointer: pointer,
                line: nil,
                detail: "\"\(path)\" is larger than \(maximumSize) bytes"
            )
        }
        return Array(data)
    }

    /// `key` escaped for a JSON pointer (RFC 6901): `~` as `~0`, `/` as `~1`.
    package static func pointerToken(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}

/// Reads the JSON of a policy file into a ``PolicyFile``, refusing anything the format does not define.
private struct PolicyFileDecoder {
    let directory: String?
    var lines: [String: Int] = [:]
    var insecure = false

    init(directory: String?) {
        self.directory = directory
    }

    static let topLevelKeys: Set<String> = [
        "format", "insecure", "hosts", "otherHosts", "tls", "allowlist", "redirects", "credentialScopes",
        "clientCertificates", "proxy", "certificateTransparency",
    ]

    mutating func document(_ json: PolicyJSON) throws(PolicyFileError) -> PolicyFile {
        let members = try self.object(json, at: "", allowed: Self.topLevelKeys)
        guard let format = members["format"] else {
            throw PolicyFileError(
                .unsupportedFormat,
                pointer: "/format",
                line: json.line,
                detail: "the member \"format\" is missing; this reader takes \"\(PolicyFile.format)\""
            )
        }
        let formatText = try self.string(format, at: "/format")
        guard formatText == PolicyFile.format else {
            throw PolicyFileError(
                .unsupportedFormat,
                pointer: "/format",
                line: format.line,
                detail: "the format \(PolicyJSON.quoted(formatText)) is not supported; this reader takes "
                    + "\"\(PolicyFile.format)\""
            )
        }
        var policy = PolicyFile()
        if let insecure = members["insecure"] {
            policy.insecure = try self.bool(insecure, at: "/insecure")
            self.insecure = policy.insecure
        }
        guard let hosts = members["hosts"] else {
            throw self.missing("hosts", in: "", line: json.line)
        }
        policy.hosts = try self.hosts(hosts)
        if let other = members["otherHosts"] {
            policy.otherHosts = try self.evaluator(other, at: "/otherHosts")
        }
        if let tls = members["tls"] {
            let fields = try self.object(tls, at: "/tls", allowed: ["minimumVersion"])
            if let version = fields["minimumVersion"] {
                let text = try self.string(version, at: "/tls/minimumVersion")
                guard let found = PolicyFile.TLSVersion.all.first(where: { $0.description == text }) else {
                    throw self.invalid(version, at: "/tls/minimumVersion", "the TLS version must be \"1.2\" or \"1.3\"")
                }
                policy.minimumTLSVersion = found
            }
        }
        if let allowlist = members["allowlist"] {
            policy.allowlist = try self.allowlist(allowlist)
        }
        if let redirects = members["redirects"] {
            policy.redirects = try self.redirects(redirects)
        }
        if let scopes = members["credentialScopes"] {
            policy.credentialScopes = try self.credentialScopes(scopes)
        }
        if let certificates = members["clientCertificates"] {
            policy.clientCertificates = try self.clientCertificates(certificates)
        }
        if let proxy = members["proxy"] {
            policy.proxy = try self.proxy(proxy)
        }
        if let transparency = members["certificateTransparency"] {
            policy.certificateTransparency = try self.logList(transparency, at: "/certificateTransparency")
        }
        if policy.certificateTransparency == nil,
            let (pointer, _) = Self.evaluatorsAsking(policy).first
        {
            throw PolicyFileError(
                .invalidValue,
                pointer: pointer + "/certificateTransparency",
                line: self.lines[pointer + "/certificateTransparency"] ?? json.line,
                detail:
                    "this host asks for Certificate Transparency, and the policy has no \"certificateTransparency\" "
                    + "log list to check it against"
            )
        }
        policy.source.lines = self.lines
        policy.source.directory = self.directory
        try Self.refuseWeakening(policy)
        return policy
    }

    /// Refuses, in a policy without `"insecure": true`, every option that weakens trust by construction: the list
    /// the linter reports them with (``PolicyLintRule/weakeningByConstruction``), so the two never disagree. (The
    /// `disabled` evaluator and https-to-http redirects are refused as they are read, with the same rule.)
    static func refuseWeakening(_ policy: PolicyFile) throws(PolicyFileError) {
        guard !policy.insecure else { return }
        let weakening = PolicyLinter(now: Date()).lint(policy)
            .first { PolicyLintRule.weakeningByConstruction.contains($0.rule) }
        guard let finding = weakening else { return }
        throw PolicyFileError(
            .insecureOptionNotAllowed,
            pointer: finding.pointer,
            line: finding.line,
            detail: "\(finding.message) (\(finding.rule)): it weakens what a handshake proves and is accepted only "
                + "in a policy that says \"insecure\": true"
        )
    }

    // MARK: - Hosts and evaluators

    mutating func hosts(_ json: PolicyJSON) throws(PolicyFileError) -> [PolicyFile.Host] {
        let members = try self.orderedObject(json, at: "/hosts")
        var result: [PolicyFile.Host] = []
        var seen: [HostPattern: String] = [:]
        for member in members {
            let pointer = "/hosts/" + PolicyFile.pointerToken(member.key)
            let pattern = try self.pattern(member.key, at: pointer, line: member.value.line)
            if let earlier = seen[pattern] {
                throw PolicyFileError(
                    .invalidPattern,
                    pointer: pointer,
                    line: member.value.line,
                    detail: "the pattern \(PolicyJSON.quoted(member.key)) is the same pattern as "
                        + "\(PolicyJSON.quoted(earlier)) (\(pattern))"
                )
            }
            seen[pattern] = member.key
            result.append(PolicyFile.Host(pattern: pattern, evaluator: try self.evaluator(member.value, at: pointer)))
        }
        return result
    }

    static let commonEvaluatorKeys: Set<String> = [
        "evaluator", "revocation", "validation", "certificateTransparency",
    ]
    static let evaluatorKeys: [String: Set<String>] = [
        "default": ["roots", "validateHost"],
        "publicKeys": [
            "pins", "expires", "reportOnly", "allowSinglePin", "roots", "performDefaultValidation", "validateHost",
        ],
        "pinnedCertificates": [
            "certificates", "acceptSelfSignedCertificates", "roots", "performDefaultValidation", "validateHost",
        ],
        "composite": ["evaluators"],
        "disabled": [],
    ]

    mutating func evaluator(_ json: PolicyJSON, at pointer: String) throws(PolicyFileError) -> PolicyFile.Evaluator {
        guard case .object = json.value else {
            throw self.wrongType(json, at: pointer, expected: "an object with an \"evaluator\" member")
        }
        guard let kindJSON = json["evaluator"] else {
            throw self.missing("evaluator", in: pointer, line: json.line)
        }
        let kindText = try self.string(kindJSON, at: pointer + "/evaluator")
        guard let kind = PolicyFile.Evaluator.Kind.all.first(where: { $0.description == kindText }),
            let specific = Self.evaluatorKeys[kindText]
        else {
            let names = PolicyFile.Evaluator.Kind.all.map { "\"\($0)\"" }.joined(separator: ", ")
            throw self.invalid(kindJSON, at: pointer + "/evaluator", "the evaluator must be one of \(names)")
        }
        var allowed = Self.commonEvaluatorKeys.union(specific)
        if kind == .disabled { allowed = ["evaluator"] }
        let fields = try self.object(json, at: pointer, allowed: allowed, context: "a \"\(kindText)\" evaluator")
        if kind == .disabled && !self.insecure {
            throw PolicyFileError(
                .insecureOptionNotAllowed,
                pointer: pointer + "/evaluator",
                line: kindJSON.line,
                detail: "the \"disabled\" evaluator trusts any certificate for any name; it is accepted only in a "
                    + "policy that says \"insecure\": true"
            )
        }
        var evaluator = PolicyFile.Evaluator(kind: kind)
        if let roots = fields["roots"] {
            evaluator.roots = try self.roots(roots, at: pointer + "/roots")
        }
        if let validateHost = fields["validateHost"] {
            evaluator.validateHost = try self.bool(validateHost, at: pointer + "/validateHost")
        }
        if let perform = fields["performDefaultValidation"] {
            evaluator.performDefaultValidation = try self.bool(perform, at: pointer + "/performDefaultValidation")
        }
        if let validation = fields["validation"] {
            evaluator.options = try self.validationOptions(validation, at: pointer + "/validation")
        }
        if let revocation = fields["revocation"] {
            evaluator.revocation = try self.revocation(revocation, at: pointer + "/revocation")
        }
        if let transparency = fields["certificateTransparency"] {
            switch try self.string(transparency, at: pointer + "/certificateTransparency") {
            case "enforce": evaluator.certificateTransparency = .enforce
            case "report": evaluator.certificateTransparency = .reportOnly
            case "off": evaluator.certificateTransparency = .off
            default:
                throw self.invalid(
                    transparency,
                    at: pointer + "/certificateTransparency",
                    "Certificate Transparency is \"enforce\", \"report\" or \"off\""
                )
            }
        }
        switch kind {
        case .publicKeys:
            evaluator.pinSet = try self.pinSet(fields, in: json, at: pointer)
        case .pinnedCertificates:
            guard let certificates = fields["certificates"] else {
                throw self.missing("certificates", in: pointer, line: json.line)
            }
            evaluator.certificates = try self.certificateSources(certificates, at: pointer + "/certificates")
            guard !evaluator.certificates.isEmpty else {
                throw self.invalid(certificates, at: pointer + "/certificates", "at least one certificate is needed")
            }
            if let accept = fields["acceptSelfSignedCertificates"] {
                evaluator.acceptSelfSignedCertificates = try self.bool(
                    accept,
                    at: pointer + "/acceptSelfSignedCertificates"
                )
            }
        case .composite:
            guard let members = fields["evaluators"] else {
                throw self.missing("evaluators", in: pointer, line: json.line)
            }
            let items = try self.array(members, at: pointer + "/evaluators")
            guard !items.isEmpty else {
                throw self.invalid(members, at: pointer + "/evaluators", "a composite needs at least one evaluator")
            }
            for (index, item) in items.enumerated() {
                evaluator.members.append(try self.evaluator(item, at: pointer + "/evaluators/\(index)"))
            }
        default:
            break
        }
        return evaluator
    }

    mutating func pinSet(
        _ fields: [String: PolicyJSON],
        in json: PolicyJSON,
        at pointer: String
    ) throws(PolicyFileError) -> PinSet {
        guard let pinsJSON = fields["pins"] else {
            throw self.missing("pins", in: pointer, line: json.line)
        }
        let items = try self.array(pinsJSON, at: pointer + "/pins")
        var pins: [Pin] = []
        for (index, item) in items.enumerated() {
            let itemPointer = pointer + "/pins/\(index)"
            let text = try self.string(item, at: itemPointer)
            let pin: Pin
            do throws(PinError) {
                pin = try Pin(text)
            } catch {
                throw PolicyFileError(.invalidPin, pointer: itemPointer, line: item.line, detail: error.description)
            }
            if pins.contains(pin) {
                throw PolicyFileError(
                    .invalidPin,
                    pointer: itemPointer,
                    line: item.line,
                    detail: "the pin \(PolicyJSON.quoted(text)) is listed twice"
                )
            }
            pins.append(pin)
        }
        var expiration: Date?
        if let expires = fields["expires"] {
            expiration = try self.date(expires, at: pointer + "/expires")
        }
        var enforcement = PinSet.Enforcement.enforce
        if let reportOnly = fields["reportOnly"], try self.bool(reportOnly, at: pointer + "/reportOnly") {
            enforcement = .reportOnly
        }
        var allowSinglePin = false
        if let single = fields["allowSinglePin"] {
            allowSinglePin = try self.bool(single, at: pointer + "/allowSinglePin")
        }
        do throws(PinError) {
            return try PinSet(pins, expiration: expiration, enforcement: enforcement, allowSinglePin: allowSinglePin)
        } catch {
            let detail =
                error.code == .tooFewPins
                ? "an enforcing pin set needs a backup pin (at least 2 distinct pins); "
                    + "say \"allowSinglePin\": true to opt out"
                : "a pin set needs at least one pin"
            throw PolicyFileError(.invalidPin, pointer: pointer + "/pins", line: pinsJSON.line, detail: detail)
        }
    }

    mutating func roots(_ json: PolicyJSON, at pointer: String) throws(PolicyFileError) -> PolicyFile.Roots {
        let fields = try self.object(json, at: pointer, allowed: ["system", "certificates"])
        var roots = PolicyFile.Roots()
        if let system = fields["system"] {
            roots.system = try self.bool(system, at: pointer + "/system")
        }
        if let certificates = fields["certificates"] {
            roots.certificates = try self.certificateSources(certificates, at: pointer + "/certificates")
        }
        if !roots.system && roots.certificates.isEmpty {
            throw self.invalid(json, at: pointer, "without the system roots, at least one certificate is needed")
        }
        return roots
    }

    mutating func certificateSources(
        _ json: PolicyJSON,
        at pointer: String
    ) throws(PolicyFileError) -> [PolicyFile.CertificateSource] {
        var result: [PolicyFile.CertificateSource] = []
        for (index, item) in try self.array(json, at: pointer).enumerated() {
            let itemPointer = pointer + "/\(index)"
            let fields = try self.object(item, at: itemPointer, allowed: ["pem", "file"])
            switch (fields["pem"], fields["file"]) {
            case (let pem?, nil):
                let text = try self.string(pem, at: itemPointer + "/pem")
                do throws(CertificateLoadingError) {
                    result.append(try .pem(text))
                } catch {
                    throw PolicyFileError(
                        .invalidCertificate,
                        pointer: itemPointer + "/pem",
                        line: pem.line,
                        detail: Self.certificateDetail(error)
                    )
                }
            case (nil, let file?):
                let path = try self.string(file, at: itemPointer + "/file")
                let resolved: String
                if path.hasPrefix("/") {
                    resolved = path
                } else if let directory = self.directory {
                    resolved = URL(fileURLWithPath: directory).appending(path: path).path
                } else {
                    throw self.invalid(
                        file,
                        at: itemPointer + "/file",
                        "a relative certificate path needs the policy file's directory, and this policy was read "
                            + "without one (a signed bundle's policy always is); give an absolute path"
                    )
                }
                do throws(CertificateLoadingError) {
                    let certificates = try CertificateLoader.certificates(atPath: resolved)
                    result.append(.init(pem: nil, file: path, certificates: certificates))
                } catch {
                    throw PolicyFileError(
                        .invalidCertificate,
                        pointer: itemPointer + "/file",
                        line: file.line,
                        detail: Self.certificateDetail(error)
                    )
                }
            default:
                throw self.invalid(item, at: itemPointer, "a certificate is an object with either \"pem\" or \"file\"")
            }
        }
        return result
    }

    static func certificateDetail(_ error: CertificateLoadingError) -> String {
        if error.isUnreadable { return "cannot read the certificate file \"\(error.source)\": \(error.detail)" }
        if error.isNoCertificates { return "no certificate found in \(error.source)" }
        return "the certificate in \(error.source) cannot be parsed: \(error.detail)"
    }

    mutating func validationOptions(
        _ json: PolicyJSON,
        at pointer: String
    ) throws(PolicyFileError) -> ValidationOptions {
        let fields = try self.object(
            json,
            at: pointer,
            allowed: [
                "maximumPresentedCertificates", "maximumIntermediates", "requireServerAuthExtendedKeyUsage",
                "enforcesRootProfile",
            ]
        )
        var options = ValidationOptions()
        if let maximum = fields["maximumPresentedCertificates"] {
            options.maximumPresentedCertificates = try self.integer(
                maximum,
                at: pointer + "/maximumPresentedCertificates",
                in: 1...100
            )
        }
        if let intermediates = fields["maximumIntermediates"] {
            options.maximumIntermediates = try self.integer(
                intermediates,
                at: pointer + "/maximumIntermediates",
                in: 0...20
            )
        }
        if let serverAuth = fields["requireServerAuthExtendedKeyUsage"] {
            options.requireServerAuthExtendedKeyUsage = try self.bool(
                serverAuth,
                at: pointer + "/requireServerAuthExtendedKeyUsage"
            )
        }
        if let rootProfile = fields["enforcesRootProfile"] {
            options.enforcesRootProfile = try self.bool(rootProfile, at: pointer + "/enforcesRootProfile")
        }
        return options
    }

    static let methods: [String: RevocationTrustEvaluator.Method] = [
        "any": .any, "ocsp": .ocsp, "crl": .crl, "preferCRL": .preferCRL,
    ]

    mutating func revocation(_ json: PolicyJSON, at pointer: String) throws(PolicyFileError) -> PolicyFile.Revocation {
        let fields = try self.object(json, at: pointer, allowed: ["method", "mode", "networkAccessDisabled"])
        var revocation = PolicyFile.Revocation()
        if let method = fields["method"] {
            let text = try self.string(method, at: pointer + "/method")
            guard let found = Self.methods[text] else {
                throw self.invalid(
                    method,
                    at: pointer + "/method",
                    "the method must be \"any\", \"ocsp\", \"crl\" or \"preferCRL\""
                )
            }
            revocation.method = found
        }
        if let mode = fields["mode"] {
            switch try self.string(mode, at: pointer + "/mode") {
            case "hard": revocation.mode = .hard
            case "soft": revocation.mode = .soft
            default: throw self.invalid(mode, at: pointer + "/mode", "the mode must be \"hard\" or \"soft\"")
            }
        }
        if let disabled = fields["networkAccessDisabled"] {
            revocation.networkAccessDisabled = try self.bool(disabled, at: pointer + "/networkAccessDisabled")
        }
        return revocation
    }

    // MARK: - Certificate Transparency

    /// The evaluators (by JSON pointer) that check Certificate Transparency, members of composites included.
    static func evaluatorsAsking(_ policy: PolicyFile) -> [(String, PolicyFile.Evaluator)] {
        func walk(_ evaluator: PolicyFile.Evaluator, _ pointer: String) -> [(String, PolicyFile.Evaluator)] {
            let own = (evaluator.certificateTransparency ?? .off) != .off ? [(pointer, evaluator)] : []
            return own
                + evaluator.members.enumerated().flatMap { walk($0.element, pointer + "/evaluators/\($0.offset)") }
        }
        var found: [(String, PolicyFile.Evaluator)] = []
        for host in policy.hosts {
            found += walk(host.evaluator, "/hosts/" + PolicyFile.pointerToken(host.pattern.description))
        }
        if let other = policy.otherHosts { found += walk(other, "/otherHosts") }
        return found
    }

    /// `{"expires": "YYYY-MM-DD", "logs": [{"key", "operator", "description", "state", "stateTimestamp",
    /// "temporalInterval": {"start", "end"}}]}`.
    mutating func logList(
        _ json: PolicyJSON,
        at pointer: String
    ) throws(PolicyFileError)
        -> CertificateTransparencyLogList
    {
        let fields = try self.object(json, at: pointer, allowed: ["logs", "expires"])
        guard let logsJSON = fields["logs"] else { throw self.missing("logs", in: pointer, line: json.line) }
        var list = CertificateTransparencyLogList(logs: [])
        if let expires = fields["expires"] {
            list.expires = try self.date(expires, at: pointer + "/expires")
        }
        for (index, item) in try self.array(logsJSON, at: pointer + "/logs").enumerated() {
            let at = pointer + "/logs/\(index)"
            let log = try self.object(
                item,
                at: at,
                allowed: ["key", "operator", "description", "state", "stateTimestamp", "temporalInterval"]
            )
            guard let keyJSON = log["key"] else { throw self.missing("key", in: at, line: item.line) }
            guard let key = Data(base64Encoded: try self.string(keyJSON, at: at + "/key")), !key.isEmpty else {
                throw self.invalid(keyJSON, at: at + "/key", "a log's key is its SubjectPublicKeyInfo in base64 (DER)")
            }
            guard CertificateTransparencyLog.isUsableKey(Array(key)) else {
                throw self.invalid(
                    keyJSON,
                    at: at + "/key",
                    "a log's key is an ECDSA P-256 or RSA (2048 bits or more) key"
                )
            }
            guard let operatorJSON = log["operator"] else { throw self.missing("operator", in: at, line: item.line) }
            var entry = CertificateTransparencyLog(
                key: Array(key),
                operatorName: try self.string(operatorJSON, at: at + "/operator"),
                name: try log["description"].map { json throws(PolicyFileError) in
                    try self.string(json, at: at + "/description")
                } ?? "log \(index)"
            )
            guard list.log(withID: entry.logID) == nil else {
                throw self.invalid(keyJSON, at: at + "/key", "the same log key is listed twice")
            }
            var stateTimestamp: Date?
            if let timestamp = log["stateTimestamp"] {
                stateTimestamp = try self.date(timestamp, at: at + "/stateTimestamp")
            }
            if let stateJSON = log["state"] {
                switch try self.string(stateJSON, at: at + "/state") {
                case "usable": entry.state = .usable
                case "qualified": entry.state = .qualified
                case "readonly": entry.state = .readOnly(since: stateTimestamp)
                case "retired":
                    guard let stateTimestamp else {
                        throw self.missing("stateTimestamp", in: at, line: item.line)
                    }
                    entry.state = .retired(at: stateTimestamp)
                default:
                    throw self.invalid(
                        stateJSON,
                        at: at + "/state",
                        "a log's state is \"usable\", \"qualified\", \"readonly\" or \"retired\""
                    )
                }
            }
            if let intervalJSON = log["temporalInterval"] {
                let interval = try self.object(intervalJSON, at: at + "/temporalInterval", allowed: ["start", "end"])
                guard let start = interval["start"], let end = interval["end"] else {
                    throw self.missing("start\" and \"end", in: at + "/temporalInterval", line: intervalJSON.line)
                }
                let from = try self.date(start, at: at + "/temporalInterval/start")
                let to = try self.date(end, at: at + "/temporalInterval/end")
                guard from < to else {
                    throw self.invalid(intervalJSON, at: at + "/temporalInterval", "the interval ends before it starts")
                }
                entry.temporalInterval = from..<to
            }
            list.logs.append(entry)
        }
        return list
    }

    // MARK: - Client settings

    mutating func allowlist(_ json: PolicyJSON) throws(PolicyFileError) -> [PolicyFile.AllowlistEntry] {
        var entries: [PolicyFile.AllowlistEntry] = []
        for (index, item) in try self.array(json, at: "/allowlist").enumerated() {
            let pointer = "/allowlist/\(index)"
            if case .string(let text) = item.value {
                self.lines[pointer] = item.line
                entries.append(.init(pattern: try self.pattern(text, at: pointer, line: item.line)))
                continue
            }
            guard case .object = item.value else {
                throw self.wrongType(item, at: pointer, expected: "a host pattern or an object with \"pattern\"")
            }
            let fields = try self.object(item, at: pointer, allowed: ["pattern", "schemes", "ports"])
            guard let patternJSON = fields["pattern"] else {
                throw self.missing("pattern", in: pointer, line: item.line)
            }
            let text = try self.string(patternJSON, at: pointer + "/pattern")
            var entry = PolicyFile.AllowlistEntry(
                pattern: try self.pattern(text, at: pointer + "/pattern", line: patternJSON.line)
            )
            if let schemes = fields["schemes"] {
                entry.schemes = try self.schemes(schemes, at: pointer + "/schemes", allowed: nil)
            }
            if let ports = fields["ports"] {
                entry.ports = try self.ports(ports, at: pointer + "/ports")
            }
            entries.append(entry)
        }
        return entries
    }

    mutating func redirects(_ json: PolicyJSON) throws(PolicyFileError) -> PolicyFile.Redirects {
        let fields = try self.object(
            json,
            at: "/redirects",
            allowed: ["follow", "allowedHosts", "maximumHops", "allowedPorts", "allowedSchemes", "allowHTTPSToHTTP"]
        )
        var redirects = PolicyFile.Redirects()
        if let follow = fields["follow"] {
            redirects.follow = try self.bool(follow, at: "/redirects/follow")
        }
        if let hosts = fields["allowedHosts"] {
            for (index, item) in try self.array(hosts, at: "/redirects/allowedHosts").enumerated() {
                let pointer = "/redirects/allowedHosts/\(index)"
                let text = try self.string(item, at: pointer)
                redirects.allowedHosts.append(try self.pattern(text, at: pointer, line: item.line))
            }
        }
        if let hops = fields["maximumHops"] {
            redirects.maximumHops = try self.integer(hops, at: "/redirects/maximumHops", in: 0...20)
        }
        if let ports = fields["allowedPorts"] {
            redirects.allowedPorts = try self.ports(ports, at: "/redirects/allowedPorts")
        }
        if let schemes = fields["allowedSchemes"] {
            redirects.allowedSchemes = try self.schemes(
                schemes,
                at: "/redirects/allowedSchemes",
                allowed: ["https", "http"]
            )
        }
        if let downgrade = fields["allowHTTPSToHTTP"] {
            redirects.allowsHTTPSToHTTP = try self.bool(downgrade, at: "/redirects/allowHTTPSToHTTP")
            if redirects.allowsHTTPSToHTTP && !self.insecure {
                throw PolicyFileError(
                    .insecureOptionNotAllowed,
                    pointer: "/redirects/allowHTTPSToHTTP",
                    line: downgrade.line,
                    detail: "following https-to-http redirects sends the rest of the chain unencrypted; it is "
                        + "accepted only in a policy that says \"insecure\": true"
                )
            }
        }
        return redirects
    }

    mutating func credentialScopes(
        _ json: PolicyJSON
    ) throws(PolicyFileError) -> [PolicyFile.CredentialScopeEntry] {
        var result: [PolicyFile.CredentialScopeEntry] = []
        for member in try self.orderedObject(json, at: "/credentialScopes") {
            let pointer = "/credentialScopes/" + PolicyFile.pointerToken(member.key)
            let validName =
                !member.key.isEmpty && member.key.utf8.count <= 64
                && member.key.unicodeScalars.allSatisfy {
                    ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                        || "_.-".unicodeScalars.contains($0)
                }
            guard validName else {
                throw self.invalid(
                    member.value,
                    at: pointer,
                    "a scope name is 1 to 64 letters, digits, \"_\", \".\" or \"-\""
                )
            }
            let fields = try self.object(member.value, at: pointer, allowed: ["under", "hosts", "schemes", "ports"])
            switch (fields["under"], fields["hosts"]) {
            case (let under?, nil):
                guard fields["schemes"] == nil && fields["ports"] == nil else {
                    throw self.invalid(
                        member.value,
                        at: pointer,
                        "\"schemes\" and \"ports\" go with \"hosts\"; a base URL names its own"
                    )
                }
                let text = try self.string(under, at: pointer + "/under")
                do throws(CredentialScopeError) {
                    let scope = try CredentialScope.under(text)
                    result.append(.init(name: member.key, rule: .under(text), scope: scope))
                } catch {
                    throw self.invalid(under, at: pointer + "/under", error.description)
                }
            case (nil, let hosts?):
                var patterns: [HostPattern] = []
                for (index, item) in try self.array(hosts, at: pointer + "/hosts").enumerated() {
                    let text = try self.string(item, at: pointer + "/hosts/\(index)")
                    patterns.append(try self.pattern(text, at: pointer + "/hosts/\(index)", line: item.line))
                }
                var schemes = ["https"]
                if let value = fields["schemes"] {
                    schemes = try self.schemes(value, at: pointer + "/schemes", allowed: ["https", "http"])
                }
                var ports: [Int]?
                if let value = fields["ports"] {
                    ports = try self.ports(value, at: pointer + "/ports")
                }
                let scope = CredentialScope.hosts(patterns, schemes: Set(schemes), ports: ports.map(Set.init))
                result.append(
                    .init(name: member.key, rule: .hosts(patterns, schemes: schemes, ports: ports), scope: scope)
                )
            default:
                throw self.invalid(member.value, at: pointer, "a scope has either \"under\" or \"hosts\"")
            }
        }
        return result
    }

    mutating func clientCertificates(
        _ json: PolicyJSON
    ) throws(PolicyFileError) -> [PolicyFile.ClientCertificate] {
        var result: [PolicyFile.ClientCertificate] = []
        var seen = Set<HostPattern>()
        for member in try self.orderedObject(json, at: "/clientCertificates") {
            let pointer = "/clientCertificates/" + PolicyFile.pointerToken(member.key)
            let pattern = try self.pattern(member.key, at: pointer, line: member.value.line, unlike: &seen)
            let fields = try self.object(
                member.value,
                at: pointer,
                allowed: ["certificate", "key", "pkcs12", "passphraseFile"]
            )
            var entry = PolicyFile.ClientCertificate(pattern: pattern)
            entry.certificateFile = try fields["certificate"].map { json throws(PolicyFileError) in
                try self.path(json, at: pointer + "/certificate")
            }
            entry.keyFile = try fields["key"].map { json throws(PolicyFileError) in
                try self.path(json, at: pointer + "/key")
            }
            entry.pkcs12File = try fields["pkcs12"].map { json throws(PolicyFileError) in
                try self.path(json, at: pointer + "/pkcs12")
            }
            entry.passphraseFile = try fields["passphraseFile"].map { json throws(PolicyFileError) in
                try self.path(json, at: pointer + "/passphraseFile")
            }
            let pem = entry.certificateFile != nil || entry.keyFile != nil
            if entry.pkcs12File != nil {
                guard !pem else {
                    throw self.invalid(
                        member.value,
                        at: pointer,
                        "give \"pkcs12\" or \"certificate\" and \"key\", not both"
                    )
                }
                guard entry.passphraseFile != nil else {
                    throw self.missing("passphraseFile", in: pointer, line: member.value.line)
                }
            } else {
                guard entry.certificateFile != nil else {
                    throw self.missing("certificate", in: pointer, line: member.value.line)
                }
                guard entry.keyFile != nil else {
                    throw self.missing("key", in: pointer, line: member.value.line)
                }
            }
            result.append(entry)
        }
        return result
    }

    mutating func proxy(_ json: PolicyJSON) throws(PolicyFileError) -> PolicyFile.Proxy {
        let fields = try self.object(json, at: "/proxy", allowed: ["use", "credentialsFile", "caFile", "hosts"])
        var proxy = PolicyFile.Proxy(setting: try self.proxySetting(fields, in: "/proxy", line: json.line))
        if let hosts = fields["hosts"] {
            var seen = Set<HostPattern>()
            for member in try self.orderedObject(hosts, at: "/proxy/hosts") {
                let pointer = "/proxy/hosts/" + PolicyFile.pointerToken(member.key)
                let pattern = try self.pattern(member.key, at: pointer, line: member.value.line, unlike: &seen)
                let entry = try self.object(member.value, at: pointer, allowed: ["use", "credentialsFile", "caFile"])
                let setting = try self.proxySetting(entry, in: pointer, line: member.value.line)
                proxy.hosts.append(PolicyFile.Proxy.Host(pattern: pattern, setting: setting))
            }
        }
        return proxy
    }

    /// `use`, `credentialsFile` and `caFile` of the object at `pointer`.
    mutating func proxySetting(
        _ fields: [String: PolicyJSON],
        in pointer: String,
        line: Int
    ) throws(PolicyFileError) -> PolicyFile.Proxy.Setting {
        guard let useJSON = fields["use"] else { throw self.missing("use", in: pointer, line: line) }
        let text = try self.string(useJSON, at: pointer + "/use")
        let use: PolicyFile.Proxy.Use
        switch text {
        case "none": use = .none
        case "environment": use = .environment
        default:
            if let (detail, isSecret) = PolicyFile.Proxy.problem(withURL: text) {
                throw PolicyFileError(
                    isSecret ? .secretInPolicy : .invalidValue,
                    pointer: pointer + "/use",
                    line: useJSON.line,
                    detail: detail
                )
            }
            use = .url(text)
        }
        var setting = PolicyFile.Proxy.Setting(use: use)
        if let file = fields["credentialsFile"] {
            guard case .url = use else {
                throw self.invalid(
                    file,
                    at: pointer + "/credentialsFile",
                    "credentials go with a proxy URL; \"\(use)\" takes none (the environment's proxy URLs carry "
                        + "their own)"
                )
            }
            setting.credentialsFile = try self.path(file, at: pointer + "/credentialsFile")
        }
        if let file = fields["caFile"] {
            switch use {
            case .environment:
                break
            case .url(let url) where url.lowercased().hasPrefix("https://"):
                break
            default:
                throw self.invalid(
                    file,
                    at: pointer + "/caFile",
                    "\"caFile\" is the CA of a proxy reached over TLS; it goes with an https:// proxy URL or "
                        + "\"environment\", not with \"\(use)\""
                )
            }
            setting.caFile = try self.path(file, at: pointer + "/caFile")
        }
        return setting
    }

    /// A file path: never the secret itself.
    mutating func path(_ json: PolicyJSON, at pointer: String) throws(PolicyFileError) -> String {
        let text = try self.string(json, at: pointer)
        if text.contains("-----BEGIN") || text.contains("\n") {
            throw PolicyFileError(
                .secretInPolicy,
                pointer: pointer,
                line: json.line,
                detail: "a policy names certificate, key and credential files by path; a key, certificate or "
                    + "password is never written into the policy"
            )
        }
        guard !text.isEmpty else { throw self.invalid(json, at: pointer, "the path is empty") }
        guard text.hasPrefix("/") || self.directory != nil else {
            throw self.invalid(
                json,
                at: pointer,
                "a relative path needs the policy file's directory, and this policy was read without one (a signed "
                    + "bundle's policy always is); give an absolute path"
            )
        }
        return text
    }

    // MARK: - Values

    mutating func pattern(_ text: String, at pointer: String, line: Int) throws(PolicyFileError) -> HostPattern {
        do throws(HostPatternError) {
            return try HostPattern(text)
        } catch {
            throw PolicyFileError(.invalidPattern, pointer: pointer, line: line, detail: error.description)
        }
    }

    /// The host pattern `text`, refused when it is one of `seen` (a pattern listed twice); added to `seen`.
    mutating func pattern(
        _ text: String,
        at pointer: String,
        line: Int,
        unlike seen: inout Set<HostPattern>
    ) throws(PolicyFileError) -> HostPattern {
        let pattern = try self.pattern(text, at: pointer, line: line)
        guard seen.insert(pattern).inserted else {
            throw PolicyFileError(
                .invalidPattern,
                pointer: pointer,
                line: line,
                detail: "the pattern \(pattern) is listed twice"
            )
        }
        return pattern
    }

    mutating func schemes(
        _ json: PolicyJSON,
        at pointer: String,
        allowed: Set<String>?
    ) throws(PolicyFileError) -> [String] {
        var result: [String] = []
        for (index, item) in try self.array(json, at: pointer).enumerated() {
            let text = try self.string(item, at: pointer + "/\(index)")
            let wellFormed =
                text.first.map { ("a"..."z").contains($0) } == true
                && text.unicodeScalars.allSatisfy {
                    ("a"..."z").contains($0) || ("0"..."9").contains($0) || "+.-".unicodeScalars.contains($0)
                }
            guard wellFormed, allowed?.contains(text) ?? true else {
                let expected = allowed.map { "one of " + $0.sorted().map { "\"\($0)\"" }.joined(separator: ", ") }
                throw self.invalid(item, at: pointer + "/\(index)", "a scheme must be \(expected ?? "lower-case")")
            }
            guard !result.contains(text) else {
                throw self.invalid(item, at: pointer + "/\(index)", "the scheme \"\(text)\" is listed twice")
            }
            result.append(text)
        }
        return result
    }

    mutating func ports(_ json: PolicyJSON, at pointer: String) throws(PolicyFileError) -> [Int] {
        var result: [Int] = []
        for (index, item) in try self.array(json, at: pointer).enumerated() {
            let port = try self.integer(item, at: pointer + "/\(index)", in: 1...65535)
            guard !result.contains(port) else {
                throw self.invalid(item, at: pointer + "/\(index)", "the port \(port) is listed twice")
            }
            result.append(port)
        }
        return result
    }

    mutating func date(_ json: PolicyJSON, at pointer: String) throws(PolicyFileError) -> Date {
        let text = try self.string(json, at: pointer)
        guard let date = PolicyFile.parseDay(text) else {
            throw self.invalid(json, at: pointer, "a date is written YYYY-MM-DD (a day of the calendar, in UTC)")
        }
        return date
    }

    /// Records the line of `pointer` and checks that `json` is an object with only `allowed` members.
    mutating func object(
        _ json: PolicyJSON,
        at pointer: String,
        allowed: Set<String>,
        context: String? = nil
    ) throws(PolicyFileError) -> [String: PolicyJSON] {
        let members = try self.orderedObject(json, at: pointer)
        var result: [String: PolicyJSON] = [:]
        for member in members {
            guard allowed.contains(member.key) else {
                let known = allowed.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
                let place = context.map { " of \($0)" } ?? ""
                throw PolicyFileError(
                    .unknownKey,
                    pointer: pointer + "/" + PolicyFile.pointerToken(member.key),
                    line: member.value.line,
                    detail: "\(PolicyJSON.quoted(member.key)) is not a member\(place) (known: \(known))"
                )
            }
            result[member.key] = member.value
        }
        return result
    }

    mutating func orderedObject(_ json: PolicyJSON, at pointer: String) throws(PolicyFileError) -> [PolicyJSON.Member] {
        self.lines[pointer] = json.line
        guard case .object(let members) = json.value else {
            throw self.wrongType(json, at: pointer, expected: "an object")
        }
        for member in members {
            self.lines[pointer + "/" + PolicyFile.pointerToken(member.key)] = member.value.line
        }
        return members
    }

    mutating func array(_ json: PolicyJSON, at pointer: String) throws(PolicyFileError) -> [PolicyJSON] {
        self.lines[pointer] = json.line
        guard case .array(let items) = json.value else {
            throw self.wrongType(json, at: pointer, expected: "a list")
        }
        for (index, item) in items.enumerated() {
            self.lines[pointer + "/\(index)"] = item.line
        }
        return items
    }

    mutating func string(_ json: PolicyJSON, at pointer: String) throws(PolicyFileError) -> String {
        self.lines[pointer] = json.line
        guard case .string(let text) = json.value else {
            throw self.wrongType(json, at: pointer, expected: "a string")
        }
        return text
    }

    mutating func bool(_ json: PolicyJSON, at pointer: String) throws(PolicyFileError) -> Bool {
        self.lines[pointer] = json.line
        guard case .bool(let flag) = json.value else {
            throw self.wrongType(json, at: pointer, expected: "true or false")
        }
        return flag
    }

    mutating func integer(
        _ json: PolicyJSON,
        at pointer: String,
        in range: ClosedRange<Int>
    ) throws(PolicyFileError) -> Int {
        self.lines[pointer] = json.line
        guard case .number(let text) = json.value, let value = Int(text) else {
            throw self.wrongType(json, at: pointer, expected: "a whole number")
        }
        guard range.contains(value) else {
            throw self.invalid(
                json,
                at: pointer,
                "\(value) is out of range (\(range.lowerBound) to \(range.upperBound))"
            )
        }
        return value
    }

    func wrongType(_ json: PolicyJSON, at pointer: String, expected: String) -> PolicyFileError {
        let found: String
        switch json.value {
        case .object: found = "an object"
        case .array: found = "a list"
        case .string: found = "a string"
        case .number(let text): found = Int(text) == nil ? "a number with a fraction or exponent" : "a number"
        case .bool: found = "true or false"
        case .null: found = "null"
        }
        return PolicyFileError(
            .wrongType,
            pointer: pointer,
            line: json.line,
            detail: "expected \(expected), found \(found)"
        )
    }

    func invalid(_ json: PolicyJSON, at pointer: String, _ detail: String) -> PolicyFileError {
        PolicyFileError(.invalidValue, pointer: pointer, line: json.line, detail: detail)
    }

    func missing(_ key: String, in pointer: String, line: Int) -> PolicyFileError {
        PolicyFileError(
            .missingKey,
            pointer: pointer + "/" + key,
            line: line,
            detail: "the member \"\(key)\" is required here"
        )
    }
}

extension PolicyFile {
    /// The start (00:00 UTC) of the day written `YYYY-MM-DD`, or nil when the text is not such a day.
    package static func parseDay(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2])
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: year, month: month, day: day)
        guard let date = calendar.date(from: components) else { return nil }
        let back = calendar.dateComponents([.year, .month, .day], from: date)
        guard back.year == year, back.month == month, back.day == day else { return nil }
        return date
    }

    /// `YYYY-MM-DD` of `date` in UTC.
    package static func formatDay(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
