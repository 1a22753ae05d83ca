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

/// `app.NAME.callers = root` in tokenpind: the daemon's peer decides, not the process tokenpind runs as (root here).
/// A connection whose kernel-reported peer is `nobody` asks for its own record's key: refused before any prompt for
/// the application kept for root, served for another one; a root peer gets the first one too.
@Suite(.serialized) struct DeriveCallersDaemonTests {
    /// The answers a client gets on a connection the daemon serves as `peer`, after sending `request` and then
    /// the secrets, one per prompt; the last one is the result or the error.
    func exchange(_ test: TestDaemon, peer: Peer, _ request: Request, secrets: [String]) throws -> [ServerMessage] {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let server = pair[1]
        let done = DispatchSemaphore(value: 0)
        Thread {
            test.daemon.serveConnection(fd: server, peer: peer)
            done.signal()
        }.start()
        let channel = LineChannel(fd: pair[0])
        defer {
            channel.close()
            _ = done.wait(timeout: .now() + 5)
        }
        try channel.send(ClientMessage.request(request))
        var answers: [ServerMessage] = []
        var secrets = secrets[...]
        while answers.count < 16 {
            let answer = try ServerMessage.parse(try channel.readLine(timeoutMilliseconds: 10_000))
            answers.append(answer)
            switch answer {
            case .prompt(let name, _, _):
                try channel.send(ClientMessage.secret(prompt: name, value: Array((secrets.popFirst() ?? "").utf8)))
            case .result, .error: return answers
            default: continue
            }
        }
        return answers
    }

    func derive(_ name: String) throws -> Request {
        Request(.derive(.init(application: try #require(ApplicationName(name)))))
    }

    func prompts(_ answers: [ServerMessage]) -> Int {
        answers.filter { if case .prompt = $0 { true } else { false } }.count
    }

    @Test func aNonRootPeerIsRefusedTheRootOnlyApplicationBeforeAnyPrompt() throws {
        let test = try TestDaemon(config: "app.backup.callers = root\n")
        defer { test.stop() }
        _ = try test.client(for: "nobody").enrol(ScriptedInteraction(["482916", "482916"]))
        let nobody = Peer(pid: getpid(), uid: 65534, gid: 65534, name: "nobody")

        let refused = try exchange(test, peer: nobody, derive("backup"), secrets: ["482916"])
        #expect(prompts(refused) == 0)
        guard case .error(let code, let message, let exitCode, _) = refused.last else {
            Issue.record("not an error: \(refused)")
            return
        }
        #expect(code == "permission-denied" && exitCode == 77)
        #expect(message.contains("callers = root"))
        // Nothing was asked, nothing counted.
        #expect(try test.client(for: "nobody").perform(TokenpinProtocol.Operation.Status()).remaining == 5)

        // The same peer, another application: asked and served, so the rule and not the peer refused above.
        let served = try exchange(test, peer: nobody, derive("restic"), secrets: ["482916"])
        #expect(prompts(served) == 1)
        guard case .result(0, let fields) = served.last else {
            Issue.record("not a result: \(served)")
            return
        }
        #expect(fields.contains { $0.key == "applicationKey" })

        // root (PAM's own class, or an admin) gets the root-only key of nobody's record.
        let root = Peer(pid: getpid(), uid: 0, gid: 0, name: "root")
        var request = try derive("backup")
        request.user = "nobody"
        let asRoot = try exchange(test, peer: root, request, secrets: ["482916"])
        guard case .result(0, let rootFields) = asRoot.last else {
            Issue.record("not a result: \(asRoot)")
            return
        }
        #expect(rootFields.contains { $0.key == "applicationKey" })
        #expect(try test.client(for: "nobody").perform(TokenpinProtocol.Operation.Status()).remaining == 5)
    }
}
