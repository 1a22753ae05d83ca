import FoundationEssentials
import TokenpinCore
import TokenpinService
#if canImport(Glibc)
import Glibc
#endif

/// The terminal state to put back if a signal ends the process while echo is off.
///
/// nonisolated(unsafe): written only on the main thread before the signal handlers are installed and read only
/// by those handlers (tcsetattr is async-signal-safe); there is no concurrent writer.
nonisolated(unsafe) private var savedTerminal = termios()
nonisolated(unsafe) private var savedTerminalFD: Int32 = -1

/// The signals that end a process: while a prompt has the terminal in raw mode, each puts it back first.
private let terminatingSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

/// Puts the terminal back as it was, drops what was typed and not read, and exits 128 + the signal (130 for
/// SIGINT). Only async-signal-safe calls: tcsetattr, write, _exit.
private func restoreTerminalAndExit(_ signal: Int32) {
    if savedTerminalFD >= 0 {
        tcsetattr(savedTerminalFD, TCSAFLUSH, &savedTerminal)
        var newline: UInt8 = 0x0A
        _ = Glibc.write(savedTerminalFD, &newline, 1)
    }
    _exit(128 + signal)
}

/// Reads secrets from the terminal with echo off, one dot per character (the seeds' passcode dots).
///
/// Backspace removes a character, Ctrl-U clears the line, Enter ends, Ctrl-C, Ctrl-D and Escape cancel; escape
/// sequences (arrow keys, Delete, Home) are read whole and ignored. SIGINT, SIGTERM, SIGHUP and SIGQUIT during a
/// prompt put the terminal back before the process exits.
/// The typed bytes go straight into guarded memory; nothing is echoed but the dots.
struct TerminalReader {
    let fd: Int32
    let style: Style
    let dot: String

    /// Opens the controlling terminal, or nil when there is none.
    static func open(style: Style, dot: String) -> TerminalReader? {
        let fd = Glibc.open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return nil }
        return TerminalReader(fd: fd, style: style, dot: dot)
    }

    /// The longest secret accepted, in bytes.
    static let capacity = 256

    func write(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
        bytes.removeAll()
    }

    /// Shows `prompt` and reads one secret.
    func readSecret(prompt: String) throws(ServiceError) -> SecretBytes {
        var original = termios()
        guard tcgetattr(fd, &original) == 0 else { throw .input("cannot read the terminal settings") }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        savedTerminal = original
        savedTerminalFD = fd
        for number in terminatingSignals { signal(number, restoreTerminalAndExit) }
        guard tcsetattr(fd, TCSAFLUSH, &raw) == 0 else {
            savedTerminalFD = -1
            for number in terminatingSignals { signal(number, SIG_DFL) }
            throw .input("cannot switch terminal echo off")
        }
        defer {
            // TCSAFLUSH also discards what was typed and not read: after a cancel nothing reaches the shell.
            tcsetattr(fd, TCSAFLUSH, &original)
            savedTerminalFD = -1
            for number in terminatingSignals { signal(number, SIG_DFL) }
        }
        write(style.prompt(prompt + ": "))
        let buffer = SecretBytes(count: Self.capacity)
        var length = 0
        var characters = 0
        var byte: UInt8 = 0
        let dotText = style.dots(dot)
        func erase(_ count: Int) {
            guard count > 0 else { return }
            write(String(repeating: "\u{8} \u{8}", count: count))
        }
        while true {
            let count = Glibc.read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else {
                write("\n")
                throw .cancelled
            }
            switch byte {
            case 0x0D, 0x0A:
                write("\n")
                byte = 0
                return buffer.prefix(length)
            case 0x1B:  // Escape alone cancels; an escape sequence (arrows, Delete, Home...) is read whole and ignored
                if skipEscapeSequence() { continue }
                write("\n")
                tcflush(fd, TCIFLUSH)
                throw .cancelled
            case 0x03, 0x04:  // Ctrl-C, Ctrl-D
                write("\n")
                byte = 0
                tcflush(fd, TCIFLUSH)
                throw .cancelled
            case 0x7F, 0x08:  // Backspace
                guard length > 0 else { continue }
                buffer.withUnsafeMutableBytes { bytes in
                    // Remove one UTF-8 character: continuation bytes, then its lead byte.
                    repeat {
                        length -= 1
                        let removed = bytes[length]
                        bytes[length] = 0
                        if removed & 0xC0 != 0x80 { break }
                    } while length > 0
                }
                characters -= 1
                erase(1)
            case 0x15:  // Ctrl-U
                buffer.withUnsafeMutableBytes { secureZero($0) }
                length = 0
                erase(characters)
                characters = 0
            case 0x00..<0x20:
                continue
            default:
                guard length < Self.capacity else {
                    write("\u{7}")
                    continue
                }
                buffer.withUnsafeMutableBytes { $0[length] = byte }
                length += 1
                if byte & 0xC0 != 0x80 {
                    characters += 1
                    write(dotText)
                }
            }
        }
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
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, timeoutMilliseconds) == 1 else { return nil }
        var byte: UInt8 = 0
        return Glibc.read(fd, &byte, 1) == 1 ? byte : nil
    }

    /// Lists numbered options and reads a choice (echo on); empty input or anything else cancels.
    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int {
        write(style.prompt(question) + "\n")
        for (index, option) in options.enumerated() { write("  \(index + 1)) \(option)\n") }
        write(style.prompt("Number: "))
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(fd, &byte, 1) == 1 && byte != 0x0A && answer.count < 8 { answer.append(byte) }
        let text = String(decoding: answer, as: UTF8.self).trimmingBlanks()
        guard let number = Int(text), (1...options.count).contains(number) else { throw .cancelled }
        return number - 1
    }

    /// Shows `question` and reads a line (echo on): true only when it is exactly `word`.
    func confirmTyped(_ question: String, word: String) throws(ServiceError) -> Bool {
        write(question + "\n" + style.prompt("Type \(word) to go ahead (anything else keeps it): "))
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(fd, &byte, 1) == 1 && byte != 0x0A && answer.count < 64 { answer.append(byte) }
        return String(decoding: answer, as: UTF8.self).trimmingBlanks() == word
    }

    /// Asks a yes/no question on the terminal (echo on).
    func confirm(_ question: String) throws(ServiceError) -> Bool {
        write(style.prompt(question + " [y/N] "))
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(fd, &byte, 1) == 1 && byte != 0x0A && answer.count < 16 { answer.append(byte) }
        let text = String(decoding: answer, as: UTF8.self).trimmingBlanks().lowercased()
        return text == "y" || text == "yes"
    }
}

/// Reads secrets from standard input, one line per prompt (`--pin-stdin`), straight into guarded memory.
struct StdinReader {
    static let capacity = 1024

    /// Reads one line; an end of input before it is an error naming the prompt.
    func readLine(for prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        let buffer = SecretBytes(count: Self.capacity)
        var length = 0
        var byte: UInt8 = 0
        var sawAny = false
        while true {
            let count = read(0, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            sawAny = true
            if byte == 0x0A { break }
            guard length < Self.capacity else {
                byte = 0
                throw .input("a line on standard input is longer than \(Self.capacity) bytes")
            }
            buffer.withUnsafeMutableBytes { $0[length] = byte }
            length += 1
        }
        byte = 0
        guard sawAny else {
            throw .input("standard input ended before the \(prompt.spokenName) line (--pin-stdin reads one line per prompt)")
        }
        if length > 0, buffer.withUnsafeBytes({ $0[length - 1] }) == 0x0D { length -= 1 }
        return buffer.prefix(length)
    }
}
