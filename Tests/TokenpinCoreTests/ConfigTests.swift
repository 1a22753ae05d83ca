import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

@Suite struct ConfigTests {
    @Test func defaults() {
        let configuration = Configuration()
        #expect(configuration.retriesMax == 5)
        #expect(configuration.kdfTargetMilliseconds == 300)
        #expect(configuration.policy.minLength == 6 && configuration.policy.maxLength == 32)
        #expect(configuration.policy.charset == .digits && configuration.policy.minUnique == 3)
        #expect(configuration.mode == .either && configuration.fallback == .allow)
        #expect(configuration.cardTimeoutSeconds == 10)
    }

    @Test func parsesKeysCommentsAndQuotes() throws {
        var configuration = Configuration()
        try configuration.apply(
            text: """
                # tokenpin settings
                retries-max = 3
                fail-delay = 0, 0, 30,300   # seconds
                pin-charset = alnum
                pin-min-length=8
                prompt-pin = "Your PIN"
                color-error = bright-red
                mode = both
                fallback = deny
                reader = Yubico*
                card-timeout = 3

                """, file: "t.conf")
        #expect(configuration.retriesMax == 3)
        #expect(configuration.failDelay == [0, 0, 30, 300])
        #expect(configuration.policy.charset == .alnum && configuration.policy.minLength == 8)
        #expect(configuration.appearance.promptPIN == "Your PIN")
        #expect(configuration.appearance.errorColor == "bright-red")
        #expect(configuration.mode == .both && configuration.fallback == .deny)
        #expect(configuration.reader == "Yubico*")
        #expect(configuration.cardTimeoutSeconds == 3)
    }

    @Test(arguments: [
        ("retries-max = 0", 1, "retries-max"),
        ("\n\nretries-max = five", 3, "retries-max"),
        ("colour = red", 1, "unknown key"),
        ("just text", 1, "key = value"),
        ("pin-charset = hex", 1, "digits, alnum, any"),
        ("fail-delay = 1,x", 1, "fail-delay"),
        ("color-dots = mauve", 1, "unknown colour"),
        ("mode = sometimes", 1, "either, both"),
        ("dot = ab", 1, "single character"),
        ("kdf-memory-mib = 2", 1, "kdf-memory-mib"),
        ("card-timeout = 0", 1, "card-timeout must be a whole number from 1 to 600"),
        ("card-timeout = 601", 1, "card-timeout"),
        ("pkcs11-module = libsofthsm2.so", 1, "pkcs11-module must be the absolute path"),
        ("pkcs11-module = ../lib/evil.so", 1, "pkcs11-module must be the absolute path"),
        ("pkcs11-module = /usr/lib/a\u{1B}[2J.so", 1, "without control characters"),
        ("pkcs11-module = /" + String(repeating: "a", count: 4100), 1, "at most 4096 bytes"),
    ])
    func errorsNameFileAndLine(text: String, line: Int, fragment: String) {
        var configuration = Configuration()
        #expect {
            try configuration.apply(text: text, file: "/etc/tokenpin/tokenpin.conf")
        } throws: { error in
            guard let error = error as? ConfigError else { return false }
            return error.file == "/etc/tokenpin/tokenpin.conf" && error.line == line && error.message.contains(fragment)
        }
    }

    @Test(
        arguments: [
            ("pkcs11-module = /usr/lib/softhsm/libsofthsm2.so", "/usr/lib/softhsm/libsofthsm2.so"),
            ("pkcs11-module = \"/opt/vendor lib/pkcs11.so\"", "/opt/vendor lib/pkcs11.so"),
            ("pkcs11-module = p11-kit", nil), ("pkcs11-module =", nil),
        ] as [(String, String?)])
    func pkcs11Module(text: String, module: String?) throws {
        var configuration = Configuration()
        configuration.pkcs11Module = "/before.so"
        try configuration.apply(text: text, file: "/etc/tokenpin/tokenpin.conf")
        #expect(configuration.pkcs11Module == module)
    }

    @Test func maxBelowMinIsRefused() {
        var configuration = Configuration()
        #expect {
            try configuration.apply(text: "pin-min-length = 10\npin-max-length = 8", file: "x")
        } throws: { isConfigError($0, line: 0, mentioning: "pin-max-length") }
    }

    @Test func laterFilesOverrideEarlierOnes() throws {
        let directory = temporaryDirectory("config")
        try FileManager.default.createDirectory(atPath: directory + "/etc/conf.d", withIntermediateDirectories: true)
        try "retries-max = 4\nkdf-target-ms = 500\n".write(
            toFile: directory + "/etc/tokenpin.conf", atomically: true, encoding: .utf8)
        try "retries-max = 7\n".write(toFile: directory + "/etc/conf.d/20-site.conf", atomically: true, encoding: .utf8)
        try "retries-max = 6\n".write(toFile: directory + "/etc/conf.d/10-base.conf", atomically: true, encoding: .utf8)
        try "pin-min-unique = 4\n".write(toFile: directory + "/user.conf", atomically: true, encoding: .utf8)
        let files = Configuration.standardFiles(
            environment: ["XDG_CONFIG_HOME": directory + "/xdg"], systemDirectory: directory + "/etc")
        #expect(files.count == 4)
        let configuration = try Configuration.load(files: files, explicitFile: directory + "/user.conf")
        #expect(configuration.retriesMax == 7)
        #expect(configuration.kdfTargetMilliseconds == 500)
        #expect(configuration.policy.minUnique == 4)
        #expect {
            try Configuration.load(files: [], explicitFile: directory + "/missing.conf")
        } throws: {
            isConfigError($0, file: directory + "/missing.conf", line: 0, mentioning: "no such configuration file")
        }
    }

    @Test func siteBlocklistFileIsLoaded() throws {
        let directory = temporaryDirectory("config")
        try "# site list\n482916\n  739154  # spaces\n\n".write(
            toFile: directory + "/block", atomically: true, encoding: .utf8)
        var configuration = Configuration()
        try configuration.apply(text: "pin-blocklist = \(directory)/block", file: "x")
        try configuration.loadBlocklist()
        #expect(configuration.policy.siteBlocklist.count == 2)
        #expect(configuration.policy.violation(for: pin("739154")) == .siteBlocklist)
    }

    @Test func colourNames() {
        #expect(TextColour(name: "red") == .basic(.red))
        #expect(TextColour(name: "bright-blue") == .bright(.blue))
        #expect(TextColour(name: "208") == .palette(208))
        #expect(TextColour(name: "bold") == .attribute(.bold))
        #expect(TextColour(name: "mauve") == nil)
        #expect(TextColour(name: "bright-bold") == nil)
        #expect(TextColour(name: "bright-default") == nil)
        #expect(TextColour(name: "256") == nil)
        #expect(TextColour(name: "+5") == nil)
    }
}

