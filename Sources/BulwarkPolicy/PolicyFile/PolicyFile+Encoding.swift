import Foundation

extension PolicyFile {
    /// The policy as a `bulwark-policy/1` file (UTF-8 JSON, two-space indentation, ending with a newline), which
    /// decodes to an equal policy. Members that hold their default value are left out; certificates read from files
    /// are written as the same paths.
    public func encoded() -> [UInt8] {
        Array(self.encodedText().utf8)
    }

    /// ``encoded()`` as text.
    public func encodedText() -> String {
        PolicyJSON(.object(self.members())).formatted()
    }

    private func members() -> [PolicyJSON.Member] {
        var members: [PolicyJSON.Member] = [.init("format", .string(Self.format))]
        if self.insecure { members.append(.init("insecure", .bool(true))) }
        if let version = self.minimumTLSVersion {
            members.append(.init("tls", .object([.init("minimumVersion", .string(version.description))])))
        }
        if let allowlist = self.allowlist {
            members.append(.init("allowlist", .array(allowlist.map(Self.encode))))
        }
        members.append(
            .init("hosts", .object(self.hosts.map { .init($0.pattern.description, Self.encode($0.evaluator)) }))
        )
        if let other = self.otherHosts {
            members.append(.init("otherHosts", Self.encode(other)))
        }
        if let redirects = self.redirects {
            members.append(.init("redirects", Self.encode(redirects)))
        }
        if !self.credentialScopes.isEmpty {
            members.append(.init("credentialScopes", .object(self.credentialScopes.map(Self.encode))))
        }
        if !self.clientCertificates.isEmpty {
            members.append(.init("clientCertificates", .object(self.clientCertificates.map(Self.encode))))
        }
        if let proxy = self.proxy {
            var fields = Self.encode(proxy.setting)
            if !proxy.hosts.isEmpty {
                fields.append(
                    .init(
                        "hosts",
                        .object(proxy.hosts.map { .init($0.pattern.description, .object(Self.encode($0.setting))) })
                    )
                )
            }
            members.append(.init("proxy", .object(fields)))
        }
        if let list = self.certificateTransparency {
            var fields: [PolicyJSON.Member] = []
            if let expires = list.expires { fields.append(.init("expires", .string(PolicyFile.formatDay(expires)))) }
            fields.append(.init("logs", .array(list.logs.map(Self.encode))))
            members.append(.init("certificateTransparency", .object(fields)))
        }
        return members
    }

    private static func encode(_ log: CertificateTransparencyLog) -> PolicyJSON {
        var fields: [PolicyJSON.Member] = [
            .init("key", .string(Data(log.key).base64EncodedString())),
            .init("operator", .string(log.operatorName)),
            .init("description", .string(log.name)),
        ]
        switch log.state.backing {
        case .usable: break
        case .qualified: fields.append(.init("state", .string("qualified")))
        case .readOnly(let since):
            fields.append(.init("state", .string("readonly")))
            if let since { fields.append(.init("stateTimestamp", .string(PolicyFile.formatDay(since)))) }
        case .retired(let at):
            fields.append(.init("state", .string("retired")))
            fields.append(.init("stateTimestamp", .string(PolicyFile.formatDay(at))))
        case .other(let name):
            fields.append(.init("state", .string(name)))
        }
        if let interval = log.temporalInterval {
            fields.append(
                .init(
                    "temporalInterval",
                    .object([
                        .init("start", .string(PolicyFile.formatDay(interval.lowerBound))),
                        .init("end", .string(PolicyFile.formatDay(interval.upperBound))),
                    ])
                )
            )
        }
        return PolicyJSON(.object(fields))
    }

    private static func encode(_ evaluator: Evaluator) -> PolicyJSON {
        var members: [PolicyJSON.Member] = [.init("evaluator", .string(evaluator.kind.description))]
        switch evaluator.kind {
        case .publicKeys:
            if let pinSet = evaluator.pinSet {
                members.append(.init("pins", .array(pinSet.pins.map { PolicyJSON(.string($0.description)) })))
                if let expiration = pinSet.expiration {
                    members.append(.init("expires", .string(PolicyFile.formatDay(expiration))))
                }
                if pinSet.enforcement == .reportOnly { members.append(.init("reportOnly", .bool(true))) }
                if pinSet.allowsSinglePin { members.append(.init("allowSinglePin", .bool(true))) }
            }
        case .pinnedCertificates:
            members.append(.init("certificates", .array(evaluator.certificates.map(Self.encode))))
            if evaluator.acceptSelfSignedCertificates {
                members.append(.init("acceptSelfSignedCertificates", .bool(true)))
            }
        case .composite:
            members.append(.init("evaluators", .array(evaluator.members.map(Self.encode))))
        default:
            break
        }
        if evaluator.kind == .disabled { return PolicyJSON(.object(members)) }
        let usesRoots = evaluator.kind != .composite
        if usesRoots && evaluator.roots != Roots() {
            var roots: [PolicyJSON.Member] = []
            if !evaluator.roots.system { roots.append(.init("system", .bool(false))) }
            if !evaluator.roots.certificates.isEmpty {
                roots.append(.init("certificates", .array(evaluator.roots.certificates.map(Self.encode))))
            }
            members.append(.init("roots", .object(roots)))
        }
        if (evaluator.kind == .publicKeys || evaluator.kind == .pinnedCertificates)
            && !evaluator.performDefaultValidation
        {
            members.append(.init("performDefaultValidation", .bool(false)))
        }
        if usesRoots && !evaluator.validateHost { members.append(.init("validateHost", .bool(false))) }
        let options = evaluator.options
        let defaults = ValidationOptions()
        if options != defaults {
            var fields: [PolicyJSON.Member] = []
            if options.maximumPresentedCertificates != defaults.maximumPresentedCertificates {
                fields.append(
                    .init("maximumPresentedCertificates", .number(String(options.maximumPresentedCertificates)))
                )
            }
            if let intermediates = options.maximumIntermediates {
                fields.append(.init("maximumIntermediates", .number(String(intermediates))))
            }
            if options.requireServerAuthExtendedKeyUsage != defaults.requireServerAuthExtendedKeyUsage {
                fields.append(
                    .init("requireServerAuthExtendedKeyUsage", .bool(options.requireServerAuthExtendedKeyUsage))
                )
            }
            if options.enforcesRootProfile != defaults.enforcesRootProfile {
                fields.append(.init("enforcesRootProfile", .bool(options.enforcesRootProfile)))
            }
            members.append(.init("validation", .object(fields)))
        }
        if let revocation = evaluator.revocation {
            var fields: [PolicyJSON.Member] = [
                .init("method", .string(revocation.method.description)),
                .init("mode", .string(revocation.mode.description)),
            ]
            if revocation.networkAccessDisabled { fields.append(.init("networkAccessDisabled", .bool(true))) }
            members.append(.init("revocation", .object(fields)))
        }
        if let transparency = evaluator.certificateTransparency {
            members.append(
                .init("certificateTransparency", .string(transparency == .reportOnly ? "report" : "\(transparency)"))
            )
        }
        return PolicyJSON(.object(members))
    }

