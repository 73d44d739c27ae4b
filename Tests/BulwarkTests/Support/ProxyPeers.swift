import BulwarkTestSupport
import Foundation
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Real proxies for the proxy interop tests: squid (HTTP CONNECT with Basic authentication through basic_ncsa_auth,
// and, with `https_port`, the same over TLS: an HTTPS proxy) and dante (SOCKS5 with username/password against a
// system user), each run as a child process on 127.0.0.1 with a configuration of its own. `scripts/test` installs
// both and creates dante's user.

/// squid 5 on 127.0.0.1: `CONNECT` and absolute-form requests, allowed only to users of its htpasswd file; with a
/// TLS identity, also on an `https_port` (Debian's squid is built with GnuTLS, which serves it).
final class SquidProxy: Sendable {
    static let username = "bulwark"
    static let password = "squid-pass-7Hq"

    let port: Int
    /// The `https_port` (TLS to the proxy), when squid was started with a TLS identity.
    let tlsPort: Int?
    let directory: URL
    let peer: PeerProcess

    var accessLogPath: String { self.directory.appending(path: "access.log").path }

    private init(port: Int, tlsPort: Int?, directory: URL, peer: PeerProcess) {
        self.port = port
        self.tlsPort = tlsPort
        self.directory = directory
        self.peer = peer
    }

    /// Starts squid in the foreground (`-N`). Its workers run as the `proxy` user when started as root, so the
    /// directory is world-writable and its files world-readable.
    ///
    /// - Parameter tls: The certificate chain (leaf first) and key squid presents on an `https_port`; nil for none.
    static func start(tls: (chain: [Certificate], key: TestIdentity)? = nil) async throws -> SquidProxy {
        let squid = try ExternalPeers.findTool("squid", candidates: ["/usr/sbin/squid"])
        let helper = "/usr/lib/squid/basic_ncsa_auth"
        guard FileManager.default.isExecutableFile(atPath: helper) else {
            throw ExternalPeers.toolMissing("basic_ncsa_auth", looked: [helper])
        }
        let openssl = try ExternalPeers.findTool("openssl")
        let directory = try ExternalPeers.makeDirectory("squid")
        chmod(directory.path, 0o777)
        let hashed = try await ExternalPeers.run(openssl, ["passwd", "-apr1", Self.password])
        guard hashed.status == 0 else { throw ExternalPeerError(description: "openssl passwd: \(hashed.stderr)") }
        let passwd = directory.appending(path: "passwd")
        try "\(Self.username):\(hashed.output.trimmingCharacters(in: .whitespacesAndNewlines))\n"
            .write(to: passwd, atomically: true, encoding: .utf8)
        chmod(passwd.path, 0o644)
        var tlsLine = ""
        if let tls {
            let chain = try tls.chain.map { try $0.serializeAsPEM().pemString + "\n" }.joined()
            let certificate = directory.appending(path: "proxy-cert.pem")
            let key = directory.appending(path: "proxy-key.pem")
            try chain.write(to: certificate, atomically: true, encoding: .utf8)
            try (tls.key.privateKeyPEM + "\n").write(to: key, atomically: true, encoding: .utf8)
            chmod(certificate.path, 0o644)
            chmod(key.path, 0o644)
            tlsLine = "tls-cert=\(certificate.path) tls-key=\(key.path)"
        }
        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = try ExternalPeers.freePort()
            let tlsPort = tls == nil ? nil : try ExternalPeers.freePort()
            let conf = directory.appending(path: "squid.conf")
            let path = directory.path
            let httpsPort = tlsPort.map { "https_port 127.0.0.1:\($0) \(tlsLine)" } ?? ""
            try """
            http_port 127.0.0.1:\(port)
            \(httpsPort)
            pid_filename \(path)/squid.pid
            cache_log \(path)/cache.log
            access_log stdio:\(path)/access.log squid
            cache deny all
            coredump_dir \(path)
            netdb_filename none
            shutdown_lifetime 0 seconds
            auth_param basic program \(helper) \(passwd.path)
            auth_param basic realm bulwark-test
            acl authenticated proxy_auth REQUIRED
            http_access allow authenticated
            http_access deny all

            """.write(to: conf, atomically: true, encoding: .utf8)
            chmod(conf.path, 0o644)
            let peer = try PeerProcess(
                name: "squid",
                executable: squid,
                arguments: ["-N", "-f", conf.path],
                logURL: directory.appending(path: "squid.out")
            )
            do {
                try await peer.waitUntilAccepting(port: port)
                if let tlsPort { try await peer.waitUntilAccepting(port: tlsPort) }
                return SquidProxy(port: port, tlsPort: tlsPort, directory: directory, peer: peer)
            } catch {
                peer.stop()
                lastError = error
            }
        }
        throw lastError ?? ExternalPeerError(description: "squid did not start")
    }

    /// The access log's lines, once at least `count` are there (squid writes them when a transaction ends).
    func accessLog(atLeast count: Int, timeout: Duration = .seconds(10)) async throws -> [String] {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            let text = (try? String(contentsOfFile: self.accessLogPath, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n").map(String.init)
            if lines.count >= count || clock.now >= deadline { return lines }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func stop() { self.peer.stop() }
}

/// dante 1.4 on 127.0.0.1: SOCKS5 with the username method only, checked against the system user
/// `bulwarkproxy` (which `scripts/test` creates; dante reads the shadow file, so it runs as root).
final class DanteProxy: Sendable {
    static let username = "bulwarkproxy"
    static let password = "pr0xy-pass"

    let port: Int
    let directory: URL
    let peer: PeerProcess

    var logPath: String { self.directory.appending(path: "danted.log").path }

    private init(port: Int, directory: URL, peer: PeerProcess) {
        self.port = port
        self.directory = directory
        self.peer = peer
    }

    static func start() async throws -> DanteProxy {
        let danted = try ExternalPeers.findTool("danted", candidates: ["/usr/sbin/danted"])
        guard getpwnam(Self.username) != nil else {
            throw ExternalPeerError(
                description: "the system user \(Self.username) does not exist; run scripts/test, which creates it"
            )
        }
        let directory = try ExternalPeers.makeDirectory("dante")
        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = try ExternalPeers.freePort()
            let conf = directory.appending(path: "danted.conf")
            try """
            logoutput: \(directory.path)/danted.log
            internal: 127.0.0.1 port = \(port)
            external: 127.0.0.1
            socksmethod: username
            clientmethod: none
            user.privileged: root
            user.unprivileged: nobody
            client pass {
                from: 127.0.0.0/8 to: 0.0.0.0/0
                log: error
            }
            socks pass {
                from: 127.0.0.0/8 to: 0.0.0.0/0
                command: connect
                log: connect error
            }

            """.write(to: conf, atomically: true, encoding: .utf8)
            let peer = try PeerProcess(
                name: "danted",
                executable: danted,
                arguments: ["-f", conf.path, "-N", "1"],
                logURL: directory.appending(path: "danted.out")
            )
            do {
                try await peer.waitUntilAccepting(port: port)
                return DanteProxy(port: port, directory: directory, peer: peer)
            } catch {
                peer.stop()
                lastError = error
            }
        }
        throw lastError ?? ExternalPeerError(description: "danted did not start")
    }

    /// The log so far.
    func log() -> String { (try? String(contentsOfFile: self.logPath, encoding: .utf8)) ?? "" }

    func stop() { self.peer.stop() }
}
