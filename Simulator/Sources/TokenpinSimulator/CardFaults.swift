import TokenpinAPDU

/// Faults the simulated card injects, for testing everything above it.
///
/// Each rule names the instruction it fires on (or every command) and how many times it fires. The first
/// matching rule applies; a rule whose count runs out is removed.
package struct CardFaults: Sendable, Equatable {
    /// What happens to a command a rule matches.
    package enum Fault: Sendable, Equatable {
        /// The card is pulled: no answer comes and the card stays absent until `SimulatedCard.insert()`.
        /// With `afterProcessing` the command takes effect first (a counter already decremented), as when a
        /// card is pulled between its write and its answer.
        case vanish(afterProcessing: Bool)
        /// The answer comes after `delay` (`delay:MS`, or `late:MS` for an answer past a client's deadline).
        case delay(Duration)
        /// The command takes effect and the card never answers it: the reader waits until the card is pulled
        /// (as vpcd, and pcscd with it, wait for a card that went quiet mid-command).
        case stall
        /// The command takes effect, but the answer bytes are malformed.
        case malformed(Malformation)
        /// The card answers this status word without data and without doing anything.
        case status(StatusWord)
        /// The card answers these bytes (data and status word) without doing anything: a fake card replaying
        /// an answer captured on the line.
        case answer([UInt8])
    }

    /// Ways an answer can be malformed.
    package enum Malformation: String, Sendable, Equatable, CaseIterable {
        /// No bytes at all.
        case empty
        /// One byte: half a status word.
        case oneByte
        /// The data with its last byte cut off.
        case truncated
        /// `9000` after a TLV whose length runs past the end of the data.
        case badTLV
    }

    /// One fault and when it fires.
    package struct Rule: Sendable, Equatable {
        /// The instruction byte it fires on; nil for every command.
        package var instruction: UInt8?
        /// The fault.
        package var fault: Fault
        /// How many more times it fires; nil for always.
        package var remaining: Int?

        /// Creates a rule.
        package init(instruction: UInt8?, fault: Fault, times: Int? = nil) {
            self.instruction = instruction
            self.fault = fault
            self.remaining = times
        }
    }

    /// The rules, first match wins.
    package var rules: [Rule]

    /// No faults.
    package static let none = CardFaults(rules: [])

    /// Creates a set of rules.
    package init(rules: [Rule]) { self.rules = rules }

    /// Finds the fault for a command with `instruction` and uses up one firing of its rule.
    mutating func take(for instruction: UInt8?) -> Fault? {
        guard let index = rules.firstIndex(where: { $0.instruction == nil || $0.instruction == instruction }) else {
            return nil
        }
        let fault = rules[index].fault
        if let remaining = rules[index].remaining {
            if remaining <= 1 { rules.remove(at: index) } else { rules[index].remaining = remaining - 1 }
        }
        return fault
    }

    /// Parses a rule from its command-line form: `KIND[:ARG][@INS][*TIMES]`.
    ///
    /// Kinds: `vanish`, `vanish-after`, `delay:MILLISECONDS` (or `late:MILLISECONDS`), `stall`,
    /// `malformed:empty|oneByte|truncated|badTLV`, `sw:HEX4`, `answer:HEX` (data and status word). `@2A` limits
    /// the rule to INS `2A`; `*1` makes it fire once. Examples: `sw:6A88@CA`, `vanish-after@20*1`, `delay:1500`,
    /// `stall@2A*1`, `late:15000@87`. Every kind works on every profile: faults act on the card's answers, not on
    /// an application.
    package static func parseRule(_ text: String) throws(SimulatorError) -> Rule {
        var body = Substring(text)
        var times: Int?
        if let star = body.lastIndex(of: "*") {
            guard let count = Int(body[body.index(after: star)...]), count > 0 else {
                throw SimulatorError(.invalidArgument, "fault '\(text)': the count after * must be a positive number")
            }
            times = count
            body = body[..<star]
        }
        var instruction: UInt8?
        if let at = body.lastIndex(of: "@") {
            guard let bytes = Hex.decode(String(body[body.index(after: at)...])), bytes.count == 1 else {
                throw SimulatorError(.invalidArgument, "fault '\(text)': the INS after @ must be one hex byte")
            }
            instruction = bytes[0]
            body = body[..<at]
        }
        let parts = body.split(separator: ":", maxSplits: 1).map(String.init)
        let argument = parts.count > 1 ? parts[1] : nil
        let fault: Fault
        switch (parts.first ?? "", argument) {
        case ("vanish", nil): fault = .vanish(afterProcessing: false)
        case ("vanish-after", nil): fault = .vanish(afterProcessing: true)
        case ("delay", let value?), ("late", let value?):
            guard let milliseconds = Int(value), milliseconds >= 0 else {
                throw SimulatorError(.invalidArgument, "fault '\(text)': \(parts[0]) needs milliseconds")
            }
            fault = .delay(.milliseconds(milliseconds))
        case ("stall", nil): fault = .stall
        case ("malformed", let value?):
            guard let kind = Malformation(rawValue: value) else {
                throw SimulatorError(
                    .invalidArgument,
                    "fault '\(text)': malformed takes "
                        + Malformation.allCases.map(\.rawValue).joined(separator: ", "))
            }
            fault = .malformed(kind)
        case ("sw", let value?):
            guard let bytes = Hex.decode(value), bytes.count == 2 else {
                throw SimulatorError(.invalidArgument, "fault '\(text)': sw needs four hex digits")
            }
            fault = .status(StatusWord(sw1: bytes[0], sw2: bytes[1]))
        case ("answer", let value?):
            guard let bytes = Hex.decode(value), bytes.count >= 2 else {
                throw SimulatorError(.invalidArgument, "fault '\(text)': answer needs hex data ending in a status word")
            }
            fault = .answer(bytes)
        default:
            throw SimulatorError(
                .invalidArgument,
                "fault '\(text)': expected vanish, vanish-after, delay:MS, late:MS, stall, "
                    + "malformed:KIND, sw:HEX4 or answer:HEX")
        }
        return Rule(instruction: instruction, fault: fault, times: times)
    }
}

extension CardFaults.Malformation {
    /// Spoils a well-formed answer.
    func apply(to response: [UInt8]) -> [UInt8] {
        switch self {
        case .empty: return []
        case .oneByte: return Array(response.prefix(1))
        case .truncated: return Array(response.dropLast())
        case .badTLV: return [0x7F, 0x49, 0x82, 0x01, 0x00, 0x86] + [0x90, 0x00]
        }
    }
}
