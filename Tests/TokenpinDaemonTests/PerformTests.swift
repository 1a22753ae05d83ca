import Foundation
import Synchronization
import Testing
import TokenpinCore
import TokenpinDaemon
import TokenpinService
import TokenpinSystem
import TokenpinTestSupport

@testable import TokenpinProtocol

/// The operations that run on the service alone (`PerformableOperation`), through their one generic path: the
/// request the client sends for each and the result tokenpind writes, byte for byte what the named calls and the
/// `execute` cases sent before.
@Suite(.serialized) struct PerformableOperationTests {
    typealias Operations = TokenpinProtocol.Operation

    /// A daemon that answers each connection's request with the next of `answers` and keeps the request lines.
    final class CannedDaemon: Sendable {
        /// Where it listens.
        let socket: String
        /// The request lines received, in order.
        let requests = Mutex<[String]>([])
        /// Signalled once every answer was given.
        private let done = DispatchSemaphore(value: 0)

        init(answers: [String]) throws {
            socket = temporaryDirectory("canned") + "/socket"
            let listener = try UnixSocket.listen(path: socket).release()
            Thread { [self] in
                for answer in answers {
                    guard
                        let fd = try? FileDescriptor.withBorrowed(
                            listener,
                            { (socket) throws(Errno) -> Int32 in
                                try socket.accept().release()
                            })
                    else { break }
                    let channel = LineChannel(fd: fd)
                    if let line = try? channel.readLine(timeoutMilliseconds: 5000) {
                        self.requests.withLock { $0.append(String(decoding: line, as: UTF8.self)) }
                    }
                    try? channel.write(Array((answer + "\n").utf8))
                    channel.close()
                }
                _ = try? FileDescriptor(owning: listener).close()
                self.done.signal()
            }.start()
        }

        /// The request lines, once every answer was given.
        func received() -> [String] {
            _ = done.wait(timeout: .now() + 10)
            return requests.withLock { $0 }
        }
    }

    @Test("each request carries what its scope says: ping nothing, status and types the user, readers the card too")
    func requestsCarryTheirScope() throws {
        let canned = try CannedDaemon(answers: [
            #"{"v":3,"type":"result","exitCode":0,"version":3}"#,
            #"{"v":3,"type":"result","exitCode":0,"status":{"user":"alice","enrolled":false,"record":"/r","types":[]}}"#,
            #"{"v":3,"type":"result","exitCode":0,"types":[]}"#,
            #"{"v":3,"type":"result","exitCode":0,"readers":[]}"#,
        ])
        var client = DaemonClient(socketPath: canned.socket, user: "alice")
        client.selection = CardSelection(reader: "Yubi*", serial: "12345678")
        client.keyboardOnly = true
        #expect(try client.perform(Operations.Ping()) == 3)
        let status = try client.perform(Operations.Status())
        #expect(status.user == "alice" && !status.enrolled && status.recordPath == "/r")
        #expect(try client.perform(Operations.Types()).isEmpty)
        #expect(try client.perform(Operations.Readers()).isEmpty)
        #expect(
            canned.received() == [
                #"{"v":3,"type":"request","op":"ping"}"#,
                #"{"v":3,"type":"request","op":"status","user":"alice"}"#,
                #"{"v":3,"type":"request","op":"types","user":"alice"}"#,
                #"{"v":3,"type":"request","op":"readers","user":"alice","reader":"Yubi*","serial":"12345678","pinpad":false}"#,
            ])
    }

    @Test("a result the client cannot read is service-unavailable, naming the operation")
    func malformedResultIsUnavailable() throws {
        let canned = try CannedDaemon(answers: [
            #"{"v":3,"type":"result","exitCode":0,"status":7}"#, #"{"v":3,"type":"result","exitCode":0}"#,
        ])
        let client = DaemonClient(socketPath: canned.socket)
        #expect {
            _ = try client.perform(Operations.Status())
        } throws: { error in
            guard case .serviceUnavailable(let message) = error as? ServiceError else { return false }
            return message.hasPrefix("tokenpind sent a malformed status result: ")
        }
        #expect {
            _ = try client.perform(Operations.Readers())
        } throws: { error in
            guard case .serviceUnavailable(let message) = error as? ServiceError else { return false }
            return message.hasPrefix("tokenpind sent a malformed readers result: ")
        }
        _ = canned.received()
    }

    @Test("tokenpind's result of each is the declaration's fields of the service's outcome")
    func daemonWritesTheDeclaredFields() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        _ = try test.client.enrol(ScriptedInteraction(["482916", "482916"]))
        func result(_ op: String) throws -> String {
            try test.raw(Array(#"{"v":3,"type":"request","op":"\#(op)"}"#.utf8) + [0x0A])
        }
        func line(_ fields: [JSONMember]) -> String {
            String(decoding: ServerMessage.result(exitCode: 0, fields: fields).line.dropLast(), as: UTF8.self)
        }
        #expect(try result("ping") == #"{"v":3,"type":"result","exitCode":0,"version":3}"#)
        let client = test.client
        let status = try client.perform(Operations.Status())
        #expect(try result("status") == line([JSONMember("status", status.protocolValue)]))
        #expect(try result("status").hasPrefix(#"{"v":3,"type":"result","exitCode":0,"status":{"user":""#))
        let types = try client.perform(Operations.Types())
        #expect(try result("types") == line([JSONMember("types", TypeStatus.protocolValue(types))]))
        // This daemon has no readers: the service's error, as every operation's error is written.
        let noReaders = ServiceError.tokenUnavailable("this tokenpin has no card readers configured")
        #expect(throws: noReaders) { try client.perform(Operations.Readers()) }
        #expect(try result("readers") == String(decoding: noReaders.protocolMessage.line.dropLast(), as: UTF8.self))
        #expect(Operations.Readers().resultFields(for: []) == [JSONMember("readers", .array([]))])
    }

    @Test("in process, perform is the service's own call")
    func localRunIsTheServiceCall() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        _ = try test.client.enrol(ScriptedInteraction(["482916", "482916"]))
        let service = PINService(
            store: RecordStore(directory: test.directory + "/state"), configuration: test.daemon.configuration,
            user: "root")
        #expect(try service.perform(Operations.Status()) == service.status())
        #expect(try service.perform(Operations.Status()).enrolled)
        #expect(try service.perform(Operations.Types()) == service.types())
        #expect(try service.perform(Operations.Ping()) == ProtocolLimits.version)
    }

    /// Dispatch's `default` runs any performable operation without a case of its own: exactly these four may go
    /// that way. An operation with the daemon's own behaviour (a counted attempt, audit, events) must not become
    /// performable by accident: this list changes only on purpose.
    @Test("only ping, status, types and readers take the generic path")
    func performableOperationsAreExactlyThese() {
        let performable = Operations.all.filter { $0.type is any PerformableOperation.Type }.map { $0.type.name }
        #expect(Set(performable) == ["ping", "status", "types", "readers"])
        #expect(Operations.all.count == 16)
    }
}
