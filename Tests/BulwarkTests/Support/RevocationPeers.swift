import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A certificate authority made by `openssl ca`, with its database (`index.txt`), an OCSP responder certificate
/// (EKU OCSPSigning) and leaves for `api.bulwark.test` whose AIA names an OCSP responder on 127.0.0.1:`ocspPort` and
/// whose CRL distribution point is `http://127.0.0.1:crlPort/ca.crl`:
/// - `good`: issued and in the database;
/// - `revoked`: revoked for key compromise (in the database and in the CRL);
/// - `unknown`: signed by the CA but never entered in its database (the responder answers `unknown`);
/// - `unreachable`: issued, its CRL distribution point and OCSP responder on a port nothing listens on.
struct RevocationAuthority {
    static let configuration = """
        [ ca ]
        default_ca = CA_default
        [ CA_default ]
        dir = ./ca
        database = $dir/index.txt
        new_certs_dir = $dir/newcerts
        serial = $dir/serial
        crlnumber = $dir/crlnumber
        default_md = sha256
        default_crl_days = 7
        policy = policy_any
        copy_extensions = none
        unique_subject = no
        [ policy_any ]
        commonName = supplied
        [ req ]
        distinguished_name = dn
        [ dn ]
        [ v3_ca ]
        basicConstraints = critical,CA:true
        keyUsage = critical,keyCertSign,cRLSign
        subjectKeyIdentifier = hash
        [ v3_ocsp ]
        basicConstraints = critical,CA:false
        keyUsage = critical,digitalSignature
        extendedKeyUsage = OCSPSigning
        [ v3_leaf ]
        basicConstraints = critical,CA:false
        keyUsage = critical,digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = DNS:api.bulwark.test
        authorityInfoAccess = OCSP;URI:http://127.0.0.1:OCSP_PORT
        crlDistributionPoints = URI:http://127.0.0.1:CRL_PORT/ca.crl
        [ v3_unreachable ]
        basicConstraints = critical,CA:false
        keyUsage = critical,digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = DNS:api.bulwark.test
        authorityInfoAccess = OCSP;URI:http://127.0.0.1:CLOSED_PORT
        crlDistributionPoints = URI:http://127.0.0.1:CLOSED_PORT/ca.crl
        [ crl_ext ]
        authorityKeyIdentifier = keyid:always

        """

    /// `$1`: the CA's name. Writes ca.pem, responder.pem/.key, good/revoked/unknown/unreachable.pem/.key, ca.crl
    /// (current), ca-expired.crl (both times in the past), and the database for `openssl ocsp`.
    static let script = """
        set -e
        mkdir -p ca/newcerts && touch ca/index.txt && echo 1000 > ca/serial && echo 01 > ca/crlnumber
        key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.key"; }
        key ca
        openssl req -x509 -new -key ca.key -subj "/CN=$1" -days 30 -config ca.cnf -extensions v3_ca -out ca.pem
        issue() {
          key "$1"
          openssl req -new -key "$1.key" -subj "/CN=$2" -config ca.cnf -out "$1.csr"
          openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -extensions "$3" -days 7 \\
            -in "$1.csr" -out "$1.pem" -notext 2>/dev/null
        }
        issue responder "$1 OCSP Responder" v3_ocsp
        issue good api.bulwark.test v3_leaf
        issue revoked api.bulwark.test v3_leaf
        issue unreachable api.bulwark.test v3_unreachable
        key unknown
        openssl req -new -key unknown.key -subj "/CN=api.bulwark.test" -config ca.cnf -out unknown.csr
        openssl x509 -req -in unknown.csr -CA ca.pem -CAkey ca.key -set_serial 0x7A7A7A -days 7 \\
          -extfile ca.cnf -extensions v3_leaf -out unknown.pem 2>/dev/null
        openssl ca -config ca.cnf -cert ca.pem -keyfile ca.key -revoke revoked.pem -crl_reason keyCompromise 2>/dev/null
        openssl ca -config ca.cnf -cert ca.pem -keyfile ca.key -gencrl -crlexts crl_ext -out ca.crl 2>/dev/null
        past() { date -u -d "$1" +%Y%m%d%H%M%SZ; }
        openssl ca -config ca.cnf -cert ca.pem -keyfile ca.key -gencrl -crlexts crl_ext \\
          -crl_lastupdate "$(past '3 days ago')" -crl_nextupdate "$(past '2 days ago')" -out ca-expired.crl 2>/dev/null
        """

    let directory: URL
    let ocspPort: Int
    let crlPort: Int
    let closedPort: Int
    let root: TestIdentity
    let responder: TestIdentity
    let good: TestIdentity
    let revoked: TestIdentity
    let unknown: TestIdentity
    let unreachable: TestIdentity

