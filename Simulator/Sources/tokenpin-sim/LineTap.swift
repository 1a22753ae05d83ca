import TokenpinAPDU
import TokenpinSimulator
internal import TokenpinSystem

/// `--tap FILE`: what an eavesdropper on the reader's line keeps of a session, for replay tests. Each answer of a
/// card key, one hex line with its status word: a successful PSO:DECIPHER, or a PIV GENERAL AUTHENTICATE with a
/// key slot (not the management key's challenges), its `61xx` parts fetched with GET RESPONSE joined into one
/// answer (an RSA 2048 answer does not fit a short APDU). A test replays the lines from a fake card with the
/// `answer:` fault.
///
/// Used from the serving thread only, like the card's connection to vpcd.
final class LineTap {
    let path: String
    /// The data of a key answer whose rest the card announced with `61xx`, until the last part comes.
    private var pending: [UInt8]?

    init(path: String) { self.path = path }

    /// Notes one exchange on the line.
    func record(_ command: [UInt8], _ answer: [UInt8]) {
        guard command.count >= 4, answer.count >= 2 else { return }
        let decipher =
            command[1] == CardInstruction.performSecurityOperation && command[2] == 0x80 && command[3] == 0x86
        let pivKey = command[1] == PIVInstruction.generalAuthenticate && command[3] != 0x9B
        let chainedPart = command[0] & 0x10 != 0
        if (decipher || pivKey) && !chainedPart {
            pending = []
        } else if command[1] != CardInstruction.getResponse {
            pending = nil
            return
        }
        guard let data = pending else { return }
        let body = data + answer.dropLast(2)
        if answer[answer.count - 2] == 0x61 {
            pending = body
            return
        }
        pending = nil
        guard answer.suffix(2) == [0x90, 0x00], !body.isEmpty else { return }
        append(body + [0x90, 0x00])
    }

    private func append(_ answer: [UInt8]) {
        do {
            let file = try FileDescriptor.open(path, .writeOnly, options: [.append, .create], permissions: 0o600)
            try file.writeAll(Array((Hex.encode(answer) + "\n").utf8))
        } catch {
            printError("tokenpin-sim: cannot write the tap file \(path): \(error)")
        }
    }
}