@Suite struct LoggerTests {
    @Test func capturesStructuredRecordsAboveTheLevel() {
        let capture = LogCapture()
        let logger = capture.logger(level: .info)
        logger.debug("hidden")
        logger.info("verified", [("user", "alice"), ("pin.remaining", "4")])
        #expect(capture.lines == ["info test: verified user=alice pin.remaining=4"])
    }
}

@Suite struct DaemonConfigTests {
    @Test(arguments: [("1024", 1024), ("512M", 512), ("512MiB", 512), ("1G", 1024), ("2GiB", 2048), ("8", 8)])
    func daemonKDFMemorySizes(text: String, mib: Int) throws {
        var configuration = Configuration()
        try configuration.apply(text: "daemon-kdf-memory = \(text)", file: "x")
        #expect(configuration.daemon.kdfMemoryMiB == mib)
    }

    @Test(arguments: ["0", "4M", "1T", "lots", "-1G", ""])
    func daemonKDFMemoryRejectsBadSizes(text: String) {
        var configuration = Configuration()
        #expect {
            try configuration.apply(text: "daemon-kdf-memory = \(text)", file: "x")
        } throws: { isConfigError($0, line: 1, mentioning: "daemon-kdf-memory") }
    }

    @Test func daemonDefaultsAndLimits() throws {
        var configuration = Configuration()
        #expect(configuration.daemon.kdfMemoryMiB == 1024)
        #expect(configuration.daemon.idleTimeoutSeconds == 30)
        try configuration.apply(
            text: "daemon-idle-timeout = 5\ndaemon-prompt-timeout = 60\ndaemon-rate-limit = 10",
            file: "x")
        #expect(configuration.daemon.idleTimeoutSeconds == 5)
        #expect(configuration.daemon.promptTimeoutSeconds == 60)
        #expect(configuration.daemon.requestsPerMinute == 10)
        #expect {
            try configuration.apply(text: "daemon-idle-timeout = 0", file: "x")
        } throws: { isConfigError($0, line: 1, mentioning: "daemon-idle-timeout") }
    }
}

