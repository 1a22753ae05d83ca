import TokenpinCore

/// What ssh, ssh-add, ssh-keygen or ssh-agent asked, read from the prompt they pass as the only argument and the
/// hint in `SSH_ASKPASS_PROMPT`.
///
/// Only the prompts of OpenSSH's own tools are understood; anything else is `.unknown`, which is refused, so a
/// passphrase is never given to a question nobody checked.
enum Question: Equatable {
    /// ssh-add's or ssh's "Enter passphrase for FILE": the passphrase that opens the key in FILE.
    case keyFile(String)
    /// ssh-add's "Bad passphrase, try again for FILE": the passphrase given did not open FILE.
    case badPassphrase(String)
    /// ssh-keygen's new passphrase, its confirmation, or the passphrase of the key it reads (`-y`, `-c`).
    case passphrase
    /// ssh-keygen's "Enter old passphrase" (`-p`): the passphrase the key has now.
    case oldPassphrase
    /// ssh-agent's confirmation of a key added with `ssh-add -c`.
    case confirmation
    /// A notice to show that needs no answer (ssh's "Confirm user presence" for a FIDO key).
    case notice
    case unknown

    /// ssh-keygen's prompts for a passphrase, as OpenSSH 8 and 9 word them.
    static let keygenPrompts = [
        "Enter passphrase (empty for no passphrase): ", "Enter new passphrase (empty for no passphrase): ",
        "Enter same passphrase again: ", "Enter passphrase: ",
    ]

    init(prompt: String, hint: String?) {
        switch hint {
        case "confirm":
            self = .confirmation
            return
        case "none":
            self = .notice
            return
        default: break
        }
        if Self.keygenPrompts.contains(prompt) {
            self = .passphrase
        } else if prompt == "Enter old passphrase: " {
            self = .oldPassphrase
        } else if let file = Self.between(prompt, "Enter passphrase for key '", "': ") {
            self = .keyFile(file)  // ssh -i FILE
        } else if let file = Self.fileAfter(prompt, "Enter passphrase for ") {
            self = .keyFile(file)  // ssh-add FILE
        } else if let file = Self.fileAfter(prompt, "Bad passphrase, try again for ") {
            self = .badPassphrase(file)
        } else {
            self = .unknown
        }
    }

    /// The file in `prefix` FILE `: ` or `prefix` FILE ` (will confirm each use): ` (ssh-add -c).
    static func fileAfter(_ prompt: String, _ prefix: String) -> String? {
        between(prompt, prefix, " (will confirm each use): ") ?? between(prompt, prefix, ": ")
    }

    static func between(_ text: String, _ prefix: String, _ suffix: String) -> String? {
        guard text.hasPrefix(prefix), text.hasSuffix(suffix), text.count > prefix.count + suffix.count else {
            return nil
        }
        let file = String(text.dropFirst(prefix.count).dropLast(suffix.count))
        return file.contains("\n") ? nil : file
    }
}

/// Which application key opens a key file: `ssh:` and the file's name (`~/.ssh/id_ed25519` is `ssh:id_ed25519`),
/// or `ssh:NAME` from `TOKENPIN_SSH_KEY`, which wins. Nil, with the reason, when neither gives a valid name.
func applicationName(forKeyFile path: String, override: String?) -> Result<ApplicationName, AskpassRefusal> {
    if let override { return sshName(override, from: "TOKENPIN_SSH_KEY") }
    let base = path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
    // ssh prints at most 100 bytes of the path: a name cut there would be some other key's.
    guard path.utf8.count < 100 else {
        return .failure(.badName("ssh shortened the key's path (\(path)); set TOKENPIN_SSH_KEY=NAME"))
    }
    guard let name = ApplicationName("ssh:" + base) else {
        return .failure(
            .badName("the key file's name '\(base)' does not make an application name; set TOKENPIN_SSH_KEY=NAME"))
    }
    return .success(name)
}

/// `ssh:VALUE`, the name an environment variable gives.
func sshName(_ value: String, from variable: String) -> Result<ApplicationName, AskpassRefusal> {
    guard let name = ApplicationName("ssh:" + value) else {
        return .failure(
            .badName("\(variable)='\(value.prefix(80))' does not make an application name (\(ApplicationName.shape))"))
    }
    return .success(name)
}

/// Why tokenpin-askpass gives no answer, with its exit status.
enum AskpassRefusal: Error, Equatable {
    /// A prompt it does not understand (2).
    case unknownPrompt(String)
    /// No application name can be made (2).
    case badName(String)
    /// The passphrase tokenpin gave did not open the key (65).
    case notOpened(file: String, application: ApplicationName?)
    /// Nowhere to type a passphrase (74).
    case noTerminal

    var status: Int32 {
        switch self {
        case .unknownPrompt, .badName: 2
        case .notOpened: 65
        case .noTerminal: 74
        }
    }

    var message: String {
        switch self {
        case .unknownPrompt(let prompt):
            "not a question it answers: \"\(prompt.prefix(200))\"; nothing was given"
        case .badName(let reason): reason
        case .notOpened(let file, let application):
            "the passphrase of \(application.map { "'\($0)'" } ?? "tokenpin") does not open \(file): the key was made "
                + "with another passphrase (or for another name, or before a new enrolment); nothing more is tried"
        case .noTerminal: "no terminal to type the passphrase on (/dev/tty)"
        }
    }
}
