internal import CPCSCLite

/// `SCardControl` and the part 10 feature requests, wrapped once like the rest of pcsc-lite (PCSCLibrary.swift).
extension PCSCLibrary {
    /// `SCARD_CTL_CODE(3400)`: `CM_IOCTL_GET_FEATURE_REQUEST` (the macro does not import).
    static let getFeatureRequest: UInt32 = 0x4200_0000 + 3400
    /// `SCARD_SHARE_DIRECT`: a connection to the reader itself, with or without a card.
    static let shareDirect: UInt32 = 0x0003
    /// The largest answer a feature request or a TLV property request may bring (part 10 answers are small).
    static let maxControlAnswer = 2048

    /// Sends `input` to the reader driver with control code `code`; returns what it answered, at most
    /// `capacity` bytes (a driver claiming more is cut to the buffer).
    ///
    /// The corresponding C function is `SCardControl`.
    static func control(_ card: Card, code: UInt32, input: [UInt8], capacity: Int) throws(PCSCError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: capacity)
        var returned: DWORD = 0
        let result: LONG = output.withUnsafeMutableBytes { out in
            input.withUnsafeBytes { send in
                SCardControl(
                    SCARDHANDLE(card), DWORD(code), send.baseAddress, DWORD(send.count), out.baseAddress,
                    DWORD(out.count), &returned)
            }
        }
        try check(result)
        return Array(output.prefix(Int(min(returned, DWORD(capacity)))))
    }
}