    /// Makes the authority in a fresh directory, with its OCSP responder and CRL server on ports free a moment ago.
    static func make(named name: String = "Bulwark Revocation Test CA") async throws -> RevocationAuthority {
        let directory = try ExternalPeers.makeDirectory("revocation-ca")
        let ocspPort = try ExternalPeers.freePort()
        let crlPort = try ExternalPeers.freePort()
        let closedPort = try ExternalPeers.freePort()
        let configuration = Self.configuration
            .replacingOccurrences(of: "OCSP_PORT", with: String(ocspPort))
            .replacingOccurrences(of: "CRL_PORT", with: String(crlPort))
            .replacingOccurrences(of: "CLOSED_PORT", with: String(closedPort))
        try configuration.write(to: directory.appending(path: "ca.cnf"), atomically: true, encoding: .utf8)
        let result = try await ProcessRunner.run(
            try ExternalPeers.findTool("bash"),
            ["-c", "cd \"$2\" && " + Self.script, "make-ca", name, directory.path]
        )
        guard result.status == 0 else {
            throw ExternalPeerError(description: "openssl ca failed (\(result.status)): \(result.stderr)")
        }
        func identity(_ name: String) throws -> TestIdentity {
            let certificate = try Certificate(
                pemEncoded: try String(contentsOf: directory.appending(path: "\(name).pem"), encoding: .utf8)
            )
            let key = try Certificate.PrivateKey(
                pemEncoded: try String(contentsOf: directory.appending(path: "\(name).key"), encoding: .utf8)
            )
            return TestIdentity(certificate: certificate, privateKey: key)
        }
        return RevocationAuthority(
            directory: directory,
            ocspPort: ocspPort,
            crlPort: crlPort,
            closedPort: closedPort,
            root: try identity("ca"),
            responder: try identity("responder"),
            good: try identity("good"),
            revoked: try identity("revoked"),
            unknown: try identity("unknown"),
            unreachable: try identity("unreachable")
        )
    }

    /// The path to a file of the authority.
    func path(_ name: String) -> String { self.directory.appending(path: name).path }

    /// The chain a server with `leaf` presents (the leaf alone: the CA is the root).
    func chain(_ leaf: TestIdentity) -> TestChain {
        TestChain(root: self.root, intermediate: nil, leaf: leaf, presentedChain: [leaf.certificate])
    }

    /// Starts `openssl ocsp` as the CA's responder on `ocspPort`, answering from the CA's database, signing with
    /// the given certificate and key (the responder's by default); next update in a day. (OpenSSL 3.0's responder
    /// takes a port only and listens on every address; the tests reach it on 127.0.0.1.)
    func startResponder(signerCertificate: String? = nil, signerKey: String? = nil) async throws -> PeerProcess {
        let openssl = try ExternalPeers.findTool("openssl")
        let peer = try PeerProcess(
            name: "openssl ocsp",
            executable: openssl,
            arguments: [
                "ocsp", "-index", self.path("ca/index.txt"), "-port", String(self.ocspPort),
                "-rsigner", signerCertificate ?? self.path("responder.pem"),
                "-rkey", signerKey ?? self.path("responder.key"), "-CA", self.path("ca.pem"),
                "-ndays", "1", "-ignore_err",
            ],
            logURL: self.directory.appending(path: "ocsp.log")
        )
        // Not peer.waitUntilAccepting: openssl ocsp serves one connection at a time and a probe connection that
        // closes without a request leaves it stuck reading it. Its log says when it listens.
        let deadline = ContinuousClock.now.advanced(by: ExternalPeers.startTimeout)
        while ContinuousClock.now < deadline {
            guard peer.process.isRunning else {
                throw ExternalPeerError(
                    description: "openssl ocsp exited with status \(peer.process.terminationStatus); its output:\n"
                        + peer.logTail
                )
            }
            if peer.logTail.contains("waiting for OCSP client connections") { return peer }
            try await Task.sleep(for: .milliseconds(20))
        }
        peer.stop()
        throw ExternalPeerError(description: "openssl ocsp did not start listening; its output:\n\(peer.logTail)")
    }

    /// An answer of the CA's responder for the certificate in `certificate` (a file name: `good.pem`), made by
    /// `openssl ocsp` from a request of its own (with a random nonce, or none) without any network: what a server
    /// replaying an old answer, or a sidecar that fetched one, would hand over.
    func recordedResponse(for certificate: String, nonce: Bool) async throws -> [UInt8] {
        let openssl = try ExternalPeers.findTool("openssl")
        let name = (certificate as NSString).deletingPathExtension
        let made = try await ProcessRunner.run(
            try ExternalPeers.findTool("bash"),
            [
                "-c",
                """
                set -e; cd "$1"
                "$2" ocsp -issuer ca.pem -cert "$3" "$4" -reqout "$5.req"
                "$2" ocsp -index ca/index.txt -rsigner responder.pem -rkey responder.key -CA ca.pem -ndays 1 \
                  -reqin "$5.req" -respout "$5.resp"
                """,
                "recorded-response", self.directory.path, openssl.path, certificate, nonce ? "-nonce" : "-no_nonce",
                name,
            ]
        )
        guard made.status == 0 else {
            throw ExternalPeerError(description: "openssl ocsp could not answer (\(made.status)): \(made.stderr)")
        }
        return try [UInt8](Data(contentsOf: self.directory.appending(path: "\(name).resp")))
    }

