import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 25: `tokenpin doctor`, text and `--json`, on a machine of the test's own (`TOKENPIN_SYSTEM_ROOT`): every
/// check, and the exit code of the worst finding.
@Suite struct DoctorCLITests {
    /// A machine: a root directory the test fills, and the environment that makes doctor look there.
    struct Machine {
        let cli = CLI()
        var root: String { cli.directory + "/machine" }
        var environment: [String: String] { ["TOKENPIN_SYSTEM_ROOT": root] }

        init() throws {
            for directory in ["etc/pam.d", "etc/tokenpin/conf.d", "usr/share/pam-configs", "sys/bus/usb/devices"] {
                try FileManager.default.createDirectory(
                    atPath: root + "/" + directory, withIntermediateDirectories: true)
            }
            try write(
                "etc/pam.d/common-auth",
                "auth [success=1 default=ignore] pam_unix.so nullok\n"
                    + "auth requisite pam_deny.so\nauth required pam_permit.so\n")
        }

        func write(_ path: String, _ text: String) throws {
            let full = root + "/" + path
            try FileManager.default.createDirectory(
                atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: full, atomically: true, encoding: .utf8)
        }

        func doctor(_ extra: [String] = [], environment more: [String: String] = [:]) throws -> CLI.Result {
            try cli.run(["--json", "doctor"] + extra, environment: environment.merging(more) { $1 })
        }
    }

    static func checks(_ result: CLI.Result) -> [[String: Any]] { result.json["checks"] as? [[String: Any]] ?? [] }

    static func finding(_ result: CLI.Result, _ check: String, _ level: String) -> [String: Any]? {
        checks(result).first { $0["check"] as? String == check && $0["level"] as? String == level }
    }

    @Test func aSoundMachineIsZeroWithEveryCheckReported() throws {
        let machine = try Machine()
        let result = try machine.doctor()
        #expect(result.status == 0, "\(result.stdout)")
        #expect(result.json["ok"] as? Bool == true)
        let names = Set(Self.checks(result).compactMap { $0["check"] as? String })
        #expect(names.isSuperset(of: ["tokenpind", "pam", "config", "record", "polkit", "udev"]), "\(names)")
        let text = try machine.cli.run(["doctor"], environment: machine.environment)
        #expect(text.stdout.hasPrefix("tokenpin doctor: "), "\(text.stdout)")
        #expect(text.stdout.contains("ok       config"), "\(text.stdout)")
    }

