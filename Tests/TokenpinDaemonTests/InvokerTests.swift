import Foundation
import Synchronization
import Testing
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem
import TokenpinTestSupport

@testable import TokenpinDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// Reads protocol lines from a raw connection.
private func next(_ channel: LineChannel, type: String, timeoutMilliseconds: Int32 = 10_000) -> JSONValue? {
    while let line = try? channel.readLine(timeoutMilliseconds: timeoutMilliseconds),
        let message = try? JSONParser.parse(line)
    {
        if message["type"]?.stringValue == type { return message }
        if type != "error", message["type"]?.stringValue == "error" { return message }
    }
    return nil
}

private func enrol(_ test: TestDaemon, _ user: String, pin: String = "482916") throws {
    _ = try test.client(for: user).enrol(ScriptedInteraction([pin, pin]))
}

private func pam(_ test: TestDaemon, _ user: String, _ invoker: Invoker) -> DaemonClient {
    var client = test.client(for: user)
    client.invoker = invoker
    return client
}

/// Issue 18: who is asking, through PAM (protocol version 3), and what each class may spend.
@Suite(.serialized) struct InvokerTests {
    let root = Peer(pid: 1, uid: 0, gid: 0, name: "root")

    @Test func theClassComesFromThePeerAndTheInvokingUID() {
        let alice = Peer(pid: 10, uid: 1000, gid: 1000, name: "alice")
        // A peer that is not root is the user, whatever it says.
        #expect(Authorization.context(peer: alice, user: "alice", invoker: Invoker(uid: 0, rhost: "h")).class == .own)
        #expect(Authorization.context(peer: root, user: "nobody", invoker: nil).class == .local)
        let nobody = Peer.uid(ofUser: "nobody") ?? 65534
        #expect(Authorization.context(peer: root, user: "nobody", invoker: Invoker(uid: nobody)).class == .own)
        #expect(Authorization.context(peer: root, user: "nobody", invoker: Invoker(uid: 0)).class == .local)
        #expect(Authorization.context(peer: root, user: "nobody", invoker: Invoker(uid: 0, rhost: "")).class == .local)
        let ssh = Authorization.context(
            peer: root, user: "nobody", invoker: Invoker(uid: 0, service: "sshd", rhost: "h"))
        #expect(ssh.class == .remote && ssh.rhost == "h" && ssh.service == "sshd")
        let su = Authorization.context(peer: root, user: "nobody", invoker: Invoker(uid: 4242, service: "su"))
        #expect(su.class == .other && su.invokerUID == 4242)
    }

