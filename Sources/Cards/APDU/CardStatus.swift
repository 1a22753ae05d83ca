/// What a card's status word means, in the context of the command it answers: the one classification every card
/// application reads (ISO/IEC 7816-4, §5.1.3).
///
/// A wrong-PIN status (`63 Cx`) is a PIN outcome only in answer to an instruction that checks a PIN (VERIFY `20`,
/// CHANGE REFERENCE DATA `24`, RESET RETRY COUNTER `2C`); answering any other command it is a malformed answer,
/// since it would report tries and a wrong PIN where no PIN was tried.
public enum CardStatus: Sendable, Equatable {
    /// `90 00`.
    case success
    /// `63 Cx`, answering a PIN instruction: the PIN was wrong (or, to an empty VERIFY, not verified) and this
    /// many tries are left.
    case wrongPIN(retriesLeft: Int)
    /// `69 83`: the authentication method is blocked.
    case blocked
    /// `69 82`: the command needs a PIN verified or a key authenticated first.
    case securityStatusNotSatisfied
    /// `69 85`: conditions of use not satisfied.
    case conditionsNotSatisfied
    /// `6A 82`: no such file or application.
    case notFound
    /// `6A 88`: no such referenced data (a key, a data object).
    case referencedDataNotFound
    /// `6A 80`: the card refused the command data.
    case incorrectData
    /// `6B 00` or `6A 86`: wrong parameters P1-P2.
    case wrongParameters(StatusWord)
    /// `6D 00`, `6E 00`, `6A 81`, `68 81`, `68 82`, `68 84`: the card does not support the command.
    case unsupported(StatusWord)
    /// Any other status word.
    case unexpected(StatusWord)

    /// The classification of `statusWord` on its own, without the command's context (`63 Cx` is a wrong PIN).
    public init(_ statusWord: StatusWord) {
        if let retries = statusWord.retriesLeft {
            self = .wrongPIN(retriesLeft: retries)
            return
        }
        switch statusWord {
        case .success: self = .success
        case .authenticationMethodBlocked: self = .blocked
        case .securityStatusNotSatisfied: self = .securityStatusNotSatisfied
        case .conditionsOfUseNotSatisfied: self = .conditionsNotSatisfied
        case .fileNotFound: self = .notFound
        case .referencedDataNotFound: self = .referencedDataNotFound
        case .incorrectData: self = .incorrectData
        case .wrongP1P2, .incorrectP1P2: self = .wrongParameters(statusWord)
        case .instructionNotSupported, .classNotSupported, StatusWord(rawValue: 0x6A81), .logicalChannelNotSupported,
            .secureMessagingNotSupported, .commandChainingNotSupported:
            self = .unsupported(statusWord)
        default: self = .unexpected(statusWord)
        }
    }

    /// The classification of `statusWord` answering `instruction`.
    /// - Throws: `.malformed(.unexpectedStatus)` for a wrong-PIN status answering an instruction that checks no PIN.
    public init(_ statusWord: StatusWord, answering instruction: UInt8, names: InstructionNames = .iso)
        throws(CardCommandError)
    {
        if statusWord.isMisplacedPINStatus(answering: instruction) {
            throw .malformed(
                APDUError(
                    .unexpectedStatus,
                    "\(names.name(of: instruction)) answered \(statusWord), a wrong-PIN status, though no PIN was sent"
                ))
        }
        self.init(statusWord)
    }
}

/// How the card applications name instructions in messages: `GET DATA`, `GENERAL AUTHENTICATE`.
///
/// A short list searched from its end, not a dictionary: every session builds its names at its start, and the first
/// `[UInt8: String]` of a process costs about 250,000 instructions of generic set-up (callgrind, a whole `tokenpin
/// verify`), for the name a message needs only when a card refuses.
public struct InstructionNames: Sendable {
    private var entries: [(instruction: UInt8, name: String)]

