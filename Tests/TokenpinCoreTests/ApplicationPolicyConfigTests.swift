import Foundation
import Testing

@testable import TokenpinCore

/// `derive` and the `app.NAME.*` lines of tokenpin.conf: what they set, and every hostile line an error naming
/// the key and the line.
@Suite struct ApplicationPolicyConfigTests {
    func apply(_ text: String) throws -> Configuration {
        var configuration = Configuration()
        try configuration.apply(text: text, file: "apps.conf")
        return configuration
    }

    @Test func theDefaultsReleaseEveryApplicationAfterAnyVerification() throws {
        let configuration = Configuration()
        let (enabled, policy) = configuration.derivePolicy(for: try #require(ApplicationName("restic")))
        #expect(enabled && policy.method == .any && policy.callers == .any)
    }

    @Test func perApplicationLinesOverTheGlobalSwitch() throws {
        let configuration = try apply(
            """
            derive = off
            app.restic.derive = on
            app.ssh:work.method = token
            app.ssh:work.derive = on
            app.backup.home.method = both
            app.login-keyring.callers = root
            app.login-keyring.derive = yes
            """)
        func rule(_ name: String) throws -> (Bool, ApplicationPolicy) {
            configuration.derivePolicy(for: try #require(ApplicationName(name)))
        }
        #expect(try rule("restic").0 == true)
        #expect(try rule("age").0 == false, "derive = off for the others")
        #expect(try rule("ssh:work").1.method == .token)
        #expect(try rule("backup.home").1.method == .both, "a name with dots: the setting is the last part")
        #expect(try rule("backup.home").0 == false)
        #expect(try rule("login-keyring").1.callers == .root)
        #expect(try rule("login-keyring").0 == true)
    }

    @Test(arguments: [
        "derive = maybe", "derive = ", "derive = ON", "app.restic.derive = 1", "app.restic.method = pin",
        "app.restic.method = TOKEN", "app.restic.callers = pam", "app.restic.callers = ", "app.Restic.derive = on",
        "app..derive = on", "app.restic = on", "app.restic.colour = red", "app.-x.derive = on",
        "app.a/b.derive = on", "app.\(String(repeating: "a", count: 65)).derive = on", "app.restic.derive.x = on",
    ])
    func hostileLinesAreErrorsNamingTheLine(_ line: String) {
        var configuration = Configuration()
        do {
            try configuration.apply(text: "# apps\nretries-max = 5\n\(line)\n", file: "apps.conf")
            Issue.record("accepted `\(line)`")
        } catch {
            #expect(error.file == "apps.conf")
            #expect(error.line == 3, "\(error)")
        }
        #expect(configuration.applicationPolicies.isEmpty, "a refused line sets nothing")
    }

    @Test func aNameWithDotsTakesTheLastPartAsTheSetting() throws {
        let configuration = try apply("app.restic.method.derive = off\n")
        #expect(configuration.applicationPolicies["restic.method"]?.enabled == false)
        #expect(configuration.applicationPolicies["restic"] == nil)
    }

    @Test func theNumberOfApplicationsIsBounded() throws {
        let lines = (0...ApplicationPolicy.maximumApplications).map { "app.a\($0).derive = off" }
        #expect(throws: ConfigError.self) { _ = try apply(lines.joined(separator: "\n")) }
        let within = try apply(lines.dropLast().joined(separator: "\n"))
        #expect(within.applicationPolicies.count == ApplicationPolicy.maximumApplications)
        #expect(
            try apply((lines.dropLast() + ["app.a0.method = token"]).joined(separator: "\n")).applicationPolicies.count
                == ApplicationPolicy.maximumApplications, "a second line for a named application adds none")
    }
}