@Suite struct CardRemovalConfigTests {
    @Test func onCardRemovalAndGrace() throws {
        var configuration = Configuration()
        #expect(configuration.daemon.onCardRemoval == .none)
        #expect(configuration.daemon.lockGraceSeconds == 0)
        try configuration.apply(text: "on-card-removal = lock\nlock-grace = 10", file: "x")
        #expect(configuration.daemon.onCardRemoval == .lock)
        #expect(configuration.daemon.lockGraceSeconds == 10)
        #expect {
            try configuration.apply(text: "on-card-removal = shutdown", file: "x")
        } throws: { isConfigError($0, line: 1, mentioning: "on-card-removal") }
        #expect {
            try configuration.apply(text: "lock-grace = -1", file: "x")
        } throws: { isConfigError($0, line: 1, mentioning: "lock-grace") }
    }
}

/// A blocklist that cannot be read names the configuration file and line that set it (issue 10).
@Suite struct BlocklistSourceTests {
    @Test func anUnreadableBlocklistNamesTheSettingsLine() throws {
        let directory = temporaryDirectory("blocklist")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/tokenpin.conf"
        try "retries-max = 5\n# the site list\npin-blocklist = \(directory)/missing\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        do {
            _ = try Configuration.load(files: [], explicitFile: config)
            Issue.record("a missing blocklist was accepted")
        } catch {
            #expect(error.file == config)
            #expect(error.line == 3)
            #expect(error.message.contains(directory + "/missing"))
        }
    }
}

@Suite struct TrimmingTests {
    @Test(arguments: [("  a b\t", "a b"), ("\t\t", ""), ("", ""), ("x", "x"), (" key = value ", "key = value")])
    func trimsBlanks(text: String, expected: String) {
        #expect(text.trimmingBlanks() == expected)
        #expect(text[...].trimmingBlanks() == expected)
    }
}

@Suite struct FormattingTests {
    @Test(arguments: [
        (1.25, 1, "1.3"), (0.0, 2, "0.00"), (369.4567, 1, "369.5"), (2.0, 0, "2"), (-1.005, 2, "-1.00"),
        (-0.0001, 2, "0.00"), (12.345678, 3, "12.346"), (0.05, 2, "0.05"), (100, 2, "100.00"),
    ])
    func fixedDecimals(value: Double, places: Int, expected: String) {
        #expect(fixed(value, places) == expected)
    }

    @Test func specialValues() {
        #expect(fixed(.nan, 2) == "nan")
        #expect(fixed(.infinity, 2) == "inf")
        #expect(fixed(-.infinity, 2) == "-inf")
        #expect(unicodeEscape(0x1F) == "\\u001f")
        #expect(unicodeEscape(0) == "\\u0000")
        #expect("pin".padded(to: 6) == "pin   ")
        #expect("toolong".padded(to: 3) == "toolong")
    }
}

/// Issue 25, item 8: the example "lists every key with its default", and every line of it is a setting the parser
/// takes once uncommented.
@Suite struct ConfigExampleTests {
    static var example: String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../config/tokenpin.conf.example")
        return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    }

    @Test func theExampleListsEveryKey() {
        let lines = Self.example.split(separator: "\n")
        for key in Configuration.keys {
            #expect(lines.contains { $0.hasPrefix("#\(key) = ") }, "config/tokenpin.conf.example lacks \(key)")
        }
    }

    @Test func everyExampleSettingParses() throws {
        let settings = Self.example.split(separator: "\n").filter {
            $0.range(of: #"^#[a-z-]+ = "#, options: .regularExpression) != nil
        }
        .map { $0.dropFirst() }.filter { !$0.hasPrefix("pin-blocklist =") && !$0.hasPrefix("pin-check =") }
        var configuration = Configuration()
        try configuration.apply(text: settings.joined(separator: "\n"), file: "example")
    }
}
