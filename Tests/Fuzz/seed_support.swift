// Shared by the seed writers (seed_transcript.swift, piv_seed_transcript.swift): a connection to the simulated card
// that records what passes, and the length-prefixed form of chunks.swift that the fuzz targets read.
import Foundation
import TokenpinAPDU
import TokenpinCore
import TokenpinSimulator

/// A connection that records each command and answer passing through it.
final class RecordingConnection: CardConnection {
    let inner: SimulatedCardConnection
    var commands: [[UInt8]] = []
    var answers: [[UInt8]] = []
    var atr: [UInt8] { inner.atr }
    var lengthCapabilities: LengthCapabilities {
        get { inner.lengthCapabilities }
        set { inner.lengthCapabilities = newValue }
    }

    init(_ inner: SimulatedCardConnection) { self.inner = inner }

    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        let answer = try inner.transmit(command)
        commands.append(command)
        answers.append(answer)
        return answer
    }
}

func secret(_ text: String) -> SecretBytes {
    var bytes = Array(text.utf8)
    return SecretBytes(consuming: &bytes)
}

func framed(_ parts: [[UInt8]]) -> Data {
    var out = Data()
    for part in parts {
        out.append(contentsOf: [UInt8(part.count >> 8), UInt8(part.count & 0xFF)])
        out.append(contentsOf: part)
    }
    return out
}
