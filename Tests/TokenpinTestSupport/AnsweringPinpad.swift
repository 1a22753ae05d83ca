package import TokenpinAPDU

/// A reader with a keypad that gives every PIN request one fixed answer, as the reader would give it (`64 00`
/// timeout, `64 01` cancel, or what the card answered the completed command), and keeps the structures it was sent:
/// for testing how a card application's session builds its part 10 structures and judges the answers, without a
/// card behind the keypad.
package final class AnsweringPinpad: PinpadReader {
    /// One structure as it reached the reader, and through which feature.
    package struct Request: Equatable, Sendable {
        /// `FEATURE_MODIFY_PIN_DIRECT` rather than `FEATURE_VERIFY_PIN_DIRECT`.
        package var modify: Bool
        /// The `PIN_VERIFY_STRUCTURE` or `PIN_MODIFY_STRUCTURE`.
        package var structure: [UInt8]

        /// A request as the reader gets it.
        package init(modify: Bool, structure: [UInt8]) {
            self.modify = modify
            self.structure = structure
        }
    }

    package let pinpad: Pinpad?
    package let readerName = "Answering Pinpad"
    /// The answer every request gets.
    package var answer: PinpadAnswer
    /// The requests so far, in order.
    package private(set) var requests: [Request] = []

    /// A keypad of `minDigits` to `maxDigits` with both features, answering `answer`.
    package init(_ answer: PinpadAnswer, minDigits: Int = 4, maxDigits: Int = 16) {
        self.answer = answer
        pinpad = Pinpad(
            reader: "Answering Pinpad", features: PinpadFeatures(verifyPINDirect: 1, modifyPINDirect: 2),
            properties: PinpadProperties(minPINSize: minDigits, maxPINSize: maxDigits))
    }

    /// The reader's answer when the card answers `statusWord` (and `data`) to the completed command.
    package convenience init(card statusWord: UInt16, data: [UInt8] = []) {
        self.init(.card(ResponseAPDU(data: data, statusWord: StatusWord(rawValue: statusWord))))
    }

    package func verifyPINDirect(_ structure: [UInt8]) throws(CardTransportError) -> PinpadAnswer {
        requests.append(Request(modify: false, structure: structure))
        return answer
    }

    package func modifyPINDirect(_ structure: [UInt8]) throws(CardTransportError) -> PinpadAnswer {
        requests.append(Request(modify: true, structure: structure))
        return answer
    }
}