    /// A remote host makes the attempt remote whoever the invoking uid is: sshd logging in root (invoking uid 0, the
    /// target's uid too), or a PAM stack the user runs themselves with a remote host (their own sshd), is not at the
    /// seat, so it gets neither the card nor the user's own counter.
    @Test func aRemoteHostIsRemoteEvenWhenTheInvokingUIDIsTheTargets() {
        let sshRoot = Authorization.context(
            peer: root, user: "root", invoker: Invoker(uid: 0, service: "sshd", rhost: "203.0.113.9"))
        #expect(sshRoot.class == .remote && sshRoot.rhost == "203.0.113.9")
        let nobody = Peer.uid(ofUser: "nobody") ?? 65534
        let ownSSHD = Authorization.context(
            peer: root, user: "nobody", invoker: Invoker(uid: nobody, service: "sshd", rhost: "198.51.100.1"))
        #expect(ownSSHD.class == .remote)
        // Without a remote host the same invokers are own: the invoking uid is the target's.
        #expect(
            Authorization.context(peer: root, user: "root", invoker: Invoker(uid: 0, service: "login")).class == .own)
        #expect(
            Authorization.context(peer: root, user: "nobody", invoker: Invoker(uid: nobody, rhost: "")).class == .own)
    }

    @Test func version3CarriesTheInvokerAndVersions1And2StillRead() throws {
        var request = Request(.verify(.init()), user: "bob")
        request.invoker = Invoker(uid: 1001, service: "su", rhost: nil, tty: "/dev/pts/3", ruser: "mallory")
        let line = ClientMessage.request(request).line
        #expect(String(decoding: line, as: UTF8.self).contains(#""v":3"#))
        #expect(try ClientMessage.parse(Array(line.dropLast())) == .request(request))
        for version in [1, 2] {
            let old = #"{"v":\#(version),"type":"request","op":"verify","user":"bob","method":"pin"}"#
            guard case .request(let parsed) = try ClientMessage.parse(Array(old.utf8)) else {
                Issue.record("not a request")
                continue
            }
            #expect(parsed.invoker == nil && parsed.operation == .verify(.init(method: .pin)))
            let withInvoker = #"{"v":\#(version),"type":"request","op":"verify","invokerUID":0}"#
            #expect { _ = try ClientMessage.parse(Array(withInvoker.utf8)) } throws: {
                ($0 as? ProtocolError)?.code == .unknownField
            }
        }
        let cases: [(String, ProtocolError.Code)] = [
            (#"{"v":3,"type":"request","op":"verify","service":"su"}"#, .missingField),
            (#"{"v":3,"type":"request","op":"verify","invokerUID":-1}"#, .badField),
            (#"{"v":3,"type":"request","op":"verify","invokerUID":4294967296}"#, .badField),
            (
                #"{"v":3,"type":"request","op":"verify","invokerUID":0,"rhost":"\#(String(repeating: "h", count: 257))"}"#,
                .badField
            ),
            (#"{"v":3,"type":"request","op":"verify","invokerUID":0,"tty":5}"#, .badField),
        ]
        for (text, code) in cases {
            #expect { _ = try ClientMessage.parse(Array(text.utf8)) } throws: { ($0 as? ProtocolError)?.code == code }
        }
    }

    @Test func otherAttemptsCountApartLockOutAndAreToldAtTheUsersNextVerify() throws {
        let test = try TestDaemon(config: "retries-max = 3\n")
        defer { test.stop() }
        try enrol(test, "dave")
        let su = pam(test, "dave", Invoker(uid: 4242, service: "su", tty: "/dev/pts/1", ruser: "mallory"))
        for _ in 0..<3 { _ = try su.verify(ScriptedInteraction(["000000"])) }
        let locked = ScriptedInteraction(["482916"])
        let report = try su.verify(locked)
        #expect(report.outcome == .locked && report.countedApart)
        #expect(locked.prompts.isEmpty)
        let status = try test.client(for: "dave").perform(TokenpinProtocol.Operation.Status())
        #expect(status.remaining == 3 && !status.locked)
        #expect(status.otherFailures == 3 && status.otherLocked)
        #expect(status.otherLast?.service == "su" && status.otherLast?.invokerUID == 4242)
        // The user at this machine (root's tools: local) verifies, is told, and the counter is cleared.
        let own = ScriptedInteraction(["482916"])
        let verified = try test.client(for: "dave").verify(own)
        #expect(verified.outcome == .verified(method: .pin))
        #expect(own.events.contains { if case .otherAttempts(let notice) = $0 { notice.failures == 3 } else { false } })
        #expect(try test.client(for: "dave").perform(TokenpinProtocol.Operation.Status()).otherFailures == 0)
    }

    @Test func remoteLoginsAreIgnoredByDefaultAndOtherUsersMayBeDenied() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        try enrol(test, "erin")
        let ssh = pam(test, "erin", Invoker(uid: 0, service: "sshd", rhost: "203.0.113.7"))
        let asked = ScriptedInteraction(["482916"])
        #expect { _ = try ssh.verify(asked) } throws: { ($0 as? ServiceError)?.code == "ignored" }
        #expect(asked.prompts.isEmpty)
        try "kdf-memory-mib = 8\nkdf-passes = 1\nenrol-auth = none\npam-remote = pin\npam-other-user = deny\n".write(
            toFile: test.directory + "/tokenpin.conf", atomically: true, encoding: .utf8)
        #expect(test.daemon.reload())
        let pin = ScriptedInteraction(["000000"])
        #expect(try ssh.verify(pin).outcome == .rejected(remaining: 4, lastTry: false))
        #expect(pin.prompts == [.pin])
        let su = pam(test, "erin", Invoker(uid: 4242, service: "su"))
        let denied = ScriptedInteraction(["482916"])
        #expect { _ = try su.verify(denied) } throws: { ($0 as? ServiceError)?.code == "permission-denied" }
        #expect(denied.prompts.isEmpty)
        // Only verify and change, for remote and other attempts.
        #expect { _ = try ssh.perform(TokenpinProtocol.Operation.Status()) } throws: {
            ($0 as? ServiceError)?.code == "permission-denied"
        }
        #expect(try test.client(for: "erin").perform(TokenpinProtocol.Operation.Status()).remaining == 5)
    }

    @Test func aParkedSuHoldsNothingTheUsersOwnVerifyNeeds() throws {
        let test = try TestDaemon(config: "daemon-wait-timeout = 2\n")
        defer { test.stop() }
        try enrol(test, "fay")
        var parked: [LineChannel] = []
        for uid: UInt32 in [4242, 4243] {
            let channel = try LineChannel.connect(path: test.socket)
            var request = Request(.verify(.init()), user: "fay")
            request.invoker = Invoker(uid: uid, service: "su")
            try channel.send(ClientMessage.request(request))
            #expect(next(channel, type: "prompt")?["prompt"]?.stringValue == "pin")
            parked.append(channel)
        }
        let start = Date()
        #expect(try test.client(for: "fay").verify(ScriptedInteraction(["482916"])).outcome == .verified(method: .pin))
        #expect(Date().timeIntervalSince(start) < 1.5, "no wait for the parked su")
        // A second su by the same uid waits for the first (its own turn), then says busy with nothing counted.
        let again = pam(test, "fay", Invoker(uid: 4242, service: "su"))
        #expect { _ = try again.verify(ScriptedInteraction(["000000"])) } throws: {
            ($0 as? ServiceError)?.code == "busy"
        }
        #expect(try test.client(for: "fay").perform(TokenpinProtocol.Operation.Status()).otherFailures == 0)
        for channel in parked { channel.close() }
    }

    @Test func remoteAndOtherAttemptsHaveAShareEachPerTargetAndPerSource() {
        let table = InFlightAttempts(maximumPerTarget: 2, maximumPerSource: 3)
        #expect(table.begin(user: "a", source: "uid:1") && table.begin(user: "a", source: "uid:2"))
        #expect(!table.begin(user: "a", source: "uid:3"), "the target's share is full")
        #expect(table.begin(user: "b", source: "uid:1") && table.begin(user: "c", source: "uid:1"))
        #expect(!table.begin(user: "d", source: "uid:1"), "the source's share is full")
        #expect(table.begin(user: "d", source: "uid:9"))
        table.end(user: "a", source: "uid:1")
        #expect(table.begin(user: "a", source: "uid:3"))
        // A remote attempt's source is its host, so one host's flood is not every ssh login's.
        let ssh = AttemptContext(class: .remote, invokerUID: 0, service: "sshd", rhost: "203.0.113.7")
        let su = AttemptContext(class: .other, invokerUID: 1001, service: "su")
        #expect(InFlightAttempts.source(of: ssh) == "host:203.0.113.7")
        #expect(InFlightAttempts.source(of: su) == "uid:1001")
    }

    @Test func theLoginPasswordCheckIsThrottledPerUID() {
        let clock = Mutex<UInt64>(1_000_000_000)
        let throttle = PasswordThrottle(now: { clock.withLock { $0 } })
        #expect(throttle.begin(uid: 7) == nil)
        #expect(throttle.begin(uid: 7) != nil, "one check at a time per uid")
        #expect(throttle.begin(uid: 8) == nil, "another uid is not held up")
        throttle.end(uid: 8, .accepted)
        throttle.end(uid: 7, .rejected)
        #expect(throttle.begin(uid: 7) == 2)
        clock.withLock { $0 += 2_000_000_000 }
        #expect(throttle.begin(uid: 7) == nil)
        throttle.end(uid: 7, .rejected)
        #expect(throttle.begin(uid: 7) == 4)
        clock.withLock { $0 += 4_000_000_000 }
        #expect(throttle.begin(uid: 7) == nil)
        throttle.end(uid: 7, .notTried)
        #expect(throttle.begin(uid: 7) == nil, "a check that tried nothing doubles nothing")
        throttle.end(uid: 7, .accepted)
        #expect(throttle.begin(uid: 7) == nil)
        #expect((1...9).map(PasswordThrottle.delay(afterFailures:)) == [2, 4, 8, 16, 32, 60, 60, 60, 60])
    }

    @Test func aRootPeerIsAccountedToTheRealUIDOfItsProcess() {
        #expect(Peer.realUID(ofProcess: getpid()) == getuid())
        #expect(Peer.realUID(ofProcess: -1) == nil)
        let su = Peer(pid: 1, uid: 0, gid: 0, name: "root", accountingUID: 1001)
        let table = ConnectionTable(maximumTotal: 10, maximumPerUID: 1)
        #expect(table.open(uid: su.accountingUID))
        #expect(!table.open(uid: su.accountingUID), "the user's su processes fill the user's share")
        #expect(table.open(uid: 0), "root's own (login, sshd) are not in it")
    }

    /// A record of `user` made in `directory` with its PIN, recovery key and a token slot naming a card.
    func recordWithBinding(user: String, directory: String) throws -> [UInt8] {
        var configuration = Configuration()
        configuration.kdfMemoryMiB = 8
        configuration.kdfPasses = 1
        let service = PINService(store: RecordStore(directory: directory), configuration: configuration, user: user)
        _ = try service.enrol(ScriptedInteraction(["482916", "482916"]))
        var record = try #require(try service.store.load(user: user))
        var token = try #require(record.slot(.pin))
        token.kind = .token
        token.kdf = KDFParameters(algorithm: .blake2b)
        token.token = TokenBinding(
            serial: "FFFE00001111", cardPublicKey: Data(repeating: 9, count: 32),
            ephemeralPublicKey: Data(repeating: 8, count: 32))
        record.setSlot(.token, token)
        return [UInt8](try RecordStore.encode(record))
    }

    @Test func anImportByAUserDropsCardBindingsAndRootsKeepsThem() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        let user = Peer(pid: 10, uid: 1000, gid: 1000, name: "gus")
        let bytes = try recordWithBinding(user: "gus", directory: test.directory + "/gus")
        _ = try test.daemon.importRecord(bytes, user: "gus", configuration: test.daemon.configuration, peer: user)
        let imported = try #require(try test.daemon.store.load(user: "gus"))
        #expect(imported.slot(.token) == nil && imported.slot(.pin) != nil && imported.slot(.recovery) != nil)
        #expect(!imported.tokenEnabled)

        let bound = try recordWithBinding(user: "hal", directory: test.directory + "/hal")
        _ = try test.daemon.importRecord(bound, user: "hal", configuration: test.daemon.configuration, peer: root)
        let kept = try #require(try test.daemon.store.load(user: "hal"))
        #expect(kept.slot(.token)?.token?.serial == "FFFE00001111" && kept.slot(.pin) != nil)
    }
}

