import FoundationEssentials
import TokenpinCLI
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSimulatedReaders
import TokenpinSimulator

/// `tokenpin demo`: every flow this build supports, in a temporary store, without asking anything.
///
/// The demo PINs and the demo recovery key live only in the throwaway store, which is deleted at the end.
struct DemoRun: Command {
    func run(_ context: Context) -> ExitCode {
        guard let directory = makeTemporaryDirectory("tokenpin-demo") else {
            return context.console.fail(.ioError, errorCode: "io", message: "cannot create a temporary directory")
        }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = Configuration()
        configuration.kdfMemoryMiB = 64
        configuration.kdfPasses = 3
        configuration.retriesMax = 5
        let card: SimulatedCard
        do {
            card = try SimulatedCard(stateFile: directory + "/sim-card.json", serial: 0x1234_5678)
        } catch {
            return context.console.fail(
                .ioError, errorCode: "simulator", message: "the simulated card cannot start: \(error)")
        }
        let service = PINService(
            store: RecordStore(directory: directory + "/store"), configuration: configuration,
            user: "demo", cards: SimulatorReaders.readers(card))
        var narrator = Narrator(console: context.console)
        do {
            try walk(service, &narrator)
            try walkToken(service, card: card, pin: "915372", &narrator)
        } catch {
            narrator.result(false, "the demo stopped: \(error.message)")
            return context.fail(error)
        }
        narrator.finish()
        return narrator.failures == 0 ? .success : .notVerified
    }

    /// The PIN story: enrol, verify, the types, change, lock out, reset.
    func walk(_ service: PINService, _ narrator: inout Narrator) throws(ServiceError) {
        let pin = "482916"
        let newPIN = "739154"
        let resetPIN = "915372"
        let recoveryKey = try walkEnrolment(service, pin: pin, &narrator)
        try walkVerification(service, pin: pin, &narrator)
        try walkTypes(service, &narrator)
        try walkChange(service, from: pin, to: newPIN, &narrator)
        try walkLockout(service, pin: newPIN, &narrator)
        try walkReset(service, recoveryKey: recoveryKey, newPIN: resetPIN, &narrator)
    }

    /// A guessable PIN refused, then `pin` enrolled; returns the recovery key shown.
    private func walkEnrolment(_ service: PINService, pin: String, _ narrator: inout Narrator) throws(ServiceError)
        -> String
    {
        narrator.step("Enrol with a guessable PIN (123456): the policy refuses it and names the rule")
        do {
            _ = try service.enrol(ScriptedInteraction(["123456"]))
            narrator.result(false, "the PIN was accepted")
        } catch .policyViolation(let rule) {
            narrator.result(true, "refused: \(rule.explanation) (rule \(rule.rawValue))")
        }

        narrator.step("Enrol PIN \(pin), entered twice; a recovery key is shown once")
        let enrolment = try service.enrol(ScriptedInteraction([pin, pin]))
        let recoveryKey = enrolment.recoveryKeyText.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        narrator.result(true, "enrolled; Argon2id \(enrolment.kdf.summary); recovery key \(recoveryKey)")
        return recoveryKey
    }

    /// The right PIN, a wrong one (the tries left reported), the right one again (the counter restored).
    private func walkVerification(_ service: PINService, pin: String, _ narrator: inout Narrator)
        throws(ServiceError)
    {
        narrator.step("Verify with the right PIN")
        try verifyPIN(service, pin, expecting: .verified(method: .pin), &narrator)

        narrator.step("Verify with a wrong PIN: the tries left are reported")
        try verifyPIN(service, "000001", expecting: .rejected(remaining: 4, lastTry: false), &narrator)

        narrator.step("Verify with the right PIN again: the counter is restored")
        try verifyPIN(service, pin, expecting: .verified(method: .pin), &narrator)
    }

    /// The authentication types listed, and the PIN type refused to be switched off.
    private func walkTypes(_ service: PINService, _ narrator: inout Narrator) throws(ServiceError) {
        narrator.step("List the authentication types")
        let types = try service.types()
        narrator.result(
            types.count == 2 && types[0].enabled && !types[1].enabled,
            types.map { "\($0.type.rawValue) \($0.enabled ? "enabled" : "disabled")" }.joined(separator: ", "))

        narrator.step("Switch the PIN type off: refused, the PIN is always on")
        do {
            try service.togglePIN(on: false)
            narrator.result(false, "the PIN type was switched off")
        } catch .pinAlwaysEnabled {
            narrator.result(true, "refused: " + ServiceError.pinAlwaysEnabled.message)
        }
    }

