import TokenpinAPDU
import TokenpinCore

extension OpenPGPApplication {
    // MARK: PINs

    /// The password a VERIFY or CHANGE REFERENCE DATA P2 names.
    enum Password {
        case pw1Signature, pw1Other, pw3

        init?(p2: UInt8) {
            switch p2 {
            case 0x81: self = .pw1Signature
            case 0x82: self = .pw1Other
            case 0x83: self = .pw3
            default: return nil
            }
        }
    }

    func isVerified(_ password: Password) -> Bool {
        switch password {
        case .pw1Signature: status.pw1Signature
        case .pw1Other: status.pw1Other
        case .pw3: status.pw3
        }
    }

    mutating func setVerified(_ password: Password, _ verified: Bool) {
        switch password {
        case .pw1Signature: status.pw1Signature = verified
        case .pw1Other: status.pw1Other = verified
        case .pw3: status.pw3 = verified
        }
    }

    func retries(_ password: Password) -> Int {
        password == .pw3 ? state.pw3Retries : state.pw1Retries
    }

    /// Decrements the counter of `password` (PW1 or PW3) and writes it; false when the write failed.
    mutating func spendTry(_ password: Password) -> Bool {
        var next = state
        if password == .pw3 { next.pw3Retries -= 1 } else { next.pw1Retries -= 1 }
        return commit(next)
    }

    /// Restores the counter of `password` to the maximum after a correct PIN.
    mutating func restoreTries(_ password: Password) -> Bool {
        var next = state
        if password == .pw3 {
            next.pw3Retries = CardProfile.maxRetries
        } else {
            next.pw1Retries = CardProfile.maxRetries
        }
        return next == state || commit(next)
    }

    /// Compares in constant time, through guarded memory; the copies are wiped on release.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: ArraySlice<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        let secret = guardedCopy(lhs)
        return Array(rhs).withUnsafeBytes { secret.isEqual(to: $0) }
    }

    /// VERIFY: P1 `00` checks a PIN (empty data queries the status), P1 `FF` clears the verified state.
    /// The counter is decremented and persisted before the comparison. OpenPGP card 3.4.1, §7.2.2.
    mutating func verify(_ command: CommandAPDU) -> Reply {
        guard let password = Password(p2: command.p2), command.p1 == 0x00 || command.p1 == 0xFF else {
            return Reply(.incorrectP1P2)
        }
        if command.p1 == 0xFF {
            guard command.data.isEmpty else { return Reply(.wrongLength) }
            setVerified(password, false)
            return .ok
        }
        if command.data.isEmpty {
            if isVerified(password) { return .ok }
            return retries(password) == 0
                ? Reply(.authenticationMethodBlocked)
                : Reply(.wrongPIN(retriesLeft: retries(password)))
        }
        guard retries(password) > 0 else { return Reply(.authenticationMethodBlocked) }
        guard spendTry(password) else { return Reply(.memoryFailure) }
        let reference = password == .pw3 ? state.pw3 : state.pw1
        guard Self.constantTimeEqual(reference, command.data[...]) else {
            setVerified(password, false)
            return wrongPIN(retriesLeft: retries(password))
        }
        guard restoreTries(password) else { return Reply(.memoryFailure) }
        setVerified(password, true)
        return .ok
    }

    /// The answer to a wrong PIN: `63 Cx` or, on devices that answer so, `69 82`.
    func wrongPIN(retriesLeft: Int) -> Reply {
        switch traits.wrongPINAnswer {
        case .triesLeft: Reply(.wrongPIN(retriesLeft: retriesLeft))
        case .securityStatusNotSatisfied: Reply(.securityStatusNotSatisfied)
        }
    }

    /// CHANGE REFERENCE DATA for PW1 (`81`) or PW3 (`83`): data is the old PIN followed by the new one.
    /// OpenPGP card 3.4.1, §7.2.3.
    mutating func changeReferenceData(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00, command.p2 == 0x81 || command.p2 == 0x83,
            let password = Password(p2: command.p2)
        else { return Reply(.incorrectP1P2) }
        guard retries(password) > 0 else { return Reply(.authenticationMethodBlocked) }
        guard !command.data.isEmpty else { return Reply(.wrongLength) }
        guard spendTry(password) else { return Reply(.memoryFailure) }
        let reference = password == .pw3 ? state.pw3 : state.pw1
        let oldMatches =
            command.data.count > reference.count
            && Self.constantTimeEqual(reference, command.data.prefix(reference.count))
        guard oldMatches else {
            if password == .pw3 {
                status.pw3 = false
            } else {
                status.pw1Signature = false
                status.pw1Other = false
            }
            return wrongPIN(retriesLeft: retries(password))
        }
        guard restoreTries(password) else { return Reply(.memoryFailure) }
        let newPIN = Array(command.data.dropFirst(reference.count))
        let lengths = password == .pw3 ? CardProfile.pw3Lengths : CardProfile.pw1Lengths
        guard lengths.contains(newPIN.count) else { return Reply(.incorrectData) }
        var next = state
        if password == .pw3 { next.pw3 = newPIN } else { next.pw1 = newPIN }
        return commit(next) ? .ok : Reply(.memoryFailure)
    }

    /// RESET RETRY COUNTER for PW1: P1 `00` with the Reset Code before the new PIN, P1 `02` after PW3.
    /// OpenPGP card 3.4.1, §7.2.4.
    mutating func resetRetryCounter(_ command: CommandAPDU) -> Reply {
        guard command.p2 == 0x81, command.p1 == 0x00 || command.p1 == 0x02 else { return Reply(.incorrectP1P2) }
        var newPIN: [UInt8]
        if command.p1 == 0x02 {
            guard status.pw3 else { return Reply(.securityStatusNotSatisfied) }
            newPIN = command.data
        } else {
            guard state.resetCodeRetries > 0, !state.resetCode.isEmpty else {
                return Reply(.authenticationMethodBlocked)
            }
            guard !command.data.isEmpty else { return Reply(.wrongLength) }
            var spent = state
            spent.resetCodeRetries -= 1
            guard commit(spent) else { return Reply(.memoryFailure) }
            let code = state.resetCode
            guard command.data.count > code.count, Self.constantTimeEqual(code, command.data.prefix(code.count)) else {
                return Reply(.wrongPIN(retriesLeft: state.resetCodeRetries))
            }
            var restored = state
            restored.resetCodeRetries = CardProfile.maxRetries
            guard commit(restored) else { return Reply(.memoryFailure) }
            newPIN = Array(command.data.dropFirst(code.count))
        }
        guard CardProfile.pw1Lengths.contains(newPIN.count) else { return Reply(.incorrectData) }
        var next = state
        next.pw1 = newPIN
        next.pw1Retries = CardProfile.maxRetries
        return commit(next) ? .ok : Reply(.memoryFailure)
    }
}
