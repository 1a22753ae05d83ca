// Fuzz target for the simulator's command processing: a hostile client (through vpcd or in-process) sends any
// APDUs in any order. Each input is a sequence of commands (see chunks.swift) to one factory-new card kept in
// memory; an empty command resets the card (volatile state cleared) as a reader would. Nothing may trap, and
// every answer of a present, powered card ends with a status word.
// Built by Tests/Fuzz/fuzz.sh against TokenpinAPDU, TokenpinCore and TokenpinSimulator.
import TokenpinAPDU
import TokenpinSimulator

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSimulatorCommands(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let card = try? SimulatedCard(stateFile: nil, serial: 0x0000_1234) else {
        preconditionFailure("an in-memory card cannot fail to open")
    }
    for command in fuzzParts(data, size) {
        if command.isEmpty {
            card.reset()
            continue
        }
        let response = card.process(command)
        precondition(response.count >= 2, "the card answered without a status word")
        precondition((try? ResponseAPDU(parsing: response)) != nil, "the card's answer does not parse")
    }
    return 0
}
