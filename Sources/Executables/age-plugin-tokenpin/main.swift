import TokenpinCore
import TokenpinSystem

// age-plugin-tokenpin: age's plugin for tokenpin identities (AGE-PLUGIN-TOKENPIN-1…).
//
// age runs it with `--age-plugin=identity-v1` and speaks the plugin protocol on its standard input and output.
// It becomes `tokenpin age plugin` (exec, the tokenpin installed beside it, never one found on PATH), which runs
// the state machine in tokenpin itself: the verification goes through tokenpind or runs locally exactly as
// `tokenpin derive` decides, and its prompts go to age (`request-secret`, `msg`). See age-plugin-tokenpin(1).

_ = CoreDumps.disable()

let usage = """
    usage: age-plugin-tokenpin --age-plugin=identity-v1
    age's plugin for tokenpin identities: age runs it for AGE-PLUGIN-TOKENPIN-1… lines of an identity file.
      tokenpin age identity > ~/.config/tokenpin/age-identity   # once, after the PIN or the card
      age -d -i ~/.config/tokenpin/age-identity file.age         # asks the PIN or the card through age
    See age-plugin-tokenpin(1) and `tokenpin help age`.

    """

func write(_ fd: Int32, _ text: String) {
    FileDescriptor.withBorrowed(fd) { try? $0.writeAll(Array(text.utf8)) }
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "--help", "-h":
    write(1, usage)
    CurrentProcess.exit(0)
case "--version":
    write(1, "age-plugin-tokenpin \(tokenpinVersion)\n")
    CurrentProcess.exit(0)
default: break
}
guard arguments.count == 1, arguments[0].hasPrefix("--age-plugin=") else {
    write(2, usage)
    CurrentProcess.exit(2)
}
let directory = CurrentProcess.executablePath.map { Paths.parent(of: $0) } ?? "/usr/bin"
let path = directory + "/tokenpin"
let error = CurrentProcess.replace(withProgramAt: path, arguments: ["tokenpin", "age", "plugin"] + arguments)
write(2, "age-plugin-tokenpin: cannot run \(path) (\(error)); it is installed beside age-plugin-tokenpin\n")
CurrentProcess.exit(69)
