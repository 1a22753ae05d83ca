import TokenpinAge
import TokenpinCore
import TokenpinService
import TokenpinSystem

// What `tokenpin age plugin` (Commands/Age.swift) speaks age's plugin protocol through: its standard input and
// output, the verification that opens an identity, and the prompts relayed to age.

/// The plugin's standard input and output.
final class DescriptorTransport: AgeTransport {
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(AgeProtocolError) -> Int {
        do throws(Errno) {
            return try FileDescriptor.withBorrowed(0) { (input: borrowing FileDescriptor) throws(Errno) in
                try input.read(into: buffer)
            }
        } catch {
            throw AgeProtocolError("cannot read from age (\(error))")
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(AgeProtocolError) {
        do throws(Errno) {
            try FileDescriptor.withBorrowed(1) { (output: borrowing FileDescriptor) throws(Errno) in
                try output.writeAll(bytes)
            }
        } catch {
            throw AgeProtocolError("cannot write to age (\(error))")
        }
    }
}

/// Opens a tokenpin identity: the verification `tokenpin derive age` runs, through tokenpind or locally as it
/// decides, with its prompts and notices going through age.
struct TokenpinAgeUnlocker: AgeIdentityUnlocker {
    let context: Context

    func unlock(_ identity: TokenpinAgeIdentity, ui: AgePluginUI) throws(AgeUnlockFailure) -> SecretBytes {
        guard identity.user == context.user else {
            throw AgeUnlockFailure(
                "this identity opens \(identity.user)'s record, and age runs as \(context.user): tokenpin opens "
                    + "only your own; nothing was asked")
        }
        let interaction = AgePluginInteraction(ui: ui, prompts: context.interaction)
        var result: DerivedKey
        do {
            result = try context.backend.derive(interaction, application: AgeCommand.application, method: nil)
        } catch {
            if let broken = interaction.broken { throw AgeUnlockFailure(broken.message, protocolError: broken) }
            switch error {
            case .cancelled:
                throw AgeUnlockFailure("cancelled: nothing was tried or counted, nothing was decrypted")
            default:
                throw AgeUnlockFailure(error.message + "; nothing was decrypted")
            }
        }
        guard let key = result.key.take() else {
            let why: String
            switch result.report.outcome {
            case .rejected(let remaining, let lastTry):
                why =
                    "wrong PIN (" + (lastTry ? "last try: one more wrong entry locks it" : "\(remaining) tries left")
                    + ")"
            case .locked: why = "the PIN is locked: unlock it with `tokenpin reset` and the recovery key"
            case .delayed(let seconds): why = "too many wrong entries: try again in \(seconds) s"
            case .tokenRejected(let reason): why = "the token was not verified: \(reason)"
            case .verified: why = "the verification released no key"
            }
            throw AgeUnlockFailure(why + "; nothing was decrypted")
        }
        return key
    }
}

/// The service's `Interaction` over age's user interface: each secret a `request-secret` (age asks on its
/// terminal), each notice a `msg`. A `fail` answer or an empty one cancels before anything is tried or counted.
final class AgePluginInteraction: Interaction {
    let ui: AgePluginUI
    /// The terminal interaction, for the prompts' wording only (it reads nothing here).
    let prompts: CLIInteraction
    /// The protocol broke while asking (age went away): the verification ends as cancelled, and this says why.
    private(set) var broken: AgeProtocolError?

    init(ui: AgePluginUI, prompts: CLIInteraction) {
        self.ui = ui
        self.prompts = prompts
    }

    var newPINAttempts: Int { 1 }

    func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        try read(prompt, remaining: nil)
    }

    func readPIN(_ prompt: SecretPrompt, remaining: Int) throws(ServiceError) -> SecretBytes {
        try read(prompt, remaining: remaining)
    }

    private func read(_ prompt: SecretPrompt, remaining: Int?) throws(ServiceError) -> SecretBytes {
        let answer: SecretBytes?
        do {
            answer = try ui.requestSecret(prompts.promptText(prompt, remaining: remaining) + ":")
        } catch {
            broken = error
            throw .cancelled
        }
        guard let answer, answer.count > 0 else { throw .cancelled }
        return answer
    }

    func report(_ event: Event) {
        let text: String?
        switch event {
        case .tokenFailed(let reason, let fallback, _):
            text = fallback ? "token not used: \(reason); falling back to the PIN" : nil
        case .keypadEntry(let reader, let card, let tries):
            text = CLIInteraction.keypadSentence(reader: reader, card: card, triesLeft: tries)
        case .keypadNotUsed(let reader, let reason):
            text = "keypad not used: \(reason); type the card PIN here (reader \(reader))"
        case .otherAttempts(let notice):
            text = "note: \(notice.sentence)"
        default:
            text = nil
        }
        guard let text, broken == nil else { return }
        do {
            try ui.message(text)
        } catch {
            broken = error
        }
    }

    func confirm(_ question: String) throws(ServiceError) -> Bool { false }

    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int {
        throw .usage(
            "several cards are present (\(options.joined(separator: "; "))); set `reader` in tokenpin.conf, or "
                + "leave only one")
    }
}
