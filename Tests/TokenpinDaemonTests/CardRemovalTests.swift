import Foundation
import Synchronization
import Testing
import TokenpinCore
import TokenpinDaemon
import TokenpinService
import TokenpinTestSupport

/// Records which users' sessions were locked.
final class RecordingLocker: SessionLocker {
    let locked = Mutex<[String]>([])
    func lockSessions(of user: String) -> Bool {
        locked.withLock { $0.append(user) }
        return true
    }
}

/// Runs scheduled work when the test says so.
final class ManualScheduler: Sendable {
    let pending = Mutex<[(Int, @Sendable () -> Void)]>([])
    func schedule(_ seconds: Int, _ work: @escaping @Sendable () -> Void) {
        pending.withLock { $0.append((seconds, work)) }
    }
    func runAll() {
        let work = pending.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
        for (_, item) in work { item() }
    }
}

/// The cards in the readers, as the daemon would read them: reader name to card serial.
final class FakeSlots: Sendable {
    let cards = Mutex<[String: String]>([:])
    let lookups = Mutex(0)

    func put(_ serial: String?, in reader: String) { cards.withLock { $0[reader] = serial } }

    func locate(_ serial: String) -> String? {
        lookups.withLock { $0 += 1 }
        return cards.withLock { cards in cards.first { $0.value == serial }?.key }
    }
}

struct RemovalRig {
    let policy: CardRemovalPolicy
    let locker = RecordingLocker()
    let scheduler = ManualScheduler()
    let slots = FakeSlots()

    init(_ action: CardRemovalAction, grace: Int = 0) {
        let (scheduler, slots) = (self.scheduler, self.slots)
        policy = CardRemovalPolicy(
            locker: locker, logger: .disabled, settings: { (action, grace) },
            schedule: { scheduler.schedule($0, $1) }, locate: { slots.locate($1) })
    }

    var locked: [String] { locker.locked.withLock { $0 } }

    func insert(_ serial: String, in reader: String) {
        slots.put(serial, in: reader)
        policy.readerEvent(kind: "cardInserted", reader: reader)
    }

    func remove(from reader: String) {
        slots.put(nil, in: reader)
        policy.readerEvent(kind: "cardRemoved", reader: reader)
    }
}

@Suite struct CardRemovalTests {
    @Test func removalLocksTheUserWhoVerifiedWithThatCard() {
        let rig = RemovalRig(.lock, grace: 5)
        rig.insert("000600001111", in: "Yubico YubiKey")
        rig.policy.tokenVerified(user: "alice", serial: "000600001111", reader: "Yubico YubiKey")
        rig.remove(from: "Yubico YubiKey")
        #expect(rig.scheduler.pending.withLock { $0.map(\.0) } == [5])
        rig.scheduler.runAll()
        #expect(rig.locked == ["alice"])
    }

    @Test func theSameCardBackWithinGraceCancels() {
        let rig = RemovalRig(.lock, grace: 5)
        rig.insert("000600001111", in: "r")
        rig.policy.tokenVerified(user: "alice", serial: "000600001111", reader: "r")
        rig.remove(from: "r")
        rig.insert("000600001111", in: "r")
        rig.scheduler.runAll()
        #expect(rig.locked.isEmpty)
        rig.remove(from: "r")  // the watch survived the grace
        rig.scheduler.runAll()
        #expect(rig.locked == ["alice"])
    }

    @Test func anotherCardBackWithinGraceDoesNotCancel() {
        let rig = RemovalRig(.lock, grace: 5)
        rig.insert("000600001111", in: "r")
        rig.policy.tokenVerified(user: "alice", serial: "000600001111", reader: "r")
        rig.remove(from: "r")
        rig.insert("000699999999", in: "r")
        rig.scheduler.runAll()
        #expect(rig.locked == ["alice"], "any card in the reader is not the bound card")
    }

