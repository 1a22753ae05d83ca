import TokenpinCore
import TokenpinSystem

// tokenpin-askpass: SSH_ASKPASS for keys whose passphrase is a tokenpin application key (`ssh:NAME`).
//
// ssh, ssh-add and ssh-keygen (with SSH_ASKPASS_REQUIRE=force) run it with their prompt as the only argument and
// read the answer from its standard output. A key-file prompt becomes `tokenpin derive ssh:NAME --format base64`,
// run in this process's place (exec), so the passphrase goes from tokenpin's guarded memory straight to ssh's pipe
// and never through this program, argv or the environment; the PIN or card PIN is asked on /dev/tty (or on the
// reader's keypad) by tokenpin itself, through tokenpind or locally exactly as `tokenpin derive` decides.
// docs/what-the-pin-opens.md and tokenpin-askpass(1) say which name each prompt gets.

_ = CoreDumps.disable()

let usage = """
    usage: tokenpin-askpass PROMPT
    SSH_ASKPASS for ssh keys whose passphrase is tokenpin's application key ssh:NAME:
      export SSH_ASKPASS=tokenpin-askpass SSH_ASKPASS_REQUIRE=force
      ssh-add ~/.ssh/id_ed25519          # the key of ssh:id_ed25519, after the PIN or the card
    TOKENPIN_SSH_KEY=NAME names the key instead of the file (and answers ssh-keygen's new passphrase);
    TOKENPIN_SSH_OLD_KEY=NAME answers ssh-keygen -p's old passphrase. See tokenpin-askpass(1).

    """

func environment(_ name: String) -> String? {
    CurrentProcess.environmentValue(name).flatMap { $0.isEmpty ? nil : $0 }
}

/// Writes `text` on standard error, and on the terminal too when standard error is not one (ssh-agent's is
/// /dev/null, a script's a log), so the person at the keyboard reads it.
func tell(_ text: String) {
    let onTerminal = FileDescriptor.withBorrowed(2) { error in
        _ = try? error.writeAll(Array(text.utf8))
        return error.isTerminal
    }
    if !onTerminal, let terminal = try? Terminal.openControlling() { try? terminal.write(Array(text.utf8)) }
}

func refuse(_ refusal: AskpassRefusal) -> Never {
    tell("tokenpin-askpass: \(refusal.message)\n")
    CurrentProcess.exit(refusal.status)
}

/// tokenpin in this process's place: the one next to this executable, never one found on PATH.
func runTokenpin(_ arguments: [String]) -> Never {
    let directory = CurrentProcess.executablePath.map { Paths.parent(of: $0) } ?? "/usr/bin"
    let path = directory + "/tokenpin"
    let error = CurrentProcess.replace(withProgramAt: path, arguments: ["tokenpin"] + arguments)
    tell("tokenpin-askpass: cannot run \(path) (\(error)); it is installed beside tokenpin-askpass\n")
    CurrentProcess.exit(69)
}

/// The application key of `name` on standard output, as base64 and a newline (ssh drops the newline).
func derive(_ name: ApplicationName) -> Never {
    runTokenpin(["derive", name.rawValue, "--format", "base64"])
}

/// A passphrase typed on the terminal with echo off, passed on as it is: ssh-keygen asks the other side of a
/// change (`-p`) through the same program, for a key that is not, or no longer, tokenpin's.
func passTyped(_ prompt: String) -> Never {
    guard let terminal = try? Terminal.openControlling(), let settings = try? terminal.settings() else {
        refuse(.noTerminal)
    }
    TerminalSignalGuard.arm(terminal: terminal, restoring: settings)
    guard (try? terminal.apply(settings.withoutEcho)) != nil else { refuse(.noTerminal) }
    try? terminal.write(Array(prompt.utf8))
    let capacity = 1024
    let typed = SecretBytes(count: capacity)
    var count = 0
    var ended = false
    typed.withUnsafeMutableBytes { buffer in
        while count < capacity, let byte = (try? terminal.readByte()) ?? nil {
            if byte == 0x0A {
                ended = true
                break
            }
            buffer[count] = byte
            count += 1
        }
    }
    try? terminal.apply(settings)
    TerminalSignalGuard.disarm()
    try? terminal.write([0x0A])
    guard ended else {
        tell("tokenpin-askpass: no Enter after the passphrase, or over \(capacity - 1) bytes; nothing was given\n")
        CurrentProcess.exit(74)
    }
    let written: Bool = typed.prefix(count).withUnsafeBytes { bytes in
        FileDescriptor.withBorrowed(1) { out in
            (try? out.writeAll(bytes)) != nil && (try? out.writeAll([0x0A])) != nil
        }
    }
    CurrentProcess.exit(written ? 0 : 74)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "--help", "-h":
    FileDescriptor.withBorrowed(1) { try? $0.writeAll(Array(usage.utf8)) }
    CurrentProcess.exit(0)
case "--version":
    FileDescriptor.withBorrowed(1) { try? $0.writeAll(Array("tokenpin-askpass \(tokenpinVersion)\n".utf8)) }
    CurrentProcess.exit(0)
default: break
}
guard arguments.count == 1 else {
    FileDescriptor.withBorrowed(2) { try? $0.writeAll(Array(usage.utf8)) }
    CurrentProcess.exit(2)
}
let prompt = arguments[0]
// ssh reads the answer from a pipe; on a terminal a passphrase would be shown.
guard !FileDescriptor.withBorrowed(1, { $0.isTerminal }) else {
    tell("tokenpin-askpass: standard output is a terminal: ssh runs it with a pipe there (SSH_ASKPASS)\n")
    CurrentProcess.exit(2)
}
let keyOverride = environment("TOKENPIN_SSH_KEY")

switch Question(prompt: prompt, hint: environment("SSH_ASKPASS_PROMPT")) {
case .keyFile(let file):
    switch applicationName(forKeyFile: file, override: keyOverride) {
    case .success(let name): derive(name)
    case .failure(let refusal): refuse(refusal)
    }
case .badPassphrase(let file):
    // Asking again would give the same key: the key was not made with it.
    refuse(.notOpened(file: file, application: try? applicationName(forKeyFile: file, override: keyOverride).get()))
case .passphrase:
    guard let keyOverride else { passTyped(prompt) }
    switch sshName(keyOverride, from: "TOKENPIN_SSH_KEY") {
    case .success(let name): derive(name)
    case .failure(let refusal): refuse(refusal)
    }
case .oldPassphrase:
    guard let old = environment("TOKENPIN_SSH_OLD_KEY") else { passTyped(prompt) }
    switch sshName(old, from: "TOKENPIN_SSH_OLD_KEY") {
    case .success(let name): derive(name)
    case .failure(let refusal): refuse(refusal)
    }
case .confirmation:
    // ssh-agent reads "yes" or nothing as consent and a failure as refusal: the verification's exit status is the
    // answer, and tokenpin's messages go to standard error, never to the agent.
    tell("\(prompt)\nConfirm with your tokenpin PIN or card (Enter alone refuses).\n")
    guard (try? FileDescriptor.withBorrowed(2, { (error) throws(Errno) in try error.duplicate(onto: 1) })) != nil else {
        CurrentProcess.exit(74)
    }
    runTokenpin(["verify"])
case .notice:
    tell(prompt.hasSuffix("\n") ? prompt : prompt + "\n")
    CurrentProcess.exit(0)
case .unknown:
    refuse(.unknownPrompt(prompt))
}