    private static func encode(_ source: CertificateSource) -> PolicyJSON {
        if let file = source.file { return PolicyJSON(.object([.init("file", .string(file))])) }
        return PolicyJSON(.object([.init("pem", .string(source.pem ?? ""))]))
    }

    private static func encode(_ entry: AllowlistEntry) -> PolicyJSON {
        guard entry.schemes != nil || entry.ports != nil else { return PolicyJSON(.string(entry.pattern.description)) }
        var members: [PolicyJSON.Member] = [.init("pattern", .string(entry.pattern.description))]
        if let schemes = entry.schemes { members.append(.init("schemes", Self.strings(schemes))) }
        if let ports = entry.ports { members.append(.init("ports", Self.numbers(ports))) }
        return PolicyJSON(.object(members))
    }

    private static func encode(_ redirects: Redirects) -> PolicyJSON {
        let defaults = Redirects()
        var members: [PolicyJSON.Member] = []
        if !redirects.follow { members.append(.init("follow", .bool(false))) }
        if !redirects.allowedHosts.isEmpty {
            members.append(.init("allowedHosts", Self.strings(redirects.allowedHosts.map(\.description))))
        }
        if redirects.maximumHops != defaults.maximumHops {
            members.append(.init("maximumHops", .number(String(redirects.maximumHops))))
        }
        if !redirects.allowedPorts.isEmpty {
            members.append(.init("allowedPorts", Self.numbers(redirects.allowedPorts)))
        }
        if redirects.allowedSchemes != defaults.allowedSchemes {
            members.append(.init("allowedSchemes", Self.strings(redirects.allowedSchemes)))
        }
        if redirects.allowsHTTPSToHTTP { members.append(.init("allowHTTPSToHTTP", .bool(true))) }
        return PolicyJSON(.object(members))
    }

    private static func encode(_ entry: CredentialScopeEntry) -> PolicyJSON.Member {
        switch entry.rule {
        case .under(let base):
            return .init(entry.name, .object([.init("under", .string(base))]))
        case .hosts(let patterns, let schemes, let ports):
            var members: [PolicyJSON.Member] = [.init("hosts", Self.strings(patterns.map(\.description)))]
            if schemes != ["https"] { members.append(.init("schemes", Self.strings(schemes))) }
            if let ports { members.append(.init("ports", Self.numbers(ports))) }
            return .init(entry.name, .object(members))
        }
    }

    private static func encode(_ entry: ClientCertificate) -> PolicyJSON.Member {
        var members: [PolicyJSON.Member] = []
        if let file = entry.certificateFile { members.append(.init("certificate", .string(file))) }
        if let file = entry.keyFile { members.append(.init("key", .string(file))) }
        if let file = entry.pkcs12File { members.append(.init("pkcs12", .string(file))) }
        if let file = entry.passphraseFile { members.append(.init("passphraseFile", .string(file))) }
        return .init(entry.pattern.description, .object(members))
    }

    private static func encode(_ setting: Proxy.Setting) -> [PolicyJSON.Member] {
        var members: [PolicyJSON.Member] = [.init("use", .string(setting.use.description))]
        if let file = setting.credentialsFile { members.append(.init("credentialsFile", .string(file))) }
        if let file = setting.caFile { members.append(.init("caFile", .string(file))) }
        return members
    }

    private static func strings(_ values: [String]) -> PolicyJSON.Value {
        .array(values.map { PolicyJSON(.string($0)) })
    }

    private static func numbers(_ values: [Int]) -> PolicyJSON.Value {
        .array(values.map { PolicyJSON(.number(String($0))) })
    }
}

extension PolicyJSON.Member {
    fileprivate init(_ key: String, _ value: PolicyJSON.Value) {
        self.init(key, PolicyJSON(value))
    }
}
