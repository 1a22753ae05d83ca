internal import TokenpinAPDU
package import TokenpinCardCrypto
package import TokenpinCore

extension PIVSession {
    /// The management key's algorithm and whether it is still the factory key, from YubiKey metadata
    /// (`00 F7 00 9B`). Throws `.unsupported` on cards without metadata (assume 3DES there).
    package func managementKeyMetadata() throws(PIVError) -> (algorithm: BlockCiphers.Algorithm, isDefault: Bool) {
        let response = try send(CommandAPDU(ins: PIVCommand.getMetadata, p1: 0x00, p2: 0x9B, le: 256))
        do throws(APDUError) {
            let objects = try TLV.parseAll(response.data)
            guard let algorithmByte = objects.first(where: { $0.tag == 0x01 })?.value.first,
                let algorithm = BlockCiphers.Algorithm(rawValue: algorithmByte)
            else { throw APDUError(.invalidStructure, "management key metadata without a known algorithm") }
            return (algorithm, objects.first { $0.tag == 0x05 }?.value == [0x01])
        } catch {
            throw .malformed(error)
        }
    }

    /// Mutual authentication with the management key (`9B`): the card's witness decrypted, then the card's
    /// answer to a random challenge checked, so a card that does not know the key is caught too.
    ///
    /// SP 800-73-4, part 2, §3.2.4 and appendix A.1: GENERAL AUTHENTICATE `00 87 alg 9B` with `7C{80 00}`,
    /// then `7C{80 D(witness), 81 challenge}`, answered `7C{82 E(challenge)}`.
    /// - Throws: `.invalidArgument` for a key of the wrong length, `.securityStatusNotSatisfied` for a key
    ///   the card refuses, `.incorrectData`/`.invalidSlot` for an algorithm it does not use, `.malformed`
    ///   when the card's own answer is wrong.
    package func authenticate(managementKey key: borrowing SecretBytes, algorithm: BlockCiphers.Algorithm)
        throws(PIVError)
    {
        guard key.count == algorithm.keyLength else {
            throw .invalidArgument(
                "\(algorithm.name) management keys have \(algorithm.keyLength) bytes, not \(key.count)")
        }
        let request = TLV(tag: 0x7C, children: [TLV(tag: 0x80, value: [])]).encoded
        let first = try send(
            CommandAPDU(
                ins: PIVCommand.generalAuthenticate, p1: algorithm.rawValue, p2: 0x9B,
                data: request, le: 256))
        let witness: [UInt8]
        do throws(APDUError) {
            let template = try TLV.parseOne(first.data)
            guard template.tag == 0x7C, let value = try template.children().first(where: { $0.tag == 0x80 })?.value,
                value.count == algorithm.blockLength
            else { throw APDUError(.invalidStructure, "no \(algorithm.blockLength)-byte witness in the card's answer") }
            witness = value
        } catch {
            throw .malformed(error)
        }
        let decrypted: [UInt8]
        let challenge = SecureRandom.bytes(algorithm.blockLength)
        let expected: [UInt8]
        do {
            decrypted = try BlockCiphers.decrypt(witness, key: key, algorithm: algorithm)
            expected = try BlockCiphers.encrypt(challenge, key: key, algorithm: algorithm)
        } catch {
            throw .invalidArgument("the management key cannot be used: \(error.detail)")
        }
        let answer = TLV(tag: 0x7C, children: [TLV(tag: 0x80, value: decrypted), TLV(tag: 0x81, value: challenge)])
            .encoded
        let second = try send(
            CommandAPDU(
                ins: PIVCommand.generalAuthenticate, p1: algorithm.rawValue, p2: 0x9B,
                data: answer, le: 256))
        let proof = (try? TLV.parseOne(second.data)).flatMap { try? $0.children() }?.first { $0.tag == 0x82 }?.value
        guard proof == expected else {
            throw .malformed(APDUError(.invalidStructure, "the card's answer to the management key challenge is wrong"))
        }
    }

    /// Generates a key pair in `slot` (management key authenticated first) and returns its public key.
    ///
    /// SP 800-73-4, part 2, §3.3.2: GENERATE ASYMMETRIC KEY PAIR `00 47 00 slot` with `AC{80 alg [AA policy]}`;
    /// the answer is `7F49{81 n, 82 e}` or `7F49{86 point}`. Any key already in the slot is replaced.
    package func generateKey(in slot: PIVSlot, algorithm: PIVAlgorithm, pinPolicy: UInt8? = nil) throws(PIVError)
        -> PIVPublicKey
    {
        var children = [TLV(tag: 0x80, value: [algorithm.rawValue])]
        if let pinPolicy { children.append(TLV(tag: 0xAA, value: [pinPolicy])) }
        let response = try send(
            CommandAPDU(
                ins: PIVCommand.generateKeyPair, p1: 0x00, p2: slot.rawValue,
                data: TLV(tag: 0xAC, children: children).encoded, le: 256))
        do throws(APDUError) {
            let template = try TLV.parseOne(response.data)
            guard template.tag == 0x7F49 else { throw APDUError(.invalidTag, "expected a public key template (7F49)") }
            return try PIVPublicKey(templateContent: template.value, algorithm: algorithm)
        } catch {
            throw .malformed(error)
        }
    }

    /// Writes a data object (an empty value deletes it): PUT DATA `00 DB 3F FF` with `5C id 53 value`, chained
    /// when long. Needs the management key authenticated.
    package func putObject(_ id: UInt32, value: [UInt8]) throws(PIVError) {
        let data = TLV(tag: 0x5C, value: Self.objectIDBytes(id)).encoded + TLV(tag: 0x53, value: value).encoded
        _ = try send(CommandAPDU(ins: PIVCommand.putData, p1: 0x3F, p2: 0xFF, data: data))
    }
}