    /// The PIN changed from `pin` to `newPIN`; the old one is wrong now, the new one verifies.
    private func walkChange(_ service: PINService, from pin: String, to newPIN: String, _ narrator: inout Narrator)
        throws(ServiceError)
    {
        narrator.step("Change the PIN: current PIN, new PIN \(newPIN) twice")
        narrator.expect(
            try service.change(ScriptedInteraction([pin, newPIN, newPIN])).outcome, .verified(method: .pin))

        narrator.step("Verify with the old PIN (wrong now), then the new one")
        try verifyPIN(service, pin, expecting: .rejected(remaining: 4, lastTry: false), &narrator)
        try verifyPIN(service, newPIN, expecting: .verified(method: .pin), &narrator)
    }

    /// Five wrong PINs lock the PIN; then even the right one, `pin`, is refused.
    private func walkLockout(_ service: PINService, pin: String, _ narrator: inout Narrator) throws(ServiceError) {
        narrator.step("Five wrong PINs: the fourth warns of the last try, the fifth locks the PIN")
        for attempt in 1...5 {
            let expected: VerifyOutcome =
                attempt == 5 ? .locked : .rejected(remaining: 5 - attempt, lastTry: attempt == 4)
            try verifyPIN(service, "11223\(attempt)", expecting: expected, &narrator)
        }

        narrator.step("Even the right PIN is refused while locked")
        try verifyPIN(service, pin, expecting: .locked, &narrator)
    }

    /// The recovery key and `newPIN` clear the lock; the status shows every try back.
    private func walkReset(
        _ service: PINService, recoveryKey: String, newPIN: String, _ narrator: inout Narrator
    ) throws(ServiceError) {
        narrator.step("Reset with the recovery key and a new PIN \(newPIN): the lock is cleared")
        narrator.expect(
            try service.reset(ScriptedInteraction([recoveryKey, newPIN, newPIN])).outcome,
            .verified(method: .recovery))
        try verifyPIN(service, newPIN, expecting: .verified(method: .pin), &narrator)

        narrator.step("Status")
        let status = try service.status()
        narrator.result(
            status.enrolled && status.remaining == 5 && !status.locked,
            "enrolled, \(status.remaining ?? 0) of \(status.maximum ?? 0) tries left, \(status.kdf?.summary ?? "")")
    }

    /// Verifies `pin` by the PIN alone and checks the outcome is `expected`.
    private func verifyPIN(
        _ service: PINService, _ pin: String, expecting expected: VerifyOutcome, _ narrator: inout Narrator
    ) throws(ServiceError) {
        narrator.expect(try service.verifyPIN(ScriptedInteraction([pin])).outcome, expected)
    }
}

extension DemoRun {
    /// The token story on the simulated card: bind it, verify with it, pull it and fall back, change the PIN and
    /// verify with it again, switch it off.
    func walkToken(_ service: PINService, card: SimulatedCard, pin: String, _ narrator: inout Narrator)
        throws(ServiceError)
    {
        let newPIN = "264017"
        let cardPIN = "123456"
        try walkBinding(service, pin: pin, cardPIN: cardPIN, &narrator)
        try walkTokenVerification(service, card: card, pin: pin, cardPIN: cardPIN, &narrator)
        try walkTokenChange(service, from: pin, to: newPIN, cardPIN: cardPIN, &narrator)
    }

    /// The factory-new card found, refused without a key, then bound with a key it makes.
    private func walkBinding(_ service: PINService, pin: String, cardPIN: String, _ narrator: inout Narrator)
        throws(ServiceError)
    {
        narrator.step("A factory-new OpenPGP card is in the (simulated) reader")
        let readers = try service.listReaders()
        narrator.result(
            readers.count == 1 && readers[0].isOpenPGP && !readers[0].usable,
            readers.map {
                "\($0.name): card \(cardLabel(serial: $0.serial ?? "?")), \($0.usable ? "usable" : "not usable (\($0.unusableReason ?? ""))")"
            }
            .joined(separator: "; "))

        narrator.step("Switch the token on without --generate-key: refused, the card has no decryption key")
        do {
            _ = try service.enableToken(ScriptedInteraction([pin]))
            narrator.result(false, "the card was bound")
        } catch .tokenUnavailable(let why) {
            narrator.result(true, "refused: \(why.prefix(80))…")
        }

        narrator.step("Switch the token on with --generate-key: PIN, card PIN, admin PIN; the card makes a cv25519 key")
        narrator.expect(
            try service.enableToken(
                ScriptedInteraction([pin, cardPIN, "12345678"]), generateKey: true,
                assumeYes: true
            ).outcome, .verified(method: .pin))
        let types = try service.types()
        narrator.result(
            types[1].enabled,
            "types: "
                + types.map { "\($0.type.rawValue) \($0.enabled ? "enabled" : "disabled")" }
                .joined(separator: ", ") + " (card \(cardLabel(serial: types[1].serial ?? "?")))")
    }

