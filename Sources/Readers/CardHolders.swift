import FoundationEssentials
import TokenpinAPDU
import TokenpinPCSC
internal import TokenpinSystem

/// Who holds a card that another process opened exclusively. pcscd does not say; the running programs that do
/// (gpg's scdaemon first: without `pcsc-shared` in its scdaemon.conf it keeps every card it has seen) are named,
/// with what to do. One diagnosis, the same sentence in `verify`, in PAM (through tokenpind, which sees every
/// process) and in `doctor`.
package enum CardHolders {
    /// A running program that opens smart cards.
    package struct Program: Sendable, Equatable {
        /// Its name as the kernel keeps it (`scdaemon`).
        package var name: String
        package var pid: Int
        /// The login name of its user.
        package var user: String
        /// Whether its configuration says it shares cards: scdaemon with `pcsc-shared`; nil when not known.
        package var shares: Bool?
    }

    /// Programs that hold cards they open (gpg's scdaemon first), by the name `/proc/PID/comm` gives.
    static let known = ["scdaemon", "pcsc_scan", "opensc-tool", "pkcs11-tool", "yubikey-agent", "ykman", "gpg-card"]

    /// The programs of `known` running now, scdaemon first.
    package static func running(proc: String = "/proc") -> [Program] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: proc) else { return [] }
        var found: [Program] = []
        for entry in entries {
            guard let pid = Int(entry), let name = firstLine(proc + "/\(entry)/comm"), known.contains(name) else {
                continue
            }
            let uid = owner(of: proc + "/\(entry)")
            let user = uid.flatMap { CurrentProcess.userName(of: $0) } ?? uid.map { "uid \($0)" } ?? "?"
            var program = Program(name: name, pid: pid, user: user)
            if name == "scdaemon", let uid { program.shares = scdaemonShares(pid: entry, uid: uid, proc: proc) }
            found.append(program)
        }
        return found.sorted { ($0.name == "scdaemon" ? 0 : 1, $0.pid) < ($1.name == "scdaemon" ? 0 : 1, $1.pid) }
    }

    /// The sentence for the card in `reader` that another process holds exclusively: who, and what to do. Every
    /// scdaemon that does not share is named (several users may each run gpg).
    package static func diagnosis(reader: String, running: [Program] = running()) -> String {
        let start = "the card in \(reader) is held exclusively by another program"
        let scdaemons = running.filter { $0.name == "scdaemon" && $0.shares != true }
        if !scdaemons.isEmpty {
            let users = scdaemons.reduce(into: [String]()) { if !$0.contains($1.user) { $0.append($1.user) } }
            let who = scdaemons.map { "pid \($0.pid), user \($0.user)" }.joined(separator: "; ")
            let conf = users.map { "~\($0)/.gnupg/scdaemon.conf" }.joined(separator: ", ")
            return start + ": gpg's scdaemon (\(who)), which keeps every card it opened unless its scdaemon.conf "
                + "says `pcsc-shared`; run `gpgconf --kill scdaemon` as \(users.joined(separator: " and ")), or add "
                + "`pcsc-shared` to \(conf) and run `gpgconf --kill scdaemon` once"
        }
        let others = running.filter { $0.name != "scdaemon" || $0.shares == true }
        if !others.isEmpty {
            return start + " (pcscd does not say which); running now: "
                + others.map { "\($0.name) (pid \($0.pid), user \($0.user))" }.joined(separator: ", ")
                + "; close it and try again"
        }
        return start + " (pcscd does not say which, and no scdaemon runs); close the other smart-card program "
            + "and try again"
    }

    /// How a reader's card is held, for `doctor`.
    package enum Hold: Sendable, Equatable {
        /// No card in the reader.
        case empty
        /// tokenpin can open it (shared), and these card programs run beside it.
        case free(sharedWith: [Program])
        /// Another process holds it exclusively; the sentence says who and what to do.
        case exclusive(String)
        /// It could not be opened for another reason.
        case failed(String)
    }

    /// Opens the card in `reader` shared, as tokenpin does, and says how it is held.
    package static func hold(reader: String, cardPresent: Bool) -> Hold {
        guard cardPresent else { return .empty }
        do {
            let connection = try PCSCCardConnection(reader: reader)
            connection.close()
            return .free(sharedWith: running().filter { $0.name == "scdaemon" })
        } catch {
            if error.kind == .sharingViolation { return .exclusive(diagnosis(reader: reader)) }
            return .failed(error.explanation)
        }
    }

    static func firstLine(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init)
    }

    static func owner(of path: String) -> UInt32? {
        (try? FileStatus.of(path))?.owner
    }

    /// Whether the scdaemon `pid` (run by `uid`) reads `pcsc-shared` from its scdaemon.conf (in `GNUPGHOME`, else
    /// `~/.gnupg`); nil when the file cannot be read.
    static func scdaemonShares(pid: String, uid: UInt32, proc: String) -> Bool? {
        var home = Paths.homeDirectory(uid: uid) + "/.gnupg"
        if let environment = FileManager.default.contents(atPath: proc + "/\(pid)/environ") {
            for entry in environment.split(separator: 0) where entry.starts(with: Array("GNUPGHOME=".utf8)) {
                home = String(decoding: entry.dropFirst(10), as: UTF8.self)
            }
        }
        guard let data = FileManager.default.contents(atPath: home + "/scdaemon.conf") else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").contains {
            String($0.filter { !$0.isWhitespace }) == "pcsc-shared"
        }
    }
}