    /// The interindustry instructions of ISO/IEC 7816-4 and 7816-8 that tokenpin sends.
    public static let iso = InstructionNames(entries: [
        (0xA4, "SELECT"), (0x20, "VERIFY"), (0x24, "CHANGE REFERENCE DATA"), (0x2C, "RESET RETRY COUNTER"),
        (0xCA, "GET DATA"), (0xCB, "GET DATA"), (0xDA, "PUT DATA"), (0xDB, "PUT DATA"),
        (0x47, "GENERATE ASYMMETRIC KEY PAIR"), (0xC0, "GET RESPONSE"), (0x87, "GENERAL AUTHENTICATE"),
        (0x2A, "PERFORM SECURITY OPERATION"),
    ])

    /// These names with an application's own added (or replacing the interindustry ones).
    public func adding(_ more: KeyValuePairs<UInt8, String>) -> InstructionNames {
        InstructionNames(entries: entries + more.map { (instruction: $0.key, name: $0.value) })
    }

    /// The instruction's name, or `instruction 7F` for one without.
    public func name(of instruction: UInt8) -> String {
        entries.last { $0.instruction == instruction }?.name ?? "instruction " + Hex.encode([instruction])
    }
}

/// Why a command to a card did not succeed, before an application gives it its own meaning.
public enum CardCommandError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The card answered a status other than `90 00` to the command `command` names (`GET DATA`).
    case refused(CardStatus, command: String)
    /// The answer has no status word, is too long, or carries a status the command cannot have.
    case malformed(APDUError)
    /// The connection failed: the card was removed, the reader or pcscd went away.
    case transport(CardTransportError)
    /// The command cannot be sent as asked (too long for the card); nothing reached the card.
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .refused(let status, let command): "\(command) refused: \(status)"
        case .malformed(let error): "the card's answer is malformed: \(error)"
        case .transport(let error): "the card connection failed: \(error)"
        case .invalidArgument(let detail): detail
        }
    }
}

/// An application's error type (OpenPGP's, PIV's) as far as every application reads a failed command alike; the
/// application says only what a status means to it (`meaning(of:)`), the rest maps here once.
public protocol CardApplicationError: Error {
    /// The PIN was wrong; this many tries are left.
    static func wrongPIN(retriesLeft: Int) -> Self
    /// The PIN (or the credential) is blocked.
    static var blocked: Self { get }
    /// The command needs a PIN verified first.
    static var securityStatusNotSatisfied: Self { get }
    /// No such key or referenced data.
    static var referencedDataNotFound: Self { get }
    /// The card refused the command data.
    static var incorrectData: Self { get }
    /// Any other status.
    static func unexpected(_ statusWord: StatusWord) -> Self
    /// A malformed answer.
    static func malformed(_ error: APDUError) -> Self
    /// The connection failed.
    static func transport(_ error: CardTransportError) -> Self
    /// The command could not be sent as asked.
    static func invalidArgument(_ detail: String) -> Self

    /// What `status` means to this application where that is its own (not found, conditions, unsupported,
    /// wrong parameters); nil for the common reading.
    static func meaning(of status: CardStatus) -> Self?
}

extension CardApplicationError {
    /// The application's error for a failed command.
    public init(_ error: CardCommandError) {
        switch error {
        case .refused(let status, _): self = Self.meaning(of: status) ?? Self.common(status)
        case .malformed(let error): self = .malformed(error)
        case .transport(let error): self = .transport(error)
        case .invalidArgument(let detail): self = .invalidArgument(detail)
        }
    }

    /// The error for a status word on its own, or nil for `90 00`.
    public init?(statusWord: StatusWord) {
        guard !statusWord.isSuccess else { return nil }
        self.init(.refused(CardStatus(statusWord), command: ""))
    }

    private static func common(_ status: CardStatus) -> Self {
        switch status {
        case .wrongPIN(let retries): .wrongPIN(retriesLeft: retries)
        case .blocked: .blocked
        case .securityStatusNotSatisfied: .securityStatusNotSatisfied
        case .referencedDataNotFound: .referencedDataNotFound
        case .incorrectData: .incorrectData
        case .success: .unexpected(.success)
        case .conditionsNotSatisfied: .unexpected(.conditionsOfUseNotSatisfied)
        case .notFound: .unexpected(.fileNotFound)
        case .wrongParameters(let sw), .unsupported(let sw), .unexpected(let sw): .unexpected(sw)
        }
    }
}
