import ArgumentParser
import Bulwark
import Foundation

/// `--proxy`, `--proxy-user-file` and `--noproxy`, read as curl reads `--proxy`, `--proxy-user` and `--noproxy`; without
/// `--proxy`, the environment's proxy variables (curl's rules).
struct ProxyOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Go through this proxy: http://host:port (CONNECT tunnels), socks5://host:port or socks5h://host:port (the host name goes to the proxy). The port defaults to 1080, as in curl. An empty value turns the environment's proxy off.",
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
        name: .customLong("noproxy"),
        help: ArgumentHelp(
            "Hosts that bypass the proxy, comma-separated: domain suffixes (leading dot optional), IP addresses and CIDR blocks, or * for all. Replaces no_proxy and NO_PROXY.",
            valueName: "list"
        )
    )
    var noProxy: String?

    /// The proxy these options choose.
    func chosenProxy() throws -> BulwarkClient.Proxy {
        let bypass = self.noProxy.map { NoProxyList($0) }
        guard let text = self.proxy else {
            guard self.proxyUserFile == nil else { throw ValidationError("--proxy-user-file needs --proxy") }
            let environment = ProxyEnvironment.process(noProxy: bypass)
            return environment.isEmpty ? .none : .environment(environment)
        }
        if text.isEmpty {
            guard self.proxyUserFile == nil else { throw ValidationError("--proxy-user-file needs --proxy") }
            return .none
        }
        let proxy = BulwarkClient.Proxy.url(text, credentials: try self.credentials())
        return bypass.map { proxy.bypassing($0) } ?? proxy
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
