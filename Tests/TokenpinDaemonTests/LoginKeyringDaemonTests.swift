import Foundation
import Testing
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinTestSupport

@testable import TokenpinDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// `login-keyring = on` in tokenpind: who may seal the login password (root's PAM stacks at the seat, the user for
/// their own record; never another user), and who gets it back after a verification (a PAM stack, own or local;
/// never a remote login, another user's `su`, a client that is not PAM, or anyone with the setting off).
@Suite(.serialized) struct LoginKeyringDaemonTests {
    let root = Peer(pid: getpid(), uid: 0, gid: 0, name: "root")
    let nobody = Peer(pid: getpid(), uid: 65534, gid: 65534, name: "nobody")
    let loginPassword = "correct horse battery"

    func exchange(_ test: TestDaemon, peer: Peer, _ request: Request, secrets: [String]) throws -> [ServerMessage] {
        try DeriveCallersDaemonTests().exchange(test, peer: peer, request, secrets: secrets)
    }

    /// A request from pam_tokenpin for nobody: the invoking uid, and a remote host when `rhost` is set; a `verify`
    /// asks for the login password, as the module's does.
    func fromPAM(_ operation: TokenpinProtocol.Operation, invokerUID: UInt32 = 0, rhost: String? = nil) -> Request {
        var request = Request(operation, user: "nobody")
        var invoker = Invoker(uid: invokerUID)
        invoker.service = invokerUID == 0 ? "login" : "su"
        invoker.rhost = rhost
        request.invoker = invoker
        return request
    }

    func prompts(_ answers: [ServerMessage]) -> [String] {
        answers.compactMap { if case .prompt(let name, _, _) = $0 { name } else { nil } }
    }

