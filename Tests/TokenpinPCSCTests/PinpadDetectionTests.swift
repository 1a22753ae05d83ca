import Foundation
import Testing
import TokenpinAPDU
import TokenpinPCSC
import TokenpinTestSupport

/// Detection of the virtual pinpad reader (Simulator/pinpad) through the real pcscd: run inside
/// `Simulator/pcscd-sandbox --pinpad` (which sets TOKENPIN_PINPAD_READER); skipped elsewhere.
///
/// With TOKENPIN_PINPAD_BENCH_ITERATIONS=N it prints the cost of detection per connection:
/// `Simulator/pcscd-sandbox --pinpad -- env TOKENPIN_PINPAD_BENCH_ITERATIONS=200 swift test --skip-build --filter
/// PinpadDetectionTests`.
@Suite(
    "Pinpad detection through pcscd",
    .enabled(if: PCSCSandbox.isActive && PCSCSandbox.environment["TOKENPIN_PINPAD_READER"] != nil))
struct PinpadDetectionTests {
    let reader = PCSCSandbox.environment["TOKENPIN_PINPAD_READER"] ?? ""

    @Test("the pinpad reader announces verify, modify and its TLV properties; a vpcd reader announces nothing")
    func directDetection() throws {
        let pinpad = try #require(try PCSCReaderPinpad.detect(reader: reader, within: .seconds(10)))
        #expect(pinpad.canVerify && pinpad.canModify && pinpad.ignoredBecause == nil)
        #expect(pinpad.properties?.minPINSize == 4)
        #expect(pinpad.properties?.maxPINSize == 16)
        #expect(pinpad.properties?.vendorID == 0x1209)
        #expect(try PCSCReaderPinpad.detect(reader: PCSCSandbox.reader(forPortIndex: 0), within: .seconds(10)) == nil)
    }

    @Test("a card connection behind the pinpad detects it once; detection costs a feature and a property request")
    func connectionDetection() throws {
        let card = try pinpadCard()
        defer { card.terminate() }
        let connection = try connect()
        #expect(connection.pinpad?.canVerify == true)
        let vpcd = try SimulatorProcess(portIndex: 0, state: temporaryDirectory("pinpad") + "/vpcd.json")
        defer { vpcd.kill() }
        let plainReader = try connect(PCSCSandbox.reader(forPortIndex: 0))
        #expect(try plainReader.detectPinpad() == nil, "vpcd answers the feature request SCARD_E_UNSUPPORTED_FEATURE")
        #expect(plainReader.pinpad == nil)
        #expect(connection.pinpad?.features.verifyPINDirect != nil)

        guard let iterations = PCSCSandbox.environment["TOKENPIN_PINPAD_BENCH_ITERATIONS"].flatMap(Int.init) else {
            return
        }
        // Interleaved, after a warm-up, so that the machine's load falls on both alike.
        let clock = ContinuousClock()
        for _ in 0..<20 { _ = try? connect().detectPinpad() }
        var plain = Duration.zero
        var detecting = Duration.zero
        var detection = Duration.zero
        for _ in 0..<iterations {
            plain += clock.measure { _ = try? connect() }
            detecting += clock.measure {
                guard let connection = try? connect() else { return }
                detection += clock.measure { _ = try? connection.detectPinpad() }
            }
        }
        func microseconds(_ duration: Duration) -> Int {
            Int(duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000)
                / iterations
        }
        print(
            "figure: pinpad detection: connect \(microseconds(plain)) us, connect + detection "
                + "\(microseconds(detecting)) us, the detection alone (2 SCardControl) \(microseconds(detection)) us, "
                + "mean of \(iterations)")
    }

    private func connect(_ name: String? = nil) throws -> PCSCCardConnection {
        var last: (any Error)?
        for _ in 0..<100 {
            do { return try PCSCCardConnection(reader: name ?? reader) } catch {
                last = error
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        throw last ?? TestSupportError("no card behind the pinpad")
    }

    /// tokenpin-sim behind the pinpad (its port is TOKENPIN_PINPAD_PORT).
    private func pinpadCard() throws -> Process {
        let directory = temporaryDirectory("pinpad")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(PCSCSandbox.simulatorBinary))
        process.arguments = [
            "--state", directory + "/card.json", "--port",
            try #require(PCSCSandbox.environment["TOKENPIN_PINPAD_PORT"]), "--reinsert-after", "600000",
        ]
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }
}