/// The audit trail: journal entries through the journal's native protocol, captured by a socket of the test's own.
@Suite(.serialized) struct AuditTrailTests {
    /// A datagram socket bound at `path`, as journald's is.
    final class FakeJournal: @unchecked Sendable {
        // @unchecked Sendable: the descriptor is only read by the test's thread.
        let fd: Int32
        init(path: String) throws {
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard fd >= 0, bound == 0 else { throw TestFault() }
        }
        deinit { close(fd) }

        /// The next entry's fields (the native protocol's `NAME=value` lines), or nil after 5 s.
        func entry() -> [String: String]? {
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pollfd, 1, 5000) > 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            var fields: [String: String] = [:]
            for line in buffer[..<count].split(separator: 0x0A) {
                guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else { continue }
                fields[String(decoding: line[..<equals], as: UTF8.self)] =
                    String(decoding: line[(equals + 1)...], as: UTF8.self)
            }
            return fields
        }
    }

    struct TestFault: Error {}

    @Test func verificationsFailuresAndLocksAreJournalEntries() throws {
        let path = temporaryDirectory("journal") + "/socket"
        let journal = try FakeJournal(path: path)
        let test = try TestDaemon(config: "retries-max = 2\npam-remote = pin\n") { $0.journalSocket = path }
        defer { test.stop() }
        try enrol(test, "hal")
        _ = try test.client(for: "hal").verify(ScriptedInteraction(["482916"]))
        let verified = try #require(journal.entry())
        #expect(verified["MESSAGE_ID"] == AuditEvent.Kind.verified.messageID)
        #expect(verified["TOKENPIN_USER"] == "hal" && verified["TOKENPIN_CLASS"] == "local")
        #expect(verified["TOKENPIN_METHOD"] == "pin" && verified["TOKENPIN_RESULT"] == "verified")
        #expect(verified["TOKENPIN_INVOKER_UID"] == "0" && verified["SYSLOG_IDENTIFIER"] == "tokenpind")

        let ssh = pam(test, "hal", Invoker(uid: 0, service: "sshd", rhost: "198.51.100.9"))
        _ = try ssh.verify(ScriptedInteraction(["000000"]))
        let failed = try #require(journal.entry())
        #expect(failed["MESSAGE_ID"] == AuditEvent.Kind.verifyFailed.messageID)
        #expect(failed["TOKENPIN_CLASS"] == "remote" && failed["TOKENPIN_SERVICE"] == "sshd")
        #expect(failed["TOKENPIN_RHOST"] == "198.51.100.9" && failed["TOKENPIN_RESULT"] == "rejected")
        #expect(failed["TOKENPIN_REMAINING"] == "1")
        _ = try ssh.verify(ScriptedInteraction(["000000"]))
        let locked = try #require(journal.entry())
        #expect(locked["MESSAGE_ID"] == AuditEvent.Kind.locked.messageID && locked["TOKENPIN_REMAINING"] == "0")
        for entry in [verified, failed, locked] {
            #expect(!entry.values.contains { $0.contains("482916") || $0.contains("000000") }, "never a secret")
        }
    }

    @Test func withoutAJournalTheFieldsAreALogLine() {
        let capture = LogCapture()
        let trail = AuditTrail(
            journalSocket: temporaryDirectory("no-journal") + "/socket", logger: capture.logger(level: .info))
        trail.record(
            AuditEvent(
                .verifyFailed, user: "joe", context: AttemptContext(class: .other, invokerUID: 1001, service: "su"),
                result: "rejected", remaining: 2))
        let line = capture.lines.joined(separator: "\n")
        #expect(line.contains("verification failed") && line.contains(AuditEvent.Kind.verifyFailed.messageID))
        #expect(line.contains("tokenpin_user=joe") && line.contains("tokenpin_class=other"), "\(line)")
        #expect(line.contains("tokenpin_invoker_uid=1001") && line.contains("tokenpin_remaining=2"), "\(line)")
    }

    @Test func everyKindHasItsOwnMessageIDAndNamesJournaldKeeps() {
        let ids = AuditEvent.Kind.allCases.map(\.messageID)
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
        let event = AuditEvent(
            .bound, user: "ivy", context: AttemptContext(class: .own, invokerUID: 1000, service: "a\nb"),
            method: "pin", result: "bound")
        #expect(event.fields.allSatisfy { JournalSocket.isValidName($0.name) })
        // A value with a newline is sent in the binary form: the name, a newline, the 64-bit length, the value.
        let datagram = JournalSocket.encode([("TOKENPIN_SERVICE", "a\nb")])
        #expect(datagram == Array("TOKENPIN_SERVICE\n".utf8) + [3, 0, 0, 0, 0, 0, 0, 0] + Array("a\nb\n".utf8))
    }
}