    /// The login password in the final result, or nil; records an issue when the exchange did not end in a result.
    func released(_ answers: [ServerMessage]) -> String? {
        guard case .result(_, let fields) = answers.last else {
            Issue.record("not a result: \(answers)")
            return nil
        }
        guard let field = fields.first(where: { $0.key == LoginKeyringWire.passwordField }),
            case .string(let bytes) = field.value
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    func enrolAndSeal(_ test: TestDaemon) throws {
        _ = try test.client(for: "nobody").enrol(ScriptedInteraction(["482916", "482916"]))
        let sealed = try exchange(
            test, peer: nobody, Request(.sealLoginPassword(.init()), user: "nobody"), secrets: [loginPassword])
        #expect(prompts(sealed) == ["password"])
        guard case .result(0, _) = sealed.last else {
            Issue.record("not sealed: \(sealed)")
            return
        }
    }

    @Test func aLocalPAMLoginGetsThePasswordTheUserSealed() throws {
        let test = try TestDaemon(config: "login-keyring = on\n")
        defer { test.stop() }
        try enrolAndSeal(test)
        let local = try exchange(test, peer: root, fromPAM(.verify(.init(loginKeyring: true))), secrets: ["482916"])
        #expect(released(local) == loginPassword)
        // The user's own PAM stack (sudo: the invoking uid is the user's) gets it too.
        let own = try exchange(
            test, peer: root, fromPAM(.verify(.init(loginKeyring: true)), invokerUID: 65534), secrets: ["482916"])
        #expect(released(own) == loginPassword)
        // A wrong PIN gets nothing.
        let wrong = try exchange(test, peer: root, fromPAM(.verify(.init(loginKeyring: true))), secrets: ["000000"])
        #expect(released(wrong) == nil)
        let journal = test.logs.lines.joined(separator: "\n")
        #expect(journal.contains("login password released to PAM"))
        #expect(!journal.contains(loginPassword))
    }

    @Test func remoteOtherUsersAndNonPAMClientsGetNothingAndTheJournalSaysWhy() throws {
        let test = try TestDaemon(config: "login-keyring = on\npam-remote = pin\npam-other-user = pin\n")
        defer { test.stop() }
        try enrolAndSeal(test)
        let remote = try exchange(
            test, peer: root, fromPAM(.verify(.init(loginKeyring: true)), rhost: "203.0.113.9"), secrets: ["482916"])
        #expect(released(remote) == nil)
        let su = try exchange(
            test, peer: root, fromPAM(.verify(.init(loginKeyring: true)), invokerUID: 4242), secrets: ["482916"])
        #expect(released(su) == nil)
        let direct = Request(.verify(.init(loginKeyring: true)), user: "nobody")
        let client = try exchange(test, peer: nobody, direct, secrets: ["482916"])
        #expect(released(client) == nil)
        for answers in [remote, su, client] {
            guard case .result(0, let fields) = answers.last else {
                Issue.record("the verification itself failed: \(answers)")
                continue
            }
            #expect(fields.contains { $0.key == "outcome" })
        }
        let journal = test.logs.lines.joined(separator: "\n")
        #expect(journal.contains("a remote login (203.0.113.9)"))
        #expect(journal.contains("another user's su"))
        #expect(journal.contains("not a PAM stack"))
        #expect(!journal.contains(loginPassword))
    }

    @Test func onlyTheUserOrRootAtTheSeatMaySeal() throws {
        let test = try TestDaemon(config: "login-keyring = on\npam-remote = pin\npam-other-user = pin\n")
        defer { test.stop() }
        _ = try test.client(for: "nobody").enrol(ScriptedInteraction(["482916", "482916"]))
        // Another user, for nobody's record: refused before any prompt.
        let other = Peer(pid: getpid(), uid: 4242, gid: 4242, name: "mallory")
        let foreign = try exchange(
            test, peer: other, Request(.sealLoginPassword(.init()), user: "nobody"), secrets: ["evil"])
        #expect(prompts(foreign).isEmpty)
        guard case .error = foreign.last else {
            Issue.record("another user sealed: \(foreign)")
            return
        }
        // Another user's PAM stack (su nobody) and a remote one: refused before any prompt.
        for request in [
            fromPAM(.sealLoginPassword(.init()), invokerUID: 4242), fromPAM(.sealLoginPassword(.init()), rhost: "h"),
        ] {
            let answers = try exchange(test, peer: root, request, secrets: ["evil"])
            #expect(prompts(answers).isEmpty)
            guard case .error(let code, _, _, _) = answers.last else {
                Issue.record("sealed: \(answers)")
                continue
            }
            #expect(code == "permission-denied")
        }
        // Root's passwd (the invoking uid is root's or the user's): sealed, and a local login opens it.
        let passwd = try exchange(test, peer: root, fromPAM(.sealLoginPassword(.init())), secrets: ["new password"])
        #expect(prompts(passwd) == ["password"])
        let local = try exchange(test, peer: root, fromPAM(.verify(.init(loginKeyring: true))), secrets: ["482916"])
        #expect(released(local) == "new password")
    }

    @Test func offSealsNothingAndReleasesNothing() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        _ = try test.client(for: "nobody").enrol(ScriptedInteraction(["482916", "482916"]))
        let seal = try exchange(test, peer: root, fromPAM(.sealLoginPassword(.init())), secrets: [loginPassword])
        #expect(prompts(seal).isEmpty)
        guard case .error(let code, let message, _, _) = seal.last else {
            Issue.record("sealed with login-keyring off: \(seal)")
            return
        }
        #expect(code == "permission-denied" && message.contains("login-keyring = off"))
        let local = try exchange(test, peer: root, fromPAM(.verify(.init(loginKeyring: true))), secrets: ["482916"])
        #expect(released(local) == nil)
        #expect(
            test.logs.lines.contains {
                $0.contains("login password not released") && $0.contains("login-keyring = off")
            })
        #expect(!FileManager.default.fileExists(atPath: test.directory + "/state/nobody.login-keyring"))
    }

    @Test func theReservedNameCannotBeDerivedOverTheWire() throws {
        let line = Array(#"{"v":3,"type":"request","op":"derive","applicationName":"tokenpin:login-keyring"}"#.utf8)
        #expect {
            try ClientMessage.parse(line)
        } throws: { ($0 as? ProtocolError)?.code == .badField }
        let verify = Array(#"{"v":3,"type":"request","op":"verify","loginKeyring":true}"#.utf8)
        guard case .request(let request) = try ClientMessage.parse(verify) else {
            Issue.record("not a request")
            return
        }
        #expect(request.operation == .verify(.init(loginKeyring: true)))
        #expect(try ClientMessage.parse(ClientMessage.request(request).line) == .request(request))
    }
}

/// A record made before `login-keyring = on` gets its public key at any verification through tokenpind, also one
/// that asks for no password (`tokenpin verify`), which then gets none.
@Suite(.serialized) struct LoginKeyringExistingRecordTests {
    @Test func anyVerificationStoresThePublicKeyAndReleasesNothingUnasked() throws {
        let test = try TestDaemon(config: "login-keyring = on\n")
        defer { test.stop() }
        let path = test.directory + "/state/nobody.login-keyring"
        let client = test.client(for: "nobody")
        _ = try client.enrol(ScriptedInteraction(["482916", "482916"]))
        try FileManager.default.removeItem(atPath: path)  // as a record made before the setting has none
        let root = Peer(pid: getpid(), uid: 0, gid: 0, name: "root")
        var request = Request(.verify(.init()), user: "nobody")
        request.invoker = Invoker(uid: 0)
        let answers = try DeriveCallersDaemonTests().exchange(test, peer: root, request, secrets: ["482916"])
        guard case .result(0, let fields) = answers.last else {
            Issue.record("not verified: \(answers)")
            return
        }
        #expect(!fields.contains { $0.key == LoginKeyringWire.passwordField })
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(!test.logs.lines.contains { $0.contains("login password not released") })
    }
}
