import ArgumentParser
import Bulwark
import Foundation
import X509

/// `--proxy`, `--proxy-user-file`, `--proxy-cacert` and `--noproxy`, read as curl reads `--proxy`, `--proxy-user`,
/// `--proxy-cacert` and `--noproxy`; without `--proxy`, the environment's proxy variables (curl's rules).
struct ProxyOptions: ParsableArguments {
    @Option(
        name: [.customShort("x"), .long],
        help: ArgumentHelp(
            "Go through this proxy: http://host:port (CONNECT tunnels), https://host:port (the same, inside TLS to the proxy), socks5://host:port or socks5h://host:port (the host name goes to the proxy). The port defaults to 443 for https, else 1080, as in curl. An empty value turns the environment's proxy off.",
            discussion:
                "Without --proxy, the proxy section of the --policy file applies; without either, https_proxy, HTTPS_PROXY, http_proxy (lower case only), all_proxy, ALL_PROXY, no_proxy and NO_PROXY are read as curl reads them.",
            valueName: "url"
        )
    )
    var proxy: String?

    @Option(
        help: ArgumentHelp(
            "Authenticate to the --proxy with the one line user:password in this file (Basic after the proxy's 407, or SOCKS5 username/password).",
            discussion: "The credentials never appear on the command line, in output or in errors.",
            valueName: "path"
        )
    )
    var proxyUserFile: String?

    @Option(
        name: .customLong("proxy-cacert"),
        help: ArgumentHelp(
            "Verify an https:// proxy's certificate against the CA certificates in this PEM or DER file instead of the system roots (the proxy's host name is checked too).",
            discussion:
                "For the proxy only: the server's certificate is still verified by --ca, --pin or the --policy file, so this CA never makes a server certificate acceptable.",
            valueName: "path"
        )
    )
    var proxyCACertificateFile: String?

    @Option(
        name: .customLong("noproxy"),
        help: ArgumentHelp(
            "Hosts that bypass the proxy, comma-separated: domain suffixes (leading dot optional), IP addresses and CIDR blocks, or * for all. Replaces no_proxy and NO_PROXY.",
            valueName: "list"
        )
    )
    var noProxy: String?

    /// The proxy these options choose.
    /// Sets `configuration.proxy` from these options, unless the `--policy` file's proxy section decides (it has one
    /// and `--proxy` is not given): `--proxy-cacert` is refused then, as the policy's `caFile` is what applies.
    func apply(to proxy: inout BulwarkClient.Proxy, policySetsProxy: Bool) throws {
        if self.proxy != nil || !policySetsProxy {
            proxy = try self.chosenProxy()
        } else if self.proxyCACertificateFile != nil {
            throw ValidationError("--proxy-cacert: the --policy file's proxy section decides; give its \"caFile\"")
        }
    }

    func chosenProxy() throws -> BulwarkClient.Proxy {
        let bypass = self.noProxy.map { NoProxyList($0) }
        guard let text = self.proxy else {
            guard self.proxyUserFile == nil else { throw ValidationError("--proxy-user-file needs --proxy") }
            let environment = ProxyEnvironment.process(noProxy: bypass)
            // As curl: --proxy-cacert applies to an https:// proxy the environment names.
            return environment.isEmpty ? .none : try self.withProxyTrust(.environment(environment))
        }
        if text.isEmpty {
            guard self.proxyUserFile == nil else { throw ValidationError("--proxy-user-file needs --proxy") }
            guard self.proxyCACertificateFile == nil else {
                throw ValidationError("--proxy-cacert needs an https:// proxy; --proxy \"\" turns the proxy off")
            }
            return .none
        }
        // The endpoint's description never holds the URL's user information.
        if self.proxyCACertificateFile != nil, let endpoint = try? ProxyEndpoint.parse(text).endpoint,
            endpoint.kind != .https
        {
            throw ValidationError("--proxy-cacert is the CA of an https:// proxy; \(endpoint) is not reached over TLS")
        }
        if let components = URLComponents(string: text), components.user != nil || components.password != nil {
            throw ValidationError(
                "-x/--proxy: a password in the proxy URL is visible to every user of the machine: give the proxy "
                    + "without it, and the one line user:password in a file with --proxy-user-file FILE"
            )
        }
        let proxy = try self.withProxyTrust(BulwarkClient.Proxy.url(text, credentials: try self.credentials()))
        return bypass.map { proxy.bypassing($0) } ?? proxy
    }

    /// `proxy`, with the CA of `--proxy-cacert` as the only roots its (HTTPS) certificate is verified against.
    private func withProxyTrust(_ proxy: BulwarkClient.Proxy) throws -> BulwarkClient.Proxy {
        guard let path = self.proxyCACertificateFile else { return proxy }
        let certificates: [Certificate]
        do {
            certificates = try CertificateLoader.certificates(atPath: path)
        } catch {
            throw ValidationError("--proxy-cacert: \(error)")
        }
        return proxy.trustingProxy(with: DefaultTrustEvaluator(roots: .custom(certificates)))
    }

    /// The credentials of `--proxy-user-file`: one line, `user:password`, read into locked memory.
    private func credentials() throws -> ProxyCredentials? {
        guard let path = self.proxyUserFile else { return nil }
        do {
            return try ProxyCredentials(contentsOfFile: path)
        } catch {
            throw ValidationError("--proxy-user-file: \(error)")
        }
    }
}
