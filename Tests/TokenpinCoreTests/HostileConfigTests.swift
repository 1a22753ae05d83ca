import Foundation
import Testing

@testable import TokenpinCore

/// Configuration files carrying numbers at and past their bounds: each is an error naming the key and the line,
/// never a trap (on code that scaled before checking, `daemon-kdf-memory = 9223372036854775807G` trapped).
@Suite struct HostileConfigTests {
    static let hostile = ["9223372036854775807", "-9223372036854775808", "-1", "0", "99999999999999999999", "1e3", ""]

    /// Every numeric key with hostile values, and the just-over-the-bound value of each.
    static let cases: [(String, String)] = {
        var cases: [(String, String)] = []
        let overBound = [
            "retries-max": "101", "kdf-target-ms": "10001", "kdf-memory-mib": "4097", "kdf-passes": "65",
            "pin-min-length": "129", "pin-max-length": "257", "pin-min-unique": "129", "daemon-idle-timeout": "3601",
            "daemon-prompt-timeout": "3601", "daemon-rate-limit": "100001", "lock-grace": "3601",
            "fail-delay": "0,86401", "daemon-kdf-memory": "1025G",
        ]
        for (key, over) in overBound.sorted(by: { $0.key < $1.key }) {
            cases += (hostile + [over]).filter { !($0 == "0" && (key == "lock-grace" || key == "fail-delay")) }.map {
                (key, $0)
            }
        }
        for value in [
            "9223372036854775807G", "9223372036854775807GiB", "9007199254740993M", "-1G", "0M",
            "9223372036854775807", "18014398509481984G",
        ] {
            cases.append(("daemon-kdf-memory", value))
        }
        for value in [
            "0,9223372036854775807", "-9223372036854775808", "1,,2", "30,-1",
            Array(repeating: "1", count: Configuration.maximumFailDelayEntries + 1).joined(separator: ","),
        ] {
            cases.append(("fail-delay", value))
        }
        return cases
    }()

    @Test(arguments: cases)
    func hostileNumberIsAnErrorNamingKeyAndLine(_ key: String, _ value: String) {
        var configuration = Configuration()
        do {
            try configuration.apply(text: "# hostile\nretries-max = 5\n\(key) = \(value)\n", file: "hostile.conf")
            Issue.record("accepted \(key) = \(value)")
        } catch {
            #expect(error.file == "hostile.conf")
            #expect(error.line == 3, "\(error)")
            #expect(error.message.contains(key), "\(error.message)")
        }
    }

    @Test func largestAcceptedValuesStayUsable() throws {
        var configuration = Configuration()
        try configuration.apply(
            text: "daemon-kdf-memory = 1024G\nkdf-memory-mib = 4096\nfail-delay = 86400\n",
            file: "max.conf")
        #expect(configuration.daemon.kdfMemoryMiB == 1 << 20)
        #expect(configuration.daemon.kdfMemoryMiB.multipliedReportingOverflow(by: 1024).overflow == false)
        #expect(configuration.failDelay == [86_400])
    }
}
