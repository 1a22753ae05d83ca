import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinOpenPGP
import TokenpinSimulator
import TokenpinTestSupport

extension ResettingConnection {
    /// A connection to `card` that resets it after a transaction that verified a PIN.
    convenience init(card: SimulatedCard) {
        self.init(SimulatedCardConnection(card: card, sleep: { _ in }), reset: { card.reset() })
    }
}

@Suite("OpenPGPCard: the application opened once, re-selected after a reset")
struct OpenPGPCardTests {
    static let select: UInt8 = 0xA4

    @Test("open selects and reads the application related data in one transaction")
    func openReadsOnce() throws {
        let connection = ResettingConnection(card: try SimulatedCard(stateFile: nil, serial: 0x0BAD_CAFE))
        let card = try OpenPGPCard.open(connection)
        #expect(connection.transactions == 1)
        #expect(connection.instructions == [Self.select, 0xCA])
        #expect(card.data.aid.serialString == "0BADCAFE")
    }

    @Test("a transaction after one that left nothing verified does not select again")
    func noResetNoSelect() throws {
        let connection = ResettingConnection(card: try SimulatedCard(stateFile: nil))
        let card = try OpenPGPCard.open(connection)
        let tries = try card.transaction { session throws(OpenPGPError) in try session.retriesLeft(.pw1) }
        #expect(tries == 3)
        #expect(connection.instructions.filter { $0 == Self.select }.count == 1)
    }

    @Test("after a transaction that verified a PIN (and so reset the card), the next one selects first")
    func resetMeansSelectAgain() throws {
        let connection = ResettingConnection(card: try SimulatedCard(stateFile: nil))
        let card = try OpenPGPCard.open(connection)
        try card.transaction { session throws(OpenPGPError) in try session.verify(.pw1, pin: secret("123456")) }
        #expect(connection.resets == 1)
        let before = connection.transmitted.count
        // Without the SELECT the reset card would refuse GET DATA: no application is selected after a reset.
        let status = try card.transaction { session throws(OpenPGPError) in try session.passwordStatus() }
        #expect(status.retriesPW1 == 3)
        #expect(Array(connection.instructions.dropFirst(before)) == [Self.select, 0xCA])
        // And only once: the selection holds until the next reset.
        _ = try card.transaction { session throws(OpenPGPError) in try session.passwordStatus() }
        #expect(connection.instructions.filter { $0 == Self.select }.count == 2)
    }

    @Test("close ends the session: no command goes out after it, and closing again does nothing")
    func closed() throws {
        let connection = ResettingConnection(card: try SimulatedCard(stateFile: nil))
        let card = try OpenPGPCard.open(connection)
        card.close()
        card.close()
        let sent = connection.instructions.count
        #expect(throws: OpenPGPError.transport(.sessionClosed("OpenPGP"))) {
            _ = try card.transaction { session throws(OpenPGPError) in try session.retriesLeft(.pw1) }
        }
        #expect(connection.instructions.count == sent)
        #expect(
            OpenPGPError.transport(.sessionClosed("OpenPGP")).description.hasSuffix("the OpenPGP session was closed"))
    }

    @Test("a card without the OpenPGP application is applicationNotFound; a transport failure is transport")
    func openErrors() throws {
        let missing = ScriptedConnection(["6A82"])
        #expect {
            _ = try OpenPGPCard.open(missing)
        } throws: {
            ($0 as? OpenPGPError) == .applicationNotFound
        }
        #expect {
            _ = try OpenPGPCard.open(PulledCardConnection())
        } throws: { error in
            guard case .transport(let inner) = error as? OpenPGPError else { return false }
            return inner == PulledCardConnection.pulled
        }
    }
}

/// A reader whose card is gone: every command fails in the transport.
final class PulledCardConnection: CardConnection {
    static let pulled = CardTransportError(.cardRemoved, "pulled")
    var atr: [UInt8] { [] }
    var lengthCapabilities = LengthCapabilities.shortOnly
    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] { throw Self.pulled }
}
