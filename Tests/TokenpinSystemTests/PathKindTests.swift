import Testing
import TokenpinSystem
import TokenpinTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A directory holding one of each kind of thing a path can name, and symbolic links to them.
struct Specimens {
    let directory = temporaryDirectory()
    var socket: String { directory + "/socket" }
    var file: String { directory + "/file" }
    var missing: String { directory + "/missing" }
    var linkToSocket: String { directory + "/link-to-socket" }
    var linkToFile: String { directory + "/link-to-file" }
    var danglingLink: String { directory + "/dangling" }
    /// The listening socket at `socket`, kept open while the specimens are in use.
    let listener: Int32

    init() throws {
        listener = try UnixSocket.listen(path: directory + "/socket").release()
        let file = try FileDescriptor.createNew(directory + "/file", mode: 0o600)
        try file.writeAll(Array("contents\n".utf8))
        try file.close()
        #expect(symlink(socket, linkToSocket) == 0)
        #expect(symlink(self.file, linkToFile) == 0)
        #expect(symlink(missing, danglingLink) == 0)
    }

    func close() { _ = Glibc.close(listener) }
}

@Suite struct PathKindTests {
    @Test func onlyASocketItselfIsASocket() throws {
        let specimens = try Specimens()
        defer { specimens.close() }
        #expect(Paths.isSocket(specimens.socket))
        #expect(!Paths.isSocket(specimens.file), "a regular file")
        #expect(!Paths.isSocket(specimens.missing), "nothing there")
        #expect(!Paths.isSocket(specimens.directory), "a directory")
        #expect(!Paths.isSocket(specimens.linkToSocket), "a symbolic link to a socket is a link")
        #expect(!Paths.isSocket(""))
    }

    @Test func existsFollowsSymbolicLinks() throws {
        let specimens = try Specimens()
        defer { specimens.close() }
        #expect(Paths.exists(specimens.file))
        #expect(Paths.exists(specimens.socket))
        #expect(Paths.exists(specimens.directory))
        #expect(Paths.exists(specimens.linkToFile))
        #expect(!Paths.exists(specimens.missing))
        #expect(!Paths.exists(specimens.danglingLink), "a link to nothing is nothing")
        #expect(!Paths.exists(specimens.missing + "/below"))
    }
}
