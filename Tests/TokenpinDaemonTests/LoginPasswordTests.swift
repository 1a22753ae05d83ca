import Foundation
import Testing
import TokenpinService
import TokenpinTestSupport

@testable import TokenpinDaemon

/// The PAM service that checks the login password before enrolment must list its modules itself: a file that
/// is missing (PAM would fall back to `other`), pulls in other stacks, or names pam_tokenpin is a configuration
/// error, so a PIN can never vouch for the password that enrols it.
@Suite struct LoginPasswordServiceFileTests {
    func check(_ text: String?) throws -> ServiceError? {
        let directory = temporaryDirectory("pamd")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        if let text { try text.write(toFile: directory + "/tokenpin-enrol", atomically: true, encoding: .utf8) }
        do {
            try LoginPasswordCheck(service: "tokenpin-enrol", pamDirectory: directory).checkServiceFile()
            return nil
        } catch {
            return error
        }
    }

    @Test func theShippedFileIsAccepted() throws {
        let shipped = try String(
            contentsOfFile: #filePath.replacingOccurrences(
                of: "Tests/TokenpinDaemonTests/LoginPasswordTests.swift", with: "pam/tokenpin-enrol"), encoding: .utf8)
        #expect(try check(shipped) == nil)
    }

    @Test(arguments: [
        "auth include common-auth\naccount required pam_unix.so\n",
        "@include common-auth\n",
        "auth substack system-auth\n",
        "auth sufficient /lib/security/pam_tokenpin.so\nauth required pam_unix.so\n",
    ])
    func filesThatMayReachPamTokenpinAreRefused(text: String) throws {
        guard case .configuration(let message) = try check(text) else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(message.contains("no include, substack or pam_tokenpin"))
    }

    @Test func aMissingFileIsRefusedNamingIt() throws {
        guard case .configuration(let message) = try check(nil) else {
            Issue.record("a missing service file was accepted")
            return
        }
        #expect(message.contains("tokenpin-enrol is missing"))
        #expect(message.contains("enrol-auth = none"))
    }
}