    /// Verify by the token; a wrong card PIN and a pulled card both fall back to the PIN.
    private func walkTokenVerification(
        _ service: PINService, card: SimulatedCard, pin: String, cardPIN: String, _ narrator: inout Narrator
    ) throws(ServiceError) {
        narrator.step("Verify: the token comes first, asking for the card PIN")
        let byToken = ScriptedInteraction([cardPIN])
        narrator.expect(try service.verify(byToken).outcome, .verified(method: .token))
        narrator.result(byToken.prompts.count == 1, "asked: " + byToken.prompts.map(\.name).joined(separator: ", "))

        narrator.step("A wrong card PIN: the card counts it, tokenpin falls back to the PIN (no PIN try used)")
        let wrongCard = ScriptedInteraction(["654321", pin])
        let fallback = try service.verify(wrongCard)
        narrator.expect(fallback.outcome, .verified(method: .pin))
        narrator.result(fallback.tokenFailure != nil, fallback.tokenFailure ?? "no token failure reported")

        narrator.step("Pull the card: verify says so and falls back to the PIN")
        card.remove()
        let pulled = try service.verify(ScriptedInteraction([pin]))
        narrator.expect(pulled.outcome, .verified(method: .pin))
        narrator.result(pulled.tokenFailure != nil, pulled.tokenFailure ?? "no token failure reported")
        card.insert()
    }

    /// The PIN changed from `pin` to `newPIN` with the token bound (which keeps working), then the token switched
    /// off.
    private func walkTokenChange(
        _ service: PINService, from pin: String, to newPIN: String, cardPIN: String, _ narrator: inout Narrator
    ) throws(ServiceError) {
        narrator.step("Change the PIN (the token is never used for this); the token keeps working")
        narrator.expect(
            try service.change(ScriptedInteraction([pin, newPIN, newPIN])).outcome, .verified(method: .pin))
        narrator.expect(try service.verify(ScriptedInteraction([cardPIN])).outcome, .verified(method: .token))
        narrator.expect(
            try service.verify(ScriptedInteraction([newPIN]), method: .pin).outcome, .verified(method: .pin))

        narrator.step("Switch the token off (after the PIN, like switching it on): the PIN verifies alone again")
        narrator.expect(try service.disableToken(ScriptedInteraction([newPIN])).outcome, .verified(method: .pin))
        let script = ScriptedInteraction([newPIN])
        narrator.expect(try service.verify(script).outcome, .verified(method: .pin))
        narrator.result(script.prompts == [.pin], "asked: " + script.prompts.map(\.name).joined(separator: ", "))
    }
}

/// Prints the demo's steps and outcomes, or collects them for `--json`.
struct Narrator {
    let console: Console
    var number = 0
    var failures = 0
    var steps: [JSONValue] = []
    var current = ""

    init(console: Console) { self.console = console }

    mutating func step(_ text: String) {
        number += 1
        current = text
        console.say("\n\(number). \(text)")
    }

    mutating func result(_ ok: Bool, _ text: String) {
        if !ok { failures += 1 }
        console.say("   " + (ok ? console.out.success("✓ ") : console.out.error("✗ ")) + text)
        steps.append(
            .object([
                ("step", .int(number)), ("title", .string(current)), ("ok", .bool(ok)), ("outcome", .string(text)),
            ]))
    }

    mutating func expect(_ outcome: VerifyOutcome, _ expected: VerifyOutcome) {
        result(outcome == expected, Self.describe(outcome))
    }

    static func describe(_ outcome: VerifyOutcome) -> String {
        switch outcome {
        case .verified(let method): "verified by \(method.rawValue)"
        case .rejected(let remaining, let lastTry):
            lastTry ? "wrong PIN, last try" : "wrong PIN, \(remaining) tries left"
        case .locked: "PIN locked"
        case .delayed(let seconds): "delayed \(seconds) s"
        case .tokenRejected(let reason): "token rejected: \(reason)"
        }
    }

    func finish() {
        console.say("\nDemo finished: \(steps.count - failures) of \(steps.count) outcomes as expected.")
        console.emit([("ok", .bool(failures == 0)), ("steps", .array(steps))])
    }
}