    @Test func theBoundCardBackInAnotherReaderCancelsAndIsWatchedThere() {
        let rig = RemovalRig(.lock, grace: 5)
        rig.insert("000600001111", in: "r1")
        rig.policy.tokenVerified(user: "alice", serial: "000600001111", reader: "r1")
        rig.remove(from: "r1")
        rig.insert("000600001111", in: "r2")
        rig.scheduler.runAll()
        #expect(rig.locked.isEmpty)
        rig.remove(from: "r2")
        rig.scheduler.runAll()
        #expect(rig.locked == ["alice"])
    }

    @Test func noCardInsertedMeansNoCardIsRead() {
        let rig = RemovalRig(.lock, grace: 5)
        rig.insert("000600001111", in: "r")
        rig.policy.tokenVerified(user: "alice", serial: "000600001111", reader: "r")
        rig.remove(from: "r")
        rig.scheduler.runAll()
        #expect(rig.locked == ["alice"])
        #expect(rig.slots.lookups.withLock { $0 } == 0, "nothing came back: no card is opened")
    }

    @Test func onlyTheReaderOfTheVerifyingCardIsWatched() {
        let rig = RemovalRig(.lock, grace: 0)
        rig.insert("000600001111", in: "r1")
        rig.insert("000622222222", in: "r2")
        rig.policy.tokenVerified(user: "alice", serial: "000600001111", reader: "r1")
        rig.remove(from: "r2")
        rig.scheduler.runAll()
        #expect(rig.locked.isEmpty, "someone else's card left")
        rig.remove(from: "r1")
        rig.scheduler.runAll()
        #expect(rig.locked == ["alice"])
    }

    @Test func noneNeverLocksAndOtherReadersDoNotCount() {
        let rig = RemovalRig(.none)
        rig.insert("000600001111", in: "r")
        rig.policy.tokenVerified(user: "alice", serial: "000600001111", reader: "r")
        rig.remove(from: "r")
        rig.scheduler.runAll()
        #expect(rig.locked.isEmpty)
        let other = RemovalRig(.lock)
        other.slots.put("000600001111", in: "r1")
        other.policy.setPresent(["r1"])
        other.policy.tokenVerified(user: "bob", serial: "000600001111", reader: "r1")
        other.policy.readerEvent(kind: "readerRemoved", reader: "r2")
        other.scheduler.runAll()
        #expect(other.locked.isEmpty)
        other.slots.put(nil, in: "r1")
        other.policy.readerEvent(kind: "readerRemoved", reader: "r1")
        other.scheduler.runAll()
        #expect(other.locked == ["bob"])
    }

    @Test func aTokenWatchedOnItsOwnIsHandedToItsWatchWhateverItsSerial() {
        let watched = Mutex<[String]>([])
        let policy = CardRemovalPolicy(
            locker: RecordingLocker(), logger: .disabled, settings: { (.lock, 0) }, schedule: { _, _ in },
            locate: { _, _ in nil }, watchToken: { uri, serial in watched.withLock { $0.append("\(uri) \(serial)") } })
        policy.tokenVerified(user: "alice", serial: "pkcs11-key:0011", reader: "r")
        policy.tokenVerified(user: "alice", serial: "000600001111", reader: "pkcs11:token=t", watch: .ownWatch)
        #expect(
            watched.withLock { $0 } == ["pkcs11:token=t 000600001111"], "the watch is declared, not read off a serial")
        #expect(policy.isWatched("pkcs11:token=t"))
    }

    @Test func loginctlLockerRunsLoginctl() throws {
        let directory = temporaryDirectory("loginctl")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fake = directory + "/loginctl"
        try """
        #!/bin/sh
        echo "$@" >> \(directory)/calls
        [ "$1" = show-user ] && echo "3 7"
        exit 0
        """.write(toFile: fake, atomically: true, encoding: .utf8)
        chmod(fake, 0o755)
        #expect(LoginctlLocker(loginctl: fake).lockSessions(of: "alice"))
        let calls = try String(contentsOfFile: directory + "/calls", encoding: .utf8)
        #expect(calls == "show-user alice -P Sessions\nlock-session 3 7\n")
        #expect(!LoginctlLocker(loginctl: fake).lockSessions(of: "-rf"))
    }
}
