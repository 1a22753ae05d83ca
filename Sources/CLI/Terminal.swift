import FoundationEssentials
import TokenpinCore
import TokenpinService
import TokenpinSystem

/// Reads secrets from the terminal with echo off, one dot per character (the seeds' passcode dots).
///
/// Backspace removes a character, Ctrl-U clears the line, Enter ends, Ctrl-C, Ctrl-D and Escape cancel; escape
/// sequences (arrow keys, Delete, Home) are read whole and ignored. SIGINT, SIGTERM, SIGHUP and SIGQUIT during a
/// prompt put the terminal back before the process exits.
/// The typed bytes go straight into guarded memory; nothing is echoed but the dots.
struct TerminalReader {
    let terminal: Terminal
    let style: Style
    let dot: String

    /// Opens the controlling terminal, or nil when there is none.
    static func open(style: Style, dot: String) -> TerminalReader? {
        guard let terminal = try? Terminal.openControlling() else { return nil }
        return TerminalReader(terminal: terminal, style: style, dot: dot)
    }

    /// The longest secret accepted, in bytes.
    static let capacity = 256

    func write(_ text: String) {
        // Anything shown on the terminal supersedes a pending "still working" line.
        SlowStepNotice.shared.cancel()
        try? terminal.write(Array(text.utf8))
    }

    /// Shows `prompt` and reads one secret, with echo off. The typed bytes are wiped before this returns; the
    /// secret returned is in guarded memory of its own.
    func readSecret(prompt: String) throws(ServiceError) -> SecretBytes {
        try withEchoOff { () throws(ServiceError) -> SecretBytes in try readTypedSecret(prompt: prompt) }
    }

    /// Runs `body` with the terminal in raw mode (no echo, no line editing, no signal keys) and puts the settings
    /// back however it ends; a signal that ends the process meanwhile puts them back too (`TerminalSignalGuard`).
    func withEchoOff<Result: ~Copyable>(
        _ body: () throws(ServiceError) -> Result
    ) throws(ServiceError) -> Result {
        guard let original = try? terminal.settings() else { throw .input("cannot read the terminal settings") }
        TerminalSignalGuard.arm(terminal: terminal, restoring: original)
        guard (try? terminal.apply(original.raw)) != nil else {
            TerminalSignalGuard.disarm()
            throw .input("cannot switch terminal echo off")
        }
        defer {
            // Applying also discards what was typed and not read: after a cancel nothing reaches the shell.
            try? terminal.apply(original)
            TerminalSignalGuard.disarm()
        }
        return try body()
    }

    /// What a typed byte leaves to do.
    private enum KeyOutcome {
        /// Read the next byte.
        case typing
        /// Enter: the secret is complete.
        case entered
        /// Ctrl-C, Ctrl-D or Escape alone.
        case cancelled
    }

    /// Shows `prompt` and reads bytes into guarded memory up to Enter; the terminal must be in raw mode.
    private func readTypedSecret(prompt: String) throws(ServiceError) -> SecretBytes {
        write(style.prompt(prompt + ": "))
        var typed = TypedSecret(capacity: Self.capacity)
        let dotText = style.dots(dot)
        while true {
            // readByte retries EINTR; end of file or an error cancels.
            guard case var byte? = try? terminal.readByte() else {
                write("\n")
                throw .cancelled
            }
            defer { byte = 0 }
            switch edit(&typed, with: byte, dotText: dotText) {
            case .typing:
                continue
            case .entered:
                write("\n")
                return typed.secret()
            case .cancelled:
                write("\n")
                try? terminal.discardInput()
                throw .cancelled
            }
        }
    }

    /// Applies one typed byte to `typed` and shows its effect: a dot per character, erasing, a bell when full.
    private func edit(_ typed: inout TypedSecret, with byte: UInt8, dotText: String) -> KeyOutcome {
        switch byte {
        case 0x0D, 0x0A:
            return .entered
        case 0x1B:  // Escape alone cancels; an escape sequence (arrows, Delete, Home...) is read whole and ignored
            return skipEscapeSequence() ? .typing : .cancelled
        case 0x03, 0x04:  // Ctrl-C, Ctrl-D
            return .cancelled
        case 0x7F, 0x08:  // Backspace
            if typed.removeLastCharacter() { erase(1) }
        case 0x15:  // Ctrl-U
            erase(typed.clear())
        case 0x00..<0x20:
            break
        default:
            switch typed.append(byte) {
            case .full: write("\u{7}")
            case .character: write(dotText)
            case .continuation: break
            }
        }
        return .typing
    }

    /// Takes `count` dots off the terminal.
    private func erase(_ count: Int) {
        guard count > 0 else { return }
        write(String(repeating: "\u{8} \u{8}", count: count))
    }

    /// After an Escape: reads the rest of an escape sequence (CSI `ESC [ params final`, SS3 `ESC O x`, or
    /// `ESC x` from an Alt key) and returns true, or returns false when nothing follows within 50 ms (the
    /// Escape key on its own).
    func skipEscapeSequence() -> Bool {
        guard let first = readByte(timeoutMilliseconds: 50) else { return false }
        switch first {
        case UInt8(ascii: "["):
            // Parameter and intermediate bytes (0x20-0x3F), then one final byte (0x40-0x7E).
            while let next = readByte(timeoutMilliseconds: 50) {
                if (0x40...0x7E).contains(next) { break }
                if !(0x20...0x3F).contains(next) { break }
            }
        case UInt8(ascii: "O"):
            _ = readByte(timeoutMilliseconds: 50)
        default:
            break
        }
        return true
    }

