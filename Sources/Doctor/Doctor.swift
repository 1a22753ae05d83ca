import FoundationEssentials
import TokenpinArguments
package import TokenpinCore
import TokenpinProtocol
import TokenpinReaders
package import TokenpinService
internal import TokenpinSystem

/// One thing `tokenpin doctor` looked at, and what it found.
package struct Finding: Sendable, Equatable {
    /// How bad it is: `ok` and `info` change nothing; a `warning` or an `error` gives `doctor` its exit code.
    package enum Level: Int, Sendable, Comparable, CaseIterable {
        case ok, info, warning, error

        package static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        /// `ok`, `info`, `warning`, `error`.
        package var name: String {
            switch self {
            case .ok: "ok"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }
    }

    /// Which check: `pcscd`, `reader`, `tokenpind`, `pam`, `config`, `record`, `polkit`, `udev`.
    package var check: String
    package var level: Level
    /// One sentence.
    package var summary: String
    /// Lines of detail (each PAM service, each setting and the file that set it...).
    package var details: [String] = []
    /// What to do, when something is to be done.
    package var fix: String?
    /// The exit code this finding stands for (success for `ok` and `info`).
    package var exitCode: ExitCode = .success

    /// A finding.
    package init(
        _ check: String, _ level: Level, _ summary: String, details: [String] = [], fix: String? = nil,
        exitCode: ExitCode = .success
    ) {
        self.check = check
        self.level = level
        self.summary = summary
        self.details = details
        self.fix = fix
        self.exitCode = level >= .warning ? (exitCode == .success ? .usage : exitCode) : .success
    }
}

/// What `doctor` looks at and where: the machine's files under `root` (`/`; a test's own tree in the tests), the
/// socket the CLI would use, the user's store and configuration files.
package struct DoctorSetup: Sendable {
    /// A prefix for the machine's files (`/etc/pam.d`, `/etc/tokenpin`, units, udev rules, polkit, `/sys`, `/proc`).
    package var root: String
    /// tokenpind's socket (the CLI's choice).
    package var socket: String
    /// What says tokenpind runs here (its unit or package), or nil.
    package var daemonEvidence: String?
    /// Whether the CLI would run operations through tokenpind.
    package var throughDaemon: Bool
    /// The local store and the user whose record it holds.
    package var store: RecordStore
    package var user: String
    /// The configuration files the CLI reads, in order (those that do not exist are skipped).
    package var configurationFiles: [String]
    /// Whether to look at PC/SC readers (pcscd); off for a machine of the tests' own.
    package var readers: Bool

    /// A setup.
    package init(
        root: String, socket: String, daemonEvidence: String?, throughDaemon: Bool, store: RecordStore, user: String,
        configurationFiles: [String], readers: Bool
    ) {
        self.root = root
        self.socket = socket
        self.daemonEvidence = daemonEvidence
        self.throughDaemon = throughDaemon
        self.store = store
        self.user = user
        self.configurationFiles = configurationFiles
        self.readers = readers
    }

    func path(_ absolute: String) -> String { root + absolute }
}

/// `tokenpin doctor`: every check, each a `Finding`; the exit code is the worst finding's.
package struct Doctor: Sendable {
    package var setup: DoctorSetup

    /// A doctor for `setup`.
    package init(setup: DoctorSetup) { self.setup = setup }

    /// Runs every check, in the order they are reported.
    package func run() -> [Finding] {
        var findings: [Finding] = []
        let binding = localBinding()
        findings += pcsc(tokenBound: binding)
        findings += daemon()
        findings += pam()
        findings += configuration()
        findings += record()
        findings.append(polkit())
        findings += udev()
        return findings
    }

    /// The exit code of the worst finding: errors before warnings, the first of them.
    package static func exitCode(of findings: [Finding]) -> ExitCode {
        guard let worst = findings.map(\.level).max(), worst >= .warning else { return .success }
        return findings.first { $0.level == worst }?.exitCode ?? .success
    }

    // MARK: Smart cards

    /// Whether the local record binds a card (pcscd down is then an error, not a note).
    func localBinding() -> Bool {
        guard let record = try? setup.store.load(user: setup.user) else { return false }
        return record.tokenEnabled
    }

    func pcsc(tokenBound: Bool) -> [Finding] {
        guard setup.readers else { return [] }
        let presences: [ReaderPresence]
        do {
            presences = try PCSCReaders().list()
        } catch {
            if case .serviceUnavailable(let why) = error {
                return [
                    Finding(
                        "pcscd", tokenBound ? .error : .info,
                        "pcscd is not running"
                            + (tokenBound ? ": the bound card cannot be used" : " (only cards need it)"),
                        details: [why], fix: "sudo systemctl start pcscd.socket (or run pcscd)",
                        exitCode: .serviceUnavailable)
                ]
            }
            return [Finding("pcscd", .warning, "pcscd answered: \(error.message)", exitCode: ExitCode(error))]
        }
        var findings = [Finding("pcscd", .ok, "pcscd is reachable: \(presences.count) reader(s)")]
        for reader in presences {
            switch CardHolders.hold(reader: reader.name, cardPresent: reader.cardPresent) {
            case .empty:
                findings.append(Finding("reader", .ok, "\(reader.name): no card"))
            case .free(let programs):
                let beside = programs.map { program in
                    "\(program.name) (pid \(program.pid), user \(program.user)) runs beside it"
                        + (program.shares == true
                            ? " and shares it (pcsc-shared)"
                            : ": without pcsc-shared in its scdaemon.conf it takes the card the next time gpg uses it")
                }
                findings.append(
                    Finding("reader", .ok, "\(reader.name): a card, free for tokenpin (shared)", details: beside))
            case .exclusive(let diagnosis):
                findings.append(
                    Finding(
                        "reader", .error, "\(reader.name): \(diagnosis)",
                        fix: "gpgconf --kill scdaemon, or pcsc-shared in scdaemon.conf (docs/troubleshooting.md)",
                        exitCode: .tokenUnavailable))
            case .failed(let why):
                findings.append(Finding("reader", .warning, "\(reader.name): \(why)", exitCode: .tokenUnavailable))
            }
        }
        return findings
    }

    // MARK: tokenpind

    func daemon() -> [Finding] {
        let socket = setup.socket
        guard (try? FileStatus.of(socket))?.isSocket == true else {
            if let evidence = setup.daemonEvidence {
                return [
                    Finding(
                        "tokenpind", .error,
                        "tokenpind is expected here (\(evidence)) but nothing listens on \(socket): every command "
                            + "but --local ones exits 69", fix: "systemctl start tokenpind.socket, or run tokenpind",
                        exitCode: .serviceUnavailable)
                ]
            }
            return [
                Finding(
                    "tokenpind", .info, "no tokenpind on this machine: records are local (\(setup.store.directory))")
            ]
        }
        let channel: LineChannel
        do {
            channel = try LineChannel.connect(path: socket)
        } catch {
            return [
                Finding(
                    "tokenpind", .error, "\(socket) exists but refuses connections (\(error.detail))",
                    fix: "restart tokenpind (systemctl restart tokenpind.socket tokenpind)",
                    exitCode: .serviceUnavailable)
            ]
        }
        let peer = FileDescriptor.withBorrowed(channel.fd) { try? $0.peerCredentials() }
        channel.close()
        let uid = peer?.userID ?? 0  // unknown credentials are refused, under the uid the message always gave
        guard let peer, peer.userID == 0 else {
            return [
                Finding(
                    "tokenpind", .error,
                    "\(socket) is served by uid \(uid), not root: it is not tokenpind, and pam_tokenpin refuses it",
                    exitCode: .permissionDenied)
            ]
        }
        let version: String
        do {
            version = "protocol \(try DaemonClient(socketPath: socket).perform(Operation.Ping()))"
        } catch {
            return [
                Finding(
                    "tokenpind", .error, "tokenpind on \(socket) does not answer: \(error.message)",
                    exitCode: .serviceUnavailable)
            ]
        }
        return [
            Finding(
                "tokenpind", .ok,
                "tokenpind answers on \(socket) (\(version)), \(supervision(pid: Int(peer.processID)))"
                    + (setup.throughDaemon ? "" : "; this command line does not use it (local mode)"))
        ]
    }

    /// How the process `pid` serving the socket runs: systemd's socket (pid 1 listened), its service, or by hand.
    func supervision(pid: Int) -> String {
        if pid == 1 { return "socket-activated by systemd (tokenpind.socket; the service starts on first use)" }
        let cgroup = String(
            decoding: FileManager.default.contents(atPath: setup.path("/proc/\(pid)/cgroup")) ?? Data(), as: UTF8.self)
        let unit = cgroup.split(whereSeparator: { $0 == "/" || $0 == "\n" }).last { $0.hasSuffix(".service") }
        if let unit {
            return unit == "tokenpind.service"
                ? "supervised by systemd (tokenpind.service, pid \(pid))" : "run by systemd unit \(unit) (pid \(pid))"
        }
        return "started by hand, not supervised (pid \(pid)): it does not come back if it stops"
    }

    // MARK: PAM

    func pam() -> [Finding] {
        let directory = setup.path("/etc/pam.d")
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            return [Finding("pam", .info, "no /etc/pam.d here")]
        }
        let read: (String) -> String? = { path in
            FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
        }
        var findings: [Finding] = []
        var sound: [String] = []
        var pinOnly: [String] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            let stack = PAMStack.read(service: name, directory: directory, read: read)
            guard stack.loads("pam_tokenpin.so") else { continue }
            let audit = PAMAudit.audit(service: name, stack: stack)
            if audit.failures.isEmpty {
                sound.append(name)
                if !audit.enterGoesToPassword { pinOnly.append(name) }
            } else {
                findings.append(
                    Finding(
                        "pam", .error, "PAM service \(name): " + audit.failures[0],
                        details: Array(audit.failures.dropFirst()),
                        fix: "use a recipe of docs/pam.md (each is tested), then `pamtester \(name) USER authenticate`",
                        exitCode: .configuration))
            }
        }
        let profile = setup.path("/usr/share/pam-configs/tokenpin")
        let profileText =
            FileManager.default.fileExists(atPath: profile) ? "the pam-auth-update profile is installed" : nil
        if sound.isEmpty && findings.isEmpty {
            findings.append(
                Finding(
                    "pam", .info,
                    "no PAM service loads pam_tokenpin"
                        + (profileText.map { " (\($0); `pam-auth-update --enable tokenpin` turns it on)" } ?? "")))
        } else if !sound.isEmpty {
            var details = ["services: " + sound.joined(separator: ", ")]
            if !pinOnly.isEmpty {
                details.append("the PIN is required of users who have one in: " + pinOnly.joined(separator: ", "))
            }
            if let profileText { details.append(profileText) }
            findings.append(
                Finding(
                    "pam", .ok,
                    "\(sound.count) PAM service(s) load pam_tokenpin; none fails open or locks out root or the users "
                        + "without a record", details: details))
        }
        return findings
    }
}

extension PINService {
    /// The status, or nil when it cannot be read.
    func statusOrNil() -> StatusReport? { try? status() }
}
