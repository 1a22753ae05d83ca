import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A C library function the Glibc module leaves out (the pty calls need `_XOPEN_SOURCE`), looked up by name.
private func libcFunction<F>(_ name: String, as type: F.Type) -> F {
    let library = dlopen(nil, RTLD_NOW)
    guard let symbol = dlsym(library, name) else { preconditionFailure("no \(name) in the C library") }
    return unsafeBitCast(symbol, to: type)
}

/// A pseudo-terminal pair: the controller (what a terminal emulator holds) and the terminal end a program reads.
private struct PseudoTerminal {
    let controller: Terminal
    let terminal: Terminal

    init() throws {
        let controllerFile = try FileDescriptor.open("/dev/ptmx", O_RDWR | O_NOCTTY)
        let unlock = libcFunction("unlockpt", as: (@convention(c) (Int32) -> Int32).self)
        let name = libcFunction(
            "ptsname_r", as: (@convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32).self)
        guard unlock(controllerFile.rawValue) == 0 else { throw Errno.current }
        var path = [CChar](repeating: 0, count: 128)
        let status = name(controllerFile.rawValue, &path, path.count)
        guard status == 0 else { throw Errno(rawValue: status) }
        controller = Terminal(owning: controllerFile.release())
        terminal = Terminal(
            owning: try FileDescriptor.open(
                path.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, O_RDWR | O_NOCTTY
            ).release())
    }
}

/// A pipe's read and write ends, raw: the caller owns both.
private func makePipe() throws -> (reader: Int32, writer: Int32) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw Errno.current }
    return (fds[0], fds[1])
}

@Suite struct FileDescriptorAdditionsTests {
    @Test func createNewMakesTheExactModeAndNeverOverwrites() throws {
        let path = temporaryDirectory("create-new") + "/key"
        let previous = umask(0o077)
        defer { umask(previous) }
        let mode = try FileStatus.of(FileDescriptor.createNew(path, mode: 0o640)).permissions
        #expect(mode == 0o640)  // the umask took nothing away
        #expect(throws: Errno.fileExists) { _ = try FileDescriptor.createNew(path, mode: 0o600) }
    }

    @Test func createNewRefusesASymbolicLink() throws {
        let directory = temporaryDirectory("create-new-link")
        #expect(symlink(directory + "/elsewhere", directory + "/key") == 0)
        // O_EXCL: a symbolic link at the path counts as an existing file, even one pointing nowhere.
        #expect(throws: Errno.fileExists) { _ = try FileDescriptor.createNew(directory + "/key", mode: 0o600) }
        #expect(access(directory + "/elsewhere", F_OK) != 0)  // nothing was created through the link
    }

    @Test func createNewInAMissingDirectoryIsNoSuchFile() {
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try FileDescriptor.createNew("/nonexistent/tokenpin/key", mode: 0o600)
        }
    }

    @Test func readByteReadsOneAtATimeThenNilAtEndOfFile() throws {
        let fds = try makePipe()
        let reader = FileDescriptor(owning: fds.reader)
        do {
            let writer = FileDescriptor(owning: fds.writer)
            try writer.writeAll([0x41, 0x0A])
        }  // the writer is closed here: end of file after the two bytes
        let bytes = [try reader.readByte(), try reader.readByte(), try reader.readByte()]
        #expect(bytes == [0x41, 0x0A, nil])
    }

    @Test func readByteOnAClosedDescriptorIsBadFileDescriptor() {
        #expect(throws: Errno.badFileDescriptor) {
            try FileDescriptor.withBorrowed(-1) { (file: borrowing FileDescriptor) throws(Errno) in
                _ = try file.readByte()
            }
        }
    }

    @Test func waitForInputTimesOutThenSeesData() throws {
        let fds = try makePipe()
        let reader = FileDescriptor(owning: fds.reader)
        let writer = FileDescriptor(owning: fds.writer)
        let before = try reader.waitForInput(timeoutMilliseconds: 20)
        try writer.writeAll([1])
        let after = try reader.waitForInput(timeoutMilliseconds: 1000)
        #expect(!before)
        #expect(after)
    }

    @Test func setPermissionsOnAClosedDescriptorIsBadFileDescriptor() {
        #expect(throws: Errno.badFileDescriptor) {
            try FileDescriptor.withBorrowed(-1) { (file: borrowing FileDescriptor) throws(Errno) in
                try file.setPermissions(0o600)
            }
        }
    }

    @Test func isTerminalOnlyForATerminal() throws {
        let pair = try PseudoTerminal()
        #expect(FileDescriptor.withBorrowed(pair.terminal.rawValue) { $0.isTerminal })
        let fds = try makePipe()
        let reader = FileDescriptor(owning: fds.reader)
        _ = FileDescriptor(owning: fds.writer)
        let pipeIsTerminal = reader.isTerminal
        #expect(!pipeIsTerminal)
        #expect(!FileDescriptor.withBorrowed(-1) { $0.isTerminal })
    }
}

@Suite struct TerminalDeviceTests {
    @Test func rawModeTurnsEchoLineEditingAndSignalKeysOffAndApplyRestores() throws {
        let pair = try PseudoTerminal()
        let original = try pair.terminal.settings()
        #expect(original.echoes && original.isCanonical && original.sendsSignals)
        try pair.terminal.apply(original.raw)
        let raw = try pair.terminal.settings()
        #expect(!raw.echoes && !raw.isCanonical && !raw.sendsSignals)
        #expect(raw.rawValue.c_iflag & tcflag_t(IXON) == 0)
        try pair.terminal.apply(original)
        let restored = try pair.terminal.settings()
        #expect(restored.echoes && restored.isCanonical && restored.sendsSignals)
    }