    /// One byte from the terminal, or nil when none comes within `timeoutMilliseconds`.
    func readByte(timeoutMilliseconds: Int32) -> UInt8? {
        terminal.readByte(timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Reads a line (echo on) up to its newline, end of file or an error; at most `maximumCount` bytes are kept,
    /// reading stops at the first byte beyond them.
    func readLine(maximumCount: Int) -> [UInt8] {
        var answer: [UInt8] = []
        while case let byte? = try? terminal.readByte(), byte != 0x0A, answer.count < maximumCount {
            answer.append(byte)
        }
        return answer
    }

    /// Lists numbered options and reads a choice (echo on); empty input or anything else cancels.
    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int {
        write(style.prompt(question) + "\n")
        for (index, option) in options.enumerated() { write("  \(index + 1)) \(option)\n") }
        write(style.prompt("Number: "))
        let answer = readLine(maximumCount: 8)
        let text = String(decoding: answer, as: UTF8.self).trimmingBlanks()
        guard let number = Int(text), (1...options.count).contains(number) else { throw .cancelled }
        return number - 1
    }

    /// Shows `question` and reads a line (echo on): true only when it is exactly `word`.
    func confirmTyped(_ question: String, word: String) throws(ServiceError) -> Bool {
        write(question + "\n" + style.prompt("Type \(word) to go ahead (anything else keeps it): "))
        let answer = readLine(maximumCount: 64)
        return String(decoding: answer, as: UTF8.self).trimmingBlanks() == word
    }

    /// Asks a yes/no question on the terminal (echo on).
    func confirm(_ question: String) throws(ServiceError) -> Bool {
        write(style.prompt(question + " [y/N] "))
        let answer = readLine(maximumCount: 16)
        let text = String(decoding: answer, as: UTF8.self).trimmingBlanks().lowercased()
        return text == "y" || text == "yes"
    }
}

/// A secret being typed at a prompt: its bytes in guarded memory, and how many characters (dots) show for them.
/// Bytes taken away are zeroed at once; the buffer is wiped when the value ends.
private struct TypedSecret: ~Copyable {
    /// The guarded buffer; the secret is its first `length` bytes.
    let buffer: SecretBytes
    private(set) var length = 0
    /// The dots shown: UTF-8 lead bytes typed and not taken away. A continuation byte typed on its own shows no
    /// dot, yet Backspace still counts one down, so this can fall below zero.
    private(set) var characters = 0

    /// What `append` did with a byte.
    enum Appended {
        /// The buffer is full; the byte is dropped.
        case full
        /// A character's first byte: one more dot.
        case character
        /// A UTF-8 continuation byte: part of the character before.
        case continuation
    }

    init(capacity: Int) {
        buffer = SecretBytes(count: capacity)
    }

    /// The typed bytes in new guarded memory.
    func secret() -> SecretBytes {
        buffer.prefix(length)
    }

    /// Adds a byte at the end, unless the buffer is full.
    mutating func append(_ byte: UInt8) -> Appended {
        guard length < buffer.count else { return .full }
        let end = length
        buffer.withUnsafeMutableBytes { $0[end] = byte }
        length += 1
        guard byte & 0xC0 != 0x80 else { return .continuation }
        characters += 1
        return .character
    }

    /// Removes one UTF-8 character, its continuation bytes then its lead byte, zeroing them; false when nothing
    /// was typed.
    mutating func removeLastCharacter() -> Bool {
        guard length > 0 else { return false }
        var end = length
        buffer.withUnsafeMutableBytes { bytes in
            repeat {
                end -= 1
                let removed = bytes[end]
                bytes[end] = 0
                if removed & 0xC0 != 0x80 { break }
            } while end > 0
        }
        length = end
        characters -= 1
        return true
    }

    /// Wipes the whole buffer and returns how many dots showed.
    mutating func clear() -> Int {
        buffer.withUnsafeMutableBytes { secureZero($0) }
        length = 0
        defer { characters = 0 }
        return characters
    }
}

/// Reads secrets from standard input, one line per prompt (`--pin-stdin`), straight into guarded memory.
struct StdinReader {
    static let capacity = 1024

    /// Reads one line; an end of input before it is an error naming the prompt.
    func readLine(for prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        let buffer = SecretBytes(count: Self.capacity)
        var length = 0
        var sawAny = false
        while true {
            // readByte retries EINTR; end of file or an error ends the line.
            guard
                case var byte? = try? FileDescriptor.withBorrowed(
                    0,
                    { (input: borrowing FileDescriptor) throws(Errno) in
                        try input.readByte()
                    })
            else { break }
            defer { byte = 0 }
            sawAny = true
            if byte == 0x0A { break }
            guard length < Self.capacity else {
                throw .input("a line on standard input is longer than \(Self.capacity) bytes")
            }
            buffer.withUnsafeMutableBytes { $0[length] = byte }
            length += 1
        }
        guard sawAny else {
            throw .input(
                "standard input ended before the \(prompt.spokenName) line (--pin-stdin reads one line per prompt)")
        }
        if length > 0, buffer.withUnsafeBytes({ $0[length - 1] }) == 0x0D { length -= 1 }
        return buffer.prefix(length)
    }
}
