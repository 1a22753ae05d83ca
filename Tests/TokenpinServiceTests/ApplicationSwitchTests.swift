import FoundationEssentials
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinOpenPGP
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// Another program selects the other application of a YubiKey between tokenpin's two transactions (after the
/// open, while the card PIN is typed): the VERIFY then reaches the wrong application. It must be refused as a
/// wrong parameter, count no try in either application, and surface as a card failure rather than a wrong PIN.
@Suite("a YubiKey whose other application was selected between tokenpin's transactions")
struct ApplicationSwitchTests {
    let card: SimulatedCard
    let connection: SimulatedCardConnection

    init() throws {
        card = try SimulatedCard(stateFile: nil, serial: 0x00C0_FFEE, profile: .yubikey)
        connection = SimulatedCardConnection(card: card, sleep: { _ in })
    }

    /// The tries left of the OpenPGP PW1 and of the PIV PIN, read afresh (each application selected in turn).
    func tries() throws -> (openpgp: Int, piv: Int) {
        let openpgp = OpenPGPSession(connection: connection)
        try openpgp.select()
        let pw1 = try openpgp.passwordStatus().retriesPW1
        let piv = PIVSession(connection: connection)
        _ = try piv.select()
        guard case .retriesLeft(let pin) = try piv.pinStatus() else { return (pw1, -1) }
        return (pw1, pin)
    }

    @Test("an OpenPGP VERIFY that reaches PIV is refused without counting")
    func openPGPVerifyReachingPIV() throws {
        let token = try OpenPGPToken.open(connection: connection, reader: "sim")
        _ = try PIVSession(connection: connection).select()  // another program, between the transactions
        let binding = TokenBinding(
            serial: token.identity, cardPublicKey: Data(repeating: 9, count: 32),
            ephemeralPublicKey: Data(repeating: 9, count: 32))
        let error = caughtError { () throws(TokenCardError) in
            _ = try token.answer(pin: secret("123456"), binding: binding, algorithm: .cv25519)
        }
        if case .wrongPIN = error { Issue.record("a wrong-application VERIFY was taken for a wrong PIN") }
        #expect(error != nil)
        #expect(try tries() == (3, 3))
    }

    @Test("a PIV VERIFY that reaches OpenPGP is refused without counting")
    func pivVerifyReachingOpenPGP() throws {
        let token = try PIVToken.open(connection: connection, reader: "sim")
        try OpenPGPSession(connection: connection).select()  // another program, between the transactions
        let binding = TokenBinding(
            serial: token.identity, cardPublicKey: Data(repeating: 4, count: 65),
            ephemeralPublicKey: Data(repeating: 4, count: 65))
        let error = caughtError { () throws(TokenCardError) in
            _ = try token.answer(pin: secret("123456"), binding: binding, algorithm: .ecdh(.nistP256))
        }
        if case .wrongPIN = error { Issue.record("a wrong-application VERIFY was taken for a wrong PIN") }
        #expect(error != nil)
        #expect(try tries() == (3, 3))
    }
}

private func caughtError(_ body: () throws(TokenCardError) -> Void) -> TokenCardError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}