    /// Removes the authority's directory.
    func remove() {
        try? FileManager.default.removeItem(at: self.directory)
    }
}

/// nginx serving a directory over plain HTTP on 127.0.0.1 (CRLs, or a recorded OCSP response for any path).
final class PlainHTTPServer: Sendable {
    let port: Int
    let directory: URL
    let peer: PeerProcess

    private init(port: Int, directory: URL, peer: PeerProcess) {
        self.port = port
        self.directory = directory
        self.peer = peer
    }

    /// Serves the files of `directory/html` on `port`; with `everyPath`, that one file answers every GET. `extra`
    /// is added to the server block (more locations).
    static func start(port: Int, everyPath file: String? = nil, extra: String = "") async throws -> PlainHTTPServer {
        let nginx = try ExternalPeers.findTool("nginx", candidates: ["/usr/sbin/nginx"])
        let directory = try ExternalPeers.makeDirectory("plain-http")
        let html = directory.appending(path: "html")
        try FileManager.default.createDirectory(at: html, withIntermediateDirectories: true)
        let location =
            file.map {
                "location / { default_type application/ocsp-response; try_files /\($0) =404; }"
            } ?? "location / { types { application/pkix-crl crl; } }"
        let configuration = """
            daemon off;
            worker_processes 1;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/error.log;
            events { worker_connections 64; }
            http {
                access_log \(directory.path)/access.log;
                client_body_temp_path \(directory.path)/tmp;
                proxy_temp_path \(directory.path)/tmp;
                fastcgi_temp_path \(directory.path)/tmp;
                uwsgi_temp_path \(directory.path)/tmp;
                scgi_temp_path \(directory.path)/tmp;
                server {
                    listen 127.0.0.1:\(port);
                    root \(html.path);
                    \(extra)
                    \(location)
                }
            }

            """
        try configuration.write(to: directory.appending(path: "nginx.conf"), atomically: true, encoding: .utf8)
        let peer = try PeerProcess(
            name: "nginx (plain HTTP)",
            executable: nginx,
            arguments: [
                "-p", directory.path, "-c", directory.appending(path: "nginx.conf").path,
                "-e", directory.appending(path: "error.log").path,
            ],
            logURL: directory.appending(path: "nginx.out")
        )
        try await peer.waitUntilAccepting(port: port)
        return PlainHTTPServer(port: port, directory: directory, peer: peer)
    }

    /// Puts `bytes` at `/name`.
    func serve(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: self.directory.appending(path: "html/\(name)"))
    }

    /// The request lines nginx logged for every request it answered before this call. nginx writes a request's line
    /// after the answer's last byte is sent, so a client can hold the answer before the line exists (a CI run once
    /// read an empty log after a fetch); the one worker handles its events in turn, so once a request of our own over
    /// a new connection is answered, every earlier one has been logged. Those barrier requests are left out.
    func requests() -> [String] {
        ExternalPeers.exchange(port: self.port, request: "GET \(Self.barrierPath) HTTP/1.0\r\n\r\n")
        return self.loggedRequests().filter { !$0.hasPrefix("GET \(Self.barrierPath) ") }
    }

    /// The request lines logged once `condition` holds for them, or at `timeout` (the lines then). A barrier does not
    /// cover a request nginx answered before reading its whole body (a refused POST): nginx keeps reading and
    /// discarding the body on that connection, and logs the request only when that ends, whatever it serves meanwhile.
    func requests(until condition: ([String]) -> Bool, timeout: Duration = .seconds(5)) async -> [String] {
        let clock = ContinuousClock()
        let end = clock.now + timeout
        var lines = self.requests()
        while !condition(lines), clock.now < end {
            try? await Task.sleep(for: .milliseconds(20))
            lines = self.requests()
        }
        return lines
    }

    /// The request lines in the access log as it is now, without waiting.
    func loggedRequests() -> [String] {
        let text = (try? String(contentsOf: self.directory.appending(path: "access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: "\"")
            return parts.count > 1 ? String(parts[1]) : nil
        }
    }

    private static let barrierPath = "/.bulwark-log-barrier"

    func stop() {
        self.peer.stop()
        try? FileManager.default.removeItem(at: self.directory)
    }
}

/// A TCP listener on 127.0.0.1 that never accepts: the kernel completes connections into its backlog, so a client
/// connects, sends its request and then waits forever for an answer (a stalled responder).
final class StalledListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init(port: Int) throws {
        #if os(Linux)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw ExternalPeerError(description: "socket() failed") }
        var reuse: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw ExternalPeerError(description: "could not listen on 127.0.0.1:\(port)")
        }
        self.port = port
        self.descriptor = fd
    }

    func stop() { close(self.descriptor) }
}
