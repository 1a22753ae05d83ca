import TokenpinCore
import TokenpinPKCS11
import TokenpinSystem

// tokenpin-pkcs11: the process PKCS#11 modules run in. tokenpin starts it (PKCS11Helper.start) with a socket as
// standard input and nothing else; it is not meant to be run by hand.
//
// Core dumps off first (PINs pass through here), SIGPIPE ignored (a client that went away is an error, not a
// signal), and the kernel ends it with its parent, so a module hung in a call never outlives tokenpin.
_ = CoreDumps.disable()
try? Signals.ignore(.brokenPipe)  // a write to a closed pipe or socket fails (EPIPE), not the process
try? CurrentProcess.endWithParent()

let arguments = Array(CommandLine.arguments.dropFirst())
guard let source = PKCS11HelperServer.source(arguments: arguments) else {
    FileDescriptor.withBorrowed(2) { standardError in
        try? standardError.writeAll(
            Array(
                ("usage: tokenpin-pkcs11 --p11-kit | --module /PATH/TO/MODULE.so\n"
                    + "tokenpin starts this helper itself, with its socket as standard input.\n").utf8))
    }
    CurrentProcess.exit(2)
}
PKCS11HelperServer.run(source: source, socket: FileDescriptor(owning: 0))
