import Testing
import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct EnvironmentTests {
    @Test func environmentValueReadsOneVariable() {
        let name = "TOKENPIN_ENVIRONMENT_TEST_\(getpid())"
        #expect(CurrentProcess.environmentValue(name) == nil)
        #expect(setenv(name, "a value=with equals", 1) == 0)
        #expect(CurrentProcess.environmentValue(name) == "a value=with equals")
        #expect(setenv(name, "", 1) == 0)
        #expect(CurrentProcess.environmentValue(name) == "", "set but empty is not unset")
        #expect(unsetenv(name) == 0)
        #expect(CurrentProcess.environmentValue(name) == nil)
    }
}