    @Test func readsWhatIsTypedByteByByteInRawMode() throws {
        let pair = try PseudoTerminal()
        try pair.terminal.apply(try pair.terminal.settings().raw)
        try pair.controller.write(Array("ab".utf8))
        #expect(try pair.terminal.readByte() == UInt8(ascii: "a"))
        #expect(pair.terminal.readByte(timeoutMilliseconds: 1000) == UInt8(ascii: "b"))
        #expect(pair.terminal.readByte(timeoutMilliseconds: 20) == nil)  // nothing more typed
    }

    @Test func writesReachTheController() throws {
        let pair = try PseudoTerminal()
        var raw = try pair.terminal.settings().raw
        raw.rawValue.c_oflag &= ~tcflag_t(OPOST)  // no newline translation: the bytes arrive as written
        try pair.terminal.apply(raw)
        try pair.terminal.write(Array("••\n".utf8))
        var received: [UInt8] = []
        while received.count < Array("••\n".utf8).count, let byte = pair.controller.readByte(timeoutMilliseconds: 1000)
        {
            received.append(byte)
        }
        #expect(received == Array("••\n".utf8))
    }

    @Test func discardInputDropsWhatWasTypedAndNotRead() throws {
        let pair = try PseudoTerminal()
        try pair.terminal.apply(try pair.terminal.settings().raw)
        try pair.controller.write(Array("typed ahead".utf8))
        #expect(pair.terminal.readByte(timeoutMilliseconds: 1000) == UInt8(ascii: "t"))
        try pair.terminal.discardInput()
        #expect(pair.terminal.readByte(timeoutMilliseconds: 20) == nil)
    }

    @Test func settingsOfANonTerminalIsNotATerminal() throws {
        let path = temporaryDirectory("not-a-tty") + "/file"
        let file = Terminal(owning: try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600).release())
        #expect(throws: Errno(rawValue: ENOTTY)) { _ = try file.settings() }
        #expect(throws: Errno(rawValue: ENOTTY)) { try file.apply(TerminalSettings(rawValue: termios())) }
        #expect(throws: Errno(rawValue: ENOTTY)) { try file.discardInput() }
    }

    @Test func signalGuardInstallsAndRemovesItsHandlers() throws {
        let pair = try PseudoTerminal()
        // SIGHUP only: test runners may handle SIGINT or SIGTERM themselves, SIGHUP is default in a test run.
        func disposition() -> sighandler_t? {
            var action = sigaction()
            sigaction(SIGHUP, nil, &action)
            return action.__sigaction_handler.sa_handler
        }
        TerminalSignalGuard.arm(terminal: pair.terminal, restoring: try pair.terminal.settings())
        let armed = disposition()
        TerminalSignalGuard.disarm()
        let disarmed = disposition()
        #expect(armed != nil && unsafeBitCast(armed, to: Int.self) != unsafeBitCast(SIG_DFL, to: Int.self))
        #expect(unsafeBitCast(disarmed, to: Int.self) == unsafeBitCast(SIG_DFL, to: Int.self))
        #expect(TerminalSignalGuard.signals == [SIGINT, SIGTERM, SIGHUP, SIGQUIT])
    }
}

@Suite struct ProcessTests {
    @Test func userNameOfTheEffectiveUserIsTheDatabasesName() throws {
        let uid = CurrentProcess.effectiveUserID
        #expect(uid == geteuid())
        let entry = try #require(getpwuid(uid))
        #expect(CurrentProcess.userName(of: uid) == String(cString: entry.pointee.pw_name))
    }

    @Test func userNameOfAnUnknownIDIsNil() {
        #expect(CurrentProcess.userName(of: 3_999_999_999) == nil)
    }

    @Test func peakResidentSizeGrowsWithTouchedMemory() throws {
        let before = try ResourceUsage.ofCurrentProcess().peakResidentKiB
        #expect(before > 0)
        let count = 64 << 20
        let block = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 4096)
        defer { block.deallocate() }
        memset(block, 0x5A, count)  // touched, so resident
        let after = try ResourceUsage.ofCurrentProcess().peakResidentKiB
        #expect(after >= before)
        #expect(after >= 64 * 1024)
    }

    @Test func temporaryDirectoryIsNewAndPrivate() throws {
        let base = temporaryDirectory("tmpdir-base")
        let first = try TemporaryDirectory.make(prefix: "tokenpin-demo", in: base)
        let second = try TemporaryDirectory.make(prefix: "tokenpin-demo", in: base)
        #expect(first != second)
        #expect(first.hasPrefix(base + "/tokenpin-demo."))
        var info = stat()
        #expect(stat(first, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFDIR)
        #expect(info.st_mode & 0o7777 == 0o700)
    }

    @Test func temporaryDirectoryInAMissingBaseIsNoSuchFile() {
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try TemporaryDirectory.make(prefix: "x", in: "/nonexistent/tokenpin")
        }
    }

    @Test func temporaryDirectoryPrefixWithASlashIsInvalid() {
        #expect(throws: Errno.invalidArgument) { _ = try TemporaryDirectory.make(prefix: "../x", in: "/tmp") }
    }

    @Test func removeFileRemovesAndReportsWhyNot() throws {
        let directory = temporaryDirectory("remove-file")
        _ = try FileDescriptor.createNew(directory + "/file", mode: 0o600)
        try Paths.removeFile(directory + "/file")
        #expect(access(directory + "/file", F_OK) != 0)
        #expect(throws: Errno.noSuchFileOrDirectory) { try Paths.removeFile(directory + "/file") }
        #expect(throws: Errno.isDirectory) { try Paths.removeFile(directory) }
    }
}