    @Test func aStackThatLocksOutRootIsAConfigurationError() throws {
        let machine = try Machine()
        try machine.write("etc/pam.d/login", "auth [success=1 default=die] pam_tokenpin.so\n@include common-auth\n")
        try machine.write(
            "etc/pam.d/sudo", "auth [success=2 default=ignore] pam_tokenpin.so\n@include common-auth\n")
        let result = try machine.doctor()
        #expect(result.status == 78, "\(result.stdout)")
        let login = try #require(Self.finding(result, "pam", "error"), "\(result.stdout)")
        #expect(
            (login["summary"] as? String)?.hasPrefix("PAM service login: refuses the right PIN") == true, "\(login)")
        #expect(login["exitCode"] as? Int == 78)
        // sudo's stack jumps past pam_deny as it should: it is sound.
        #expect(Self.finding(result, "pam", "ok").map { "\($0)".contains("sudo") } == true, "\(result.stdout)")
    }

    @Test func aBrokenConfigurationNamesTheLineAndTheNearMiss() throws {
        let machine = try Machine()
        try machine.write("etc/tokenpin/tokenpin.conf", "retries-max = 4\n")
        try machine.write("etc/tokenpin/conf.d/10-site.conf", "retries-max = 3\nretires-max = 2\n")
        let result = try machine.doctor()
        #expect(result.status == 78, "\(result.stdout)")
        let error = try #require(Self.finding(result, "config", "error"))
        #expect(
            (error["summary"] as? String)?.contains("10-site.conf:2: unknown key `retires-max`") == true, "\(error)")
        #expect((error["summary"] as? String)?.contains("did you mean 'retries-max'") == true)
        // Which file set each value: the first file's retries-max is read, the broken one is not.
        try machine.write("etc/tokenpin/conf.d/10-site.conf", "retries-max = 3\n")
        let sound = try machine.doctor()
        let ok = try #require(Self.finding(sound, "config", "ok"), "\(sound.stdout)")
        let details = ok["details"] as? [String] ?? []
        #expect(
            details.contains {
                $0.hasPrefix(
                    "retries-max = 3  (\(machine.root)/etc/tokenpin/conf.d/10-site.conf:1, over "
                        + "\(machine.root)/etc/tokenpin/tokenpin.conf:1)")
            }, "\(details)")
    }

    @Test func aDaemonExpectedButDownIsSixtyNine() throws {
        let machine = try Machine()
        try machine.write("usr/lib/systemd/system/tokenpind.socket", "[Socket]\n")
        let result = try machine.doctor(
            ["--local"],
            environment: ["TOKENPIN_DAEMON_MARKERS": machine.root + "/usr/lib/systemd/system/tokenpind.socket"])
        #expect(result.status == 69, "\(result.stdout)")
        #expect(
            (Self.finding(result, "tokenpind", "error")?["summary"] as? String)?.contains("nothing listens") == true)
    }

    @Test func aCorruptRecordIsBadData() throws {
        let machine = try Machine()
        try machine.cli.enrol()
        let user = String(cString: getpwuid(geteuid())!.pointee.pw_name)
        try "{\"version\": 1, \"user\": \"x\"}".write(
            toFile: machine.cli.store + "/\(user).json", atomically: true, encoding: .utf8)
        chmod(machine.cli.store + "/\(user).json", 0o600)
        let result = try machine.doctor()
        #expect(result.status == 65, "\(result.stdout)")
    }

    @Test func theRecordsModesAndTries() throws {
        let machine = try Machine()
        try machine.cli.enrol()
        _ = try machine.cli.run(["verify", "--pin-stdin"], input: "000000\n")
        let result = try machine.doctor()
        let record = try #require(Self.finding(result, "record", "ok"), "\(result.stdout)")
        #expect(
            (record["summary"] as? String)?.contains("sound; pin; mode either, fallback allow; 4 of 5 tries left")
                == true,
            "\(record)")
    }

    @Test func aReaderWithoutTheUdevRuleAndPolkitKeepingInactiveSessionsOut() throws {
        let machine = try Machine()
        try machine.write("sys/bus/usb/devices/1-2/idVendor", "1050\n")
        try machine.write("sys/bus/usb/devices/1-2/idProduct", "0407\n")
        try machine.write("sys/bus/usb/devices/1-2/product", "YubiKey OTP+FIDO+CCID\n")
        try machine.write("sys/bus/usb/devices/1-2/1-2:1.0/bInterfaceClass", "0b\n")
        try machine.write(
            "usr/share/polkit-1/actions/org.debian.pcsc-lite.policy",
            "<action id=\"org.debian.pcsc-lite.access_pcsc\"><defaults><allow_inactive>no</allow_inactive>"
                + "<allow_active>yes</allow_active></defaults></action>")
        let result = try machine.doctor()
        let udev = try #require(Self.finding(result, "udev", "warning"), "\(result.stdout)")
        #expect((udev["summary"] as? String)?.contains("YubiKey OTP+FIDO+CCID (1050:0407)") == true)
        #expect(
            Self.finding(result, "polkit", "warning") != nil, "local mode from an inactive session: \(result.stdout)")
        #expect(result.status == 77, "the first of the worst findings (warnings): polkit, exit 77: \(result.stdout)")
        try machine.write(
            "usr/lib/udev/rules.d/70-tokenpin.rules",
            try String(
                contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                    .appendingPathComponent("../../udev/70-tokenpin.rules").path, encoding: .utf8))
        let matched = try machine.doctor()
        #expect(Self.finding(matched, "udev", "ok") != nil, "\(matched.stdout)")
    }

    @Test func doctorWorksWhenTheUsersConfigurationIsBroken() throws {
        let machine = try Machine()
        try "colour = red\n".write(toFile: machine.cli.config, atomically: true, encoding: .utf8)
        let status = try machine.cli.run(["status"], environment: machine.environment)
        #expect(status.status == 78)
        let result = try machine.doctor()
        #expect(result.status == 78, "\(result.stdout)")
        #expect(Self.finding(result, "config", "error") != nil)
    }
}
