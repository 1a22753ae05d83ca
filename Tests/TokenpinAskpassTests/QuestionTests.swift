import Testing
import TokenpinCore

@testable import tokenpin_askpass

/// What tokenpin-askpass reads from ssh's prompts (OpenSSH 9.2's wording, as ssh.sh sees it from the real tools),
/// and which application name each key file gets.
struct QuestionTests {
    @Test(
        arguments: [
            ("Enter passphrase for /home/u/.ssh/id_ed25519: ", nil, Question.keyFile("/home/u/.ssh/id_ed25519")),
            (
                "Enter passphrase for /home/u/.ssh/id_ed25519 (will confirm each use): ", nil,
                .keyFile("/home/u/.ssh/id_ed25519")
            ),
            ("Enter passphrase for key '/home/u/.ssh/work': ", nil, .keyFile("/home/u/.ssh/work")),
            ("Enter passphrase for my key: file: ", nil, .keyFile("my key: file")),
            ("Bad passphrase, try again for /k: ", nil, .badPassphrase("/k")),
            ("Bad passphrase, try again for /k (will confirm each use): ", nil, .badPassphrase("/k")),
            ("Enter passphrase (empty for no passphrase): ", nil, .passphrase),
            ("Enter new passphrase (empty for no passphrase): ", nil, .passphrase),
            ("Enter same passphrase again: ", nil, .passphrase),
            ("Enter passphrase: ", nil, .passphrase),
            ("Enter old passphrase: ", nil, .oldPassphrase),
            ("Allow use of key work?\nKey fingerprint SHA256:x.", "confirm", .confirmation),
            ("Confirm user presence for key ED25519-SK SHA256:x", "none", .notice),
            ("Enter passphrase for ", nil, .unknown),
            ("Enter passphrase for : ", nil, .unknown),
            ("Enter passphrase for a\nb: ", nil, .unknown),
            ("Enter PIN for ED25519-SK key /k: ", nil, .unknown),
            ("root@host's password: ", nil, .unknown),
            ("Enter passphrase", nil, .unknown),
            ("", nil, .unknown),
            ("Enter passphrase: ", "", .passphrase),
        ] as [(String, String?, Question)])
    func prompts(prompt: String, hint: String?, question: Question) {
        #expect(Question(prompt: prompt, hint: hint) == question)
    }

    func name(_ path: String, _ override: String? = nil) -> String? {
        try? applicationName(forKeyFile: path, override: override).get().rawValue
    }

    @Test func theKeyFilesNameOrTheOverride() {
        #expect(name("/home/u/.ssh/id_ed25519") == "ssh:id_ed25519")
        #expect(name("/home/u/.ssh/work.key") == "ssh:work.key")
        #expect(name("relative/id_rsa") == "ssh:id_rsa")
        #expect(name("/home/u/.ssh/id_ed25519", "work") == "ssh:work")
        // Not application names: refused, naming the variable that fixes it.
        for path in ["/home/u/.ssh/Work", "/home/u/.ssh/my key", "/home/u/.ssh/clé", "/"] {
            guard case .failure(.badName(let reason)) = applicationName(forKeyFile: path, override: nil) else {
                Issue.record("\(path) made a name")
                continue
            }
            #expect(reason.contains("TOKENPIN_SSH_KEY"))
        }
        #expect(name("/home/u/.ssh/id_ed25519", "Work") == nil)
        #expect(name("/home/u/.ssh/id_ed25519", String(repeating: "a", count: 61)) == nil)  // ssh: + 61 > 64
        #expect(name("/home/u/.ssh/id_ed25519", String(repeating: "a", count: 60)) != nil)
        // ssh prints at most 100 bytes of the path: a longer one may be cut, so it names no key.
        let long = "/" + String(repeating: "d", count: 90) + "/id_ed25519"
        #expect(name(long) == nil)
        #expect(name(long, "work") == "ssh:work")
    }

    @Test func refusalsHaveTheirExitStatus() {
        #expect(AskpassRefusal.unknownPrompt("x").status == 2)
        #expect(AskpassRefusal.badName("x").status == 2)
        #expect(AskpassRefusal.notOpened(file: "/k", application: ApplicationName("ssh:k")).status == 65)
        #expect(AskpassRefusal.noTerminal.status == 74)
        #expect(AskpassRefusal.unknownPrompt(String(repeating: "x", count: 5000)).message.count < 300)
    }
}
