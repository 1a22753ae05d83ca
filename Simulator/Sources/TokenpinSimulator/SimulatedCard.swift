import Synchronization
import TokenpinAPDU
import TokenpinCore

/// What the card does with one command: answer (maybe late), or nothing because it was pulled.
package enum CardReply: Sendable, Equatable {
    /// The response bytes, to be delivered after `delay` (zero unless a fault slows the card).
    case response([UInt8], delay: Duration)
    /// No answer: the card is not there (pulled, or never inserted).
    case removed
    /// No answer: the card is inserted but not powered.
    case notPowered
    /// No answer, ever: the card went quiet mid-command (the command took effect); the reader waits for it.
    case stalled
}

/// A virtual OpenPGP card (OpenPGP card application 3.4): the state machine behind `SimulatedCardConnection`
/// and `tokenpin-sim`.
///
/// It takes raw command APDUs and answers raw response APDUs: short and extended lengths, command chaining,
/// `61xx` with GET RESPONSE, every error status word. State is persisted to a JSON file after every change
/// (or kept in memory when there is no file). Power off, reset and deselect clear the verified PINs.
/// Fault injection (`faults`) makes it vanish, answer slowly, answer malformed bytes or a chosen status word.
///
/// The card is safe to share between threads: one command runs at a time, like on a real card. The lock is
/// held while the state file is written; that write is part of the command, as on a card's EEPROM.
package final class SimulatedCard: Sendable {
    private struct Engine: Sendable {
        var application: OpenPGPApplication
        /// The PIV application, on the `piv-card` and `yubikey` profiles; it answers while it is selected.
        var piv: PIVApplication?
        /// Whether SELECT can pick the OpenPGP application (not on the `piv-card` profile).
        var hasOpenPGP = true
        /// The YubiKey management and OTP applications, on the `yubikey5` profile.
        var yubiKey: YubiKeyApplications?
        var faults = CardFaults.none
        var isPresent = true
        var isPowered = true
        /// Response bytes not yet fetched with GET RESPONSE.
        var pending: [UInt8] = []
        /// The header (INS, P1, P2) and data of a command chain in progress.
        var chain: (header: [UInt8], data: [UInt8])?
        var lastProcessingTime: Duration = .zero
        var processedCount = 0
    }

    private let engine: Mutex<Engine>

    /// The applications the card carries.
    package let profile: SimulatedProfile

    /// Opens the card whose state is in `stateFile`, or a factory-new card; it starts inserted and powered.
    ///
    /// - Parameters:
    ///   - stateFile: the JSON state file; created factory-new when missing; nil keeps the state in memory.
    ///   - serial: the serial number in the AID; replaces the stored one when given. A new card without one
    ///     gets a random serial.
    ///   - reset: make the card factory-new even if the file holds a card (keeping its serial unless `serial`
    ///     is given), for `--reset`.
    ///   - profile: the applications on the card; a PIV application is added to a file that has none.
    /// - Throws: `SimulatorError` when the file exists but is corrupt or truncated (it names the file), or when
    ///   the new state cannot be written.
    package init(stateFile: String?, serial: UInt32? = nil, reset: Bool = false, profile: SimulatedProfile = .openpgp)
        throws
    {
        let store = stateFile.map { StateFile(path: $0) }
        var state: CardState?
        if let store {
            do {
                state = try store.load()
            } catch {
                // --reset replaces a corrupt file; without it the error names the file.
                guard reset, error.code == .corruptStateFile else { throw error }
            }
        }
        var needsWrite = state == nil || reset
        if reset, let existing = state {
            state = .factoryNew(serial: existing.serial, manufacturer: existing.manufacturer)
        }
        var card = state ?? .factoryNew(serial: serial ?? Self.randomSerial(for: profile))
        if state == nil || reset {
            for slot in KeySlot.allCases {
                card.keys[slot.rawValue].attributes = profile.openPGPTraits.factoryAttributes[slot.rawValue]
            }
        }
        if let serial, card.serial != serial {
            card.serial = serial
            needsWrite = true
        }
        if profile.hasPIV && card.piv == nil {
            card.piv = .factoryNew(issued: !profile.hasYubiKeyExtensions)
            needsWrite = true
        }
        if needsWrite, let store { try store.save(card) }
        self.profile = profile
        let piv = card.piv.map {
            PIVApplication(state: $0, base: card, store: store, yubiKeyExtensions: profile.hasYubiKeyExtensions)
        }
        engine = Mutex(
            Engine(
                application: OpenPGPApplication(state: card, store: store, traits: profile.openPGPTraits),
                piv: profile.hasPIV ? piv : nil, hasOpenPGP: profile.hasOpenPGP,
                yubiKey: profile.hasYubiKeyExtensions ? YubiKeyApplications(serial: card.serial) : nil))
    }

    /// A new card's serial: eight decimal digits on a YubiKey (`YubiKeyDevice.serialRange`), else any 32-bit
    /// value but 0 and all-ones, which some hosts read as "no serial".
    private static func randomSerial(for profile: SimulatedProfile) -> UInt32 {
        profile.hasYubiKeyExtensions ? YubiKeyDevice.randomSerial() : SecureRandom.uniform(0xFFFF_FFF0) + 1
    }

    /// The answer to reset: T=1, historical bytes announcing chaining and extended length.
    package var atr: [UInt8] { profile.atr }

    /// The serial number in the AID.
    package var serial: UInt32 { engine.withLock { $0.application.state.serial } }

    /// The full application identifier (16 bytes) with manufacturer and serial.
    package var aid: [UInt8] { engine.withLock { $0.application.aid } }

    /// What the card announces for long APDUs (historical bytes and `7F66`).
    package var lengthCapabilities: LengthCapabilities { profile.openPGPTraits.lengthCapabilities }

    /// The faults the card injects; see `CardFaults`.
    package var faults: CardFaults {
        get { engine.withLock { $0.faults } }
        set { engine.withLock { $0.faults = newValue } }
    }

    /// Whether the card is in the reader (false after a `vanish` fault or `remove()`).
    package var isPresent: Bool { engine.withLock { $0.isPresent } }

    /// Whether the card is powered.
    package var isPowered: Bool { engine.withLock { $0.isPowered } }

    /// The time the card spent on the last command, without any injected delay.
    package var lastProcessingTime: Duration { engine.withLock { $0.lastProcessingTime } }

    /// How many commands the card has answered since it was created.
    package var processedCount: Int { engine.withLock { $0.processedCount } }

    /// Powers the card on (cold reset); every verified state and pending answer is cleared.
    package func powerOn() {
        engine.withLock { engine in
            Self.clearVolatile(&engine)
            engine.isPowered = engine.isPresent
        }
    }

    /// Powers the card off; every verified state is lost.
    package func powerOff() {
        engine.withLock { engine in
            Self.clearVolatile(&engine)
            engine.isPowered = false
        }
    }

    /// Warm reset: the card stays powered, verified states and the selection are cleared.
    package func reset() {
        engine.withLock { engine in
            Self.clearVolatile(&engine)
            engine.isPowered = engine.isPresent
        }
    }

    /// Pulls the card out of the reader.
    package func remove() {
        engine.withLock { engine in
            Self.clearVolatile(&engine)
            engine.isPresent = false
            engine.isPowered = false
        }
    }

    /// Puts the card (back) into the reader, unpowered.
    package func insert() {
        engine.withLock { engine in
            Self.clearVolatile(&engine)
            engine.isPresent = true
            engine.isPowered = false
        }
    }

    private static func clearVolatile(_ engine: inout Engine) {
        engine.application.status = SecurityStatus()
        // A PIV card alone has PIV as its default application, selected from the reset on.
        engine.piv?.status = PIVSecurityStatus(selected: !engine.hasOpenPGP)
        engine.yubiKey?.selected = nil
        engine.pending = []
        engine.chain = nil
    }

    /// Processes one raw command APDU and returns the raw response; never traps on any input.
    ///
    /// Faults apply; a pulled or unpowered card answers nothing (an empty array), and injected delays are
    /// ignored here (use `respond(to:)` to honour them).
    package func process(_ command: [UInt8]) -> [UInt8] {
        switch respond(to: command) {
        case .response(let bytes, _): return bytes
        case .removed, .notPowered, .stalled: return []
        }
    }

    /// Processes one raw command APDU and says how the card answers, including injected faults.
    package func respond(to command: [UInt8]) -> CardReply {
        engine.withLock { engine in
            guard engine.isPresent else { return .removed }
            guard engine.isPowered else { return .notPowered }
            let fault = engine.faults.take(for: command.count >= 2 ? command[1] : nil)
            if case .status(let statusWord)? = fault {
                engine.pending = []
                return .response([statusWord.sw1, statusWord.sw2], delay: .zero)
            }
            if case .answer(let bytes)? = fault {
                engine.pending = []
                return .response(bytes, delay: .zero)
            }
            if case .vanish(afterProcessing: false)? = fault {
                engine.isPresent = false
                engine.isPowered = false
                Self.clearVolatile(&engine)
                return .removed
            }
            let clock = ContinuousClock()
            let start = clock.now
            let response = Self.exchange(command, engine: &engine)
            engine.lastProcessingTime = clock.now - start
            engine.processedCount += 1
            switch fault {
            case .vanish?:
                engine.isPresent = false
                engine.isPowered = false
                Self.clearVolatile(&engine)
                return .removed
            case .delay(let delay)?:
                return .response(response, delay: delay)
            case .stall?:
                engine.pending = []
                return .stalled
            case .malformed(let kind)?:
                return .response(kind.apply(to: response), delay: .zero)
            default:
                return .response(response, delay: .zero)
            }
        }
    }

    /// Transport: class byte, GET RESPONSE, chaining, then the application, then Le and `61xx`.
    /// ISO/IEC 7816-4, §5.1 and §5.3.
    private static func exchange(_ bytes: [UInt8], engine: inout Engine) -> [UInt8] {
        let parsed = CommandParsing.parse(
            bytes, extendedLength: engine.application.traits.lengthCapabilities.extendedLength)
        var command: CommandAPDU
        switch parsed {
        case .success(let parsedCommand):
            command = parsedCommand
        case .failure(let statusWord):
            engine.pending = []
            engine.chain = nil
            return encode(Reply(statusWord))
        }
        if let problem = classProblem(command.cla) {
            engine.pending = []
            return encode(Reply(problem))
        }
        if command.ins == CardInstruction.getResponse && !command.isChained {
            guard command.p1 == 0, command.p2 == 0 else { return encode(Reply(.incorrectP1P2)) }
            guard !engine.pending.isEmpty else { return encode(Reply(.conditionsOfUseNotSatisfied)) }
            let pending = engine.pending
            engine.pending = []
            return deliver(Reply(.success, data: pending), le: command.le, engine: &engine)
        }
        engine.pending = []
        guard command.data.count <= CardProfile.maxCommandData else { return encode(Reply(.wrongLength)) }
        let header = [command.ins, command.p1, command.p2]
        if command.isChained {
            var chain = engine.chain ?? (header, [])
            guard chain.header == header else {
                engine.chain = nil
                return encode(Reply(.lastCommandOfChainExpected))
            }
            chain.data += command.data
            guard chain.data.count <= CardProfile.maxChainedData else {
                engine.chain = nil
                return encode(Reply(.wrongLength))
            }
            engine.chain = chain
            return encode(.ok)
        }
        if let chain = engine.chain {
            engine.chain = nil
            guard chain.header == header else { return encode(Reply(.lastCommandOfChainExpected)) }
            command.data = chain.data + command.data
        }
        let reply = dispatch(command, engine: &engine)
        command.wipe()
        return deliver(reply, le: command.le, engine: &engine)
    }

    /// The applications SELECT by AID can pick.
    private enum Application: Equatable {
        case openPGP
        case piv
        case yubiKey(YubiKeyApplications.Application)
    }

    /// SELECT picks the application; every other command goes to the one selected.
    private static func dispatch(_ command: CommandAPDU, engine: inout Engine) -> Reply {
        if command.ins == CardInstruction.select { return select(command, engine: &engine) }
        if engine.piv?.status.selected == true { return runPIV(command, engine: &engine) }
        if let yubiKey = engine.yubiKey, yubiKey.selected != nil { return yubiKey.handle(command) }
        // Nothing selected: the OpenPGP application answers `6D00` until it is.
        guard engine.hasOpenPGP else { return Reply(.instructionNotSupported) }
        return engine.application.handle(command)
    }

    private static func runPIV(_ command: CommandAPDU, engine: inout Engine) -> Reply {
        guard var piv = engine.piv else { return Reply(.instructionNotSupported) }
        piv.base = engine.application.state
        let reply = piv.handle(command)
        engine.application.adoptPIV(piv.state)
        engine.piv = piv
        return reply
    }

    /// SELECT as ISO/IEC 7816-4 (§7.1.1) and GlobalPlatform cards have it: by DF name, the application the AID
    /// names, deselecting the previous one (its verified PINs are cleared); an AID naming none answers `6A82` and
    /// leaves the current application, its verified PINs and its state exactly as they were (Gnuk's
    /// `cmd_select_file`, Nitrokey 3's apdu-dispatch and Java Card do the same). SELECT of the MF goes to the
    /// OpenPGP application, which clears its PINs, and deselects the others.
    private static func select(_ command: CommandAPDU, engine: inout Engine) -> Reply {
        switch command.p1 {
        case 0x04:
            guard let target = application(named: command.data, engine: engine) else { return Reply(.fileNotFound) }
            if target != .openPGP { engine.application.status = SecurityStatus() }
            if target != .piv, engine.piv != nil { engine.piv?.status = PIVSecurityStatus() }
            switch target {
            case .openPGP:
                engine.yubiKey?.selected = nil
                return engine.application.handle(command)
            case .piv:
                engine.yubiKey?.selected = nil
                return runPIV(command, engine: &engine)
            case .yubiKey(let application):
                return engine.yubiKey?.select(application) ?? Reply(.fileNotFound)
            }
        case 0x00:
            guard engine.hasOpenPGP else { return Reply(.fileNotFound) }
            let reply = engine.application.handle(command)
            if reply.statusWord == .success {
                if engine.piv != nil { engine.piv?.status = PIVSecurityStatus() }
                engine.yubiKey?.selected = nil
            }
            return reply
        default:
            return Reply(.incorrectP1P2)
        }
    }

    /// The application a SELECT by DF name with `data` picks on this card, or nil.
    private static func application(named data: [UInt8], engine: Engine) -> Application? {
        if engine.piv != nil && PIVApplication.isSelected(by: data) { return .piv }
        if engine.yubiKey != nil, let application = YubiKeyApplications.application(named: data) {
            return .yubiKey(application)
        }
        if engine.hasOpenPGP && engine.application.isNamed(by: data) { return .openPGP }
        return nil
    }

    /// Only CLA `00` (and `10` for chaining) is the OpenPGP application's; secure messaging and logical
    /// channels are refused with their own status words.
    private static func classProblem(_ cla: UInt8) -> StatusWord? {
        if cla & 0x80 != 0 { return .classNotSupported }
        if cla & 0x0C != 0 { return .secureMessagingNotSupported }
        if cla & 0x03 != 0 { return .logicalChannelNotSupported }
        if cla & ~CommandAPDU.chainingBit != 0 { return .classNotSupported }
        return nil
    }

    /// Sends at most Ne bytes (256 when the command had no Le); the rest waits for GET RESPONSE behind `61xx`.
    private static func deliver(_ reply: Reply, le: Int?, engine: inout Engine) -> [UInt8] {
        let limit = le ?? CommandAPDU.shortMaxLe
        guard reply.data.count > limit else { return encode(reply) }
        engine.pending = Array(reply.data[limit...])
        return Array(reply.data[..<limit]) + [0x61, UInt8(truncatingIfNeeded: min(engine.pending.count, 256))]
    }

    private static func encode(_ reply: Reply) -> [UInt8] {
        reply.data + [reply.statusWord.sw1, reply.statusWord.sw2]
    }
}
