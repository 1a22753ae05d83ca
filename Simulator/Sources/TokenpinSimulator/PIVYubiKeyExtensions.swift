import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore

extension PIVApplication {
    // MARK: YubiKey extensions

    /// GET METADATA `00 F7 00 ref`: algorithm, policy, origin, public key, default, tries.
    func metadata(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00 else { return Reply(.incorrectP1P2) }
        let reference = command.p2
        var items: [TLV] = []
        switch reference {
        case PIVProfile.pinReference, PIVProfile.pukReference:
            let isPIN = reference == PIVProfile.pinReference
            let isDefault = isPIN ? state.pin == PIVProfile.defaultPIN : state.puk == PIVProfile.defaultPUK
            items = [
                TLV(tag: 0x01, value: [0xFF]), TLV(tag: 0x05, value: [isDefault ? 1 : 0]),
                TLV(
                    tag: 0x06,
                    value: [
                        UInt8(isPIN ? state.pinMaxRetries : state.pukMaxRetries),
                        UInt8(isPIN ? state.pinRetries : state.pukRetries),
                    ]),
            ]
        case PIVProfile.managementKeyReference:
            items = [
                TLV(tag: 0x01, value: [state.managementAlgorithm.rawValue]), TLV(tag: 0x02, value: [0x00, 0x01]),
                TLV(tag: 0x05, value: [state.managementKey == PIVProfile.defaultManagementKey ? 1 : 0]),
            ]
        default:
            guard PIVProfile.isKeySlot(reference) else { return Reply(.referencedDataNotFound) }
            guard let key = state.keys[reference],
                let template = try? key.algorithm.kind.publicKeyTemplate(secret: key.secret),
                let publicKey = try? TLV.parseOne(template)
            else { return Reply(.referencedDataNotFound) }
            items = [
                TLV(tag: 0x01, value: [key.algorithm.rawValue]),
                TLV(tag: 0x02, value: [key.pinPolicy, key.touchPolicy]),
                TLV(tag: 0x03, value: [key.origin]), TLV(tag: 0x04, value: publicKey.value),
            ]
        }
        return Reply(.success, data: items.flatMap(\.encoded))
    }

    /// SET MANAGEMENT KEY `00 FF FF FF|FE alg 9B len key`, management key required.
    mutating func setManagementKey(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0xFF, command.p2 == 0xFF || command.p2 == 0xFE else { return Reply(.incorrectP1P2) }
        guard status.managementKeyAuthenticated else { return Reply(.securityStatusNotSatisfied) }
        let data = command.data
        guard data.count >= 3, let algorithm = BlockCiphers.Algorithm(rawValue: data[0]),
            data[1] == PIVProfile.managementKeyReference, Int(data[2]) == algorithm.keyLength,
            data.count == 3 + algorithm.keyLength
        else { return Reply(.incorrectData) }
        var next = state
        next.managementAlgorithm = algorithm
        next.managementKey = Array(data[3...])
        return commit(next) ? .ok : Reply(.memoryFailure)
    }

    /// SET PIN RETRIES `00 FA pin puk`: management key and PIN required; PIN and PUK return to the defaults.
    mutating func setPINRetries(_ command: CommandAPDU) -> Reply {
        guard status.managementKeyAuthenticated, status.pinVerified else { return Reply(.securityStatusNotSatisfied) }
        guard command.p1 > 0, command.p2 > 0 else { return Reply(.incorrectP1P2) }
        var next = state
        next.pin = PIVProfile.defaultPIN
        next.puk = PIVProfile.defaultPUK
        next.pinMaxRetries = Int(command.p1)
        next.pukMaxRetries = Int(command.p2)
        next.pinRetries = next.pinMaxRetries
        next.pukRetries = next.pukMaxRetries
        guard commit(next) else { return Reply(.memoryFailure) }
        status.pinVerified = false
        return .ok
    }

    /// RESET `00 FB 00 00`: the application factory-new, allowed only once PIN and PUK are both blocked.
    mutating func resetApplication(_ command: CommandAPDU) -> Reply {
        guard state.pinRetries == 0, state.pukRetries == 0 else { return Reply(.conditionsOfUseNotSatisfied) }
        guard commit(.factoryNew()) else { return Reply(.memoryFailure) }
        status = PIVSecurityStatus(selected: true)
        return .ok
    }
}
