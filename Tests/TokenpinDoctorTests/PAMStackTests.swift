import Foundation
import Testing
import TokenpinDoctor

/// The PAM stacks doctor reads and runs as libpam would: the documented recipes are sound, the recipes issue 25
/// found broken are found broken, libpam's dispatch rules hold.
@Suite struct PAMStackTests {
    /// Debian 12's stock common-auth, and the services the recipes include.
    static let system: [String: String] = [
        "/etc/pam.d/common-auth": """
        auth\t[success=1 default=ignore]\tpam_unix.so nullok
        auth\trequisite\t\t\tpam_deny.so
        auth\trequired\t\t\tpam_permit.so
        auth\toptional\t\t\tpam_cap.so
        """,
        "/etc/pam.d/common-account": "account\t[success=1 new_authtok_reqd=done default=ignore]\tpam_unix.so\n",
        "/etc/pam.d/common-session-noninteractive": "session\trequired\tpam_unix.so\n",
    ]

    static func stack(_ text: String, files: [String: String] = system) -> PAMStack {
        var all = files
        all["/etc/pam.d/under-test"] = text
        return PAMStack.read(service: "under-test", directory: "/etc/pam.d") { all[$0] }
    }

    static func audit(_ text: String, files: [String: String] = system) -> PAMAudit {
        PAMAudit.audit(service: "under-test", stack: stack(text, files: files))
    }

    /// The recipes of docs/pam.md, as the page prints them (`<!-- recipe: NAME -->` before each block).
    static var recipes: [(String, String)] {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../docs/pam.md")
        let text = (try? String(contentsOf: page, encoding: .utf8)) ?? ""
        var result: [(String, String)] = []
        var name: String?
        var block: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("<!-- recipe: ") {
                name = String(line.dropFirst(13).prefix { $0 != " " })
            } else if line == "```", name != nil {
                if let open = block {
                    result.append((name!, open.joined(separator: "\n")))
                    block = nil
                    name = nil
                } else {
                    block = []
                }
            } else if block != nil {
                block?.append(String(line))
            }
        }
        return result
    }

    @Test func everyDocumentedRecipeIsSound() throws {
        let recipes = Self.recipes
        #expect(recipes.count >= 5, "docs/pam.md holds its recipes")
        for (name, text) in recipes {
            let audit = Self.audit(text)
            #expect(audit.failures.isEmpty, "\(name): \(audit.failures)")
        }
        let byName = Dictionary(uniqueKeysWithValues: recipes)
        #expect(Self.audit(try #require(byName["pin-or-password"])).enterGoesToPassword)
        #expect(!Self.audit(try #require(byName["require-pin"])).enterGoesToPassword)
        #expect(!Self.audit(try #require(byName["pin-and-password"])).pinAloneLogsIn)
        #expect(Self.audit(try #require(byName["sudo-only"])).pinAloneLogsIn)
    }

    @Test func theOldRequireThePINLineRefusesTheRightPIN() {
        // docs/pam.md before issue 25: the line above pam_unix, where the text implied; success=1 lands on pam_deny.
        let audit = Self.audit(
            """
            auth  [success=1 default=die]  pam_tokenpin.so
            @include common-auth
            """)
        #expect(audit.failures.contains { $0.hasPrefix("refuses the right PIN") }, "\(audit.failures)")
    }

    @Test func theOldRequireThePINLineInPlaceOfPamUnixLocksOutRoot() {
        let audit = Self.audit(
            """
            auth  [success=1 default=die]  pam_tokenpin.so
            auth  requisite  pam_deny.so
            auth  required   pam_permit.so
            """)
        #expect(audit.failures.contains { $0.hasPrefix("locks out root and every user without a tokenpin record") })
    }

    @Test func theProfilesEndCopiedByHandIsALineLibpamRefuses() {
        let audit = Self.audit(
            """
            auth  [success=end default=ignore]  pam_tokenpin.so
            @include common-auth
            """)
        #expect(audit.failures.first?.contains("`end` is pam-auth-update's syntax") == true, "\(audit.failures)")
        #expect(audit.failures.first?.hasPrefix("/etc/pam.d/under-test:1: ") == true)
    }

    @Test func aStackThatFailsOpenIsSaid() {
        let audit = Self.audit(
            """
            auth  sufficient  pam_tokenpin.so
            auth  optional    pam_unix.so
            auth  required    pam_permit.so
            """)
        #expect(audit.failures.contains("fails open: a wrong PIN and a wrong password log in"), "\(audit.failures)")
        let ignoring = Self.audit(
            """
            auth  [success=done ignore=ignore default=die]  pam_tokenpin.so ignore_unavailable
            auth  optional  pam_unix.so
            auth  required  pam_permit.so
            """)
        #expect(ignoring.failures.contains("fails open: a user without a record logs in with a wrong password"))
    }

    @Test func libpamsDispatch() {
        func run(_ text: String, _ answers: [String: PAMResult]) -> PAMResult {
            Self.stack(text, files: [:]).run { answers[$0.module] ?? .success }
        }
        let required = "auth required pam_a.so\nauth required pam_b.so"
        #expect(run(required, ["pam_a.so": .authErr]) == .authErr, "a required failure is not undone by a success")
        #expect(run(required, [:]) == .success)
        #expect(run("auth sufficient pam_a.so\nauth required pam_deny.so", [:]) == .success, "done")
        #expect(run("auth requisite pam_a.so\nauth sufficient pam_b.so", ["pam_a.so": .authErr]) == .authErr, "die")
        #expect(
            run(
                "auth [success=1 default=ignore] pam_a.so\nauth required pam_deny.so\nauth required pam_permit.so",
                ["pam_deny.so": .authErr]) == .success, "a jump over one line")
        #expect(run("auth optional pam_a.so", ["pam_a.so": .ignore]) == .authErr, "nothing positive is a failure")
        #expect(run("", [:]) == .authErr, "an empty stack fails")
        #expect(
            run("auth [success=ok default=reset] pam_a.so\nauth required pam_b.so", ["pam_a.so": .authErr]) == .success)
    }

    @Test func includesSubstacksContinuationsAndBracketedArguments() {
        let files = [
            "/etc/pam.d/base": "auth required pam_unix.so\n",
            "/etc/pam.d/inner": "auth requisite pam_deny.so\n",
        ]
        let stack = Self.stack(
            """
            # a comment
            auth [success=ok \\
                  default=die] pam_tokenpin.so [prompt=PIN for %u: ] socket=/run/x
            auth include base
            -auth substack inner
            account required pam_permit.so
            """, files: files)
        #expect(stack.lines.map(\.module) == ["pam_tokenpin.so", "pam_unix.so", "inner"])
        #expect(stack.lines[0].arguments == ["prompt=PIN for %u: ", "socket=/run/x"])
        #expect(stack.lines[0].number == 2)
        #expect(stack.lines[2].substack?.lines.first?.module == "pam_deny.so")
        #expect(stack.loads("pam_deny.so"))
        #expect(
            stack.run { $0.module == "pam_deny.so" ? .authErr : .success } == .authErr,
            "the substack's pam_deny fails the whole stack")
    }
}
