import Testing
import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct PathsTests {
    @Test(arguments: [
        ("/var/lib/tokenpin", "/var/lib"), ("/var/lib/tokenpin/", "/var/lib"), ("/tokenpin", "/"), ("/", "/"),
        ("tokenpin", ""), ("a/b", "a"), ("/a//b", "/a"), ("", ""), ("//x", "/"),
    ])
    func parent(path: String, expected: String) {
        #expect(Paths.parent(of: path) == expected)
    }

    @Test func homeDirectoryComesFromThePasswordDatabase() {
        #expect(Paths.homeDirectory(uid: 0) == String(cString: getpwuid(0).pointee.pw_dir))
        #expect(Paths.homeDirectory(uid: 4_000_000_000) == "/")
    }

    @Test func monotonicClockNeverGoesBack() {
        var last = MonotonicClock.nanoseconds
        for _ in 0..<1000 {
            let now = MonotonicClock.nanoseconds
            #expect(now >= last)
            last = now
        }
    }
}
