import BulwarkAudit
import BulwarkPolicy
import Foundation

/// The tamper-evident event log's verifier.
///
/// A keyed log of three records is written once with the public writer. Input: a mode byte; with bit 0 clear, up
/// to four (2-byte position, xor mask) flips applied to the log's bytes: the verifier must report a failure for
/// any changed log (a typed ``TamperEvidentLogError``), and accept the unchanged one. With bit 0 set, the rest of
/// the input is verified as a log: it must not crash, and every failure must be a typed error.
enum EventLogTarget {
    static let key = try! TamperEvidentLog.Key(bytes: Array("bulwark fuzz hmac key, 32 bytes!".utf8))
    static let original: [UInt8] = {
        let path = FileManager.default.temporaryDirectory.appending(path: "bulwark-fuzz-\(getpid()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try! TamperEvidentLog(path: path, key: key)
        try! log.append(SecurityEvent(kind: .trustEvaluated, host: "example.com", message: "chain trusted"))
        try! log.append(
            SecurityEvent(
                kind: .redirectRefused,
                host: "api.example.org",
                requestID: 42,
                reason: "scheme_downgrade",
                message: "refused https://api.example.org/ -> http://evil.example/ \"quoted\" ü",
                details: [.from: "https://api.example.org/", .to: "http://evil.example/"],
                time: Date(timeIntervalSince1970: 1_780_000_000.25)
            )
        )
        try! log.append(SecurityEvent(kind: .trustEvaluated, message: "", details: [.reason: "\u{1}\\\n"]))
        let bytes = Array(FileManager.default.contents(atPath: path)!)
        guard (try? TamperEvidentLogVerifier.verify(bytes, key: key))?.records == 3 else {
            fatalError("the untouched log does not verify")
        }
        return bytes
    }()

    static func run(_ input: FuzzInput) {
        var input = input
        if input.byte() & 1 == 1 {
            do {
                _ = try TamperEvidentLogVerifier.verify(Array(input.rest), key: self.key)
            } catch let error as TamperEvidentLogError {
                _ = error.description
            } catch {
                violated("verifier errors are typed", "\(type(of: error))")
            }
            return
        }
        var bytes = self.original
        for _ in 0..<4 where input.rest.count >= 3 {
            let position = (Int(input.byte()) << 8 | Int(input.byte())) % bytes.count
            let mask = input.byte()
            bytes[position] ^= mask == 0 ? 1 : mask
        }
        guard bytes != self.original else { return }
        do {
            let summary = try TamperEvidentLogVerifier.verify(bytes, key: self.key)
            let changed = zip(bytes, self.original).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset)
            violated("a changed keyed log fails verification", "\(summary.records) records accepted; bytes \(changed)")
        } catch let error as TamperEvidentLogError {
            trace("detected: \(error)")
            return
        } catch {
            violated("verifier errors are typed", "\(type(of: error))")
        }
    }
}
