// Fuzz target for tokenpin's reading of its PKCS#11 helper's replies. The helper runs a module tokenpin does not
// trust, so what it sends is as hostile as the module (or a card behind it): the input is a byte stream as it
// arrives on the helper's socket, read frame by frame with HelperWire.receive and each frame decoded with
// HelperReply.decode (keys checked again: points on their curves, RSA sizes); the input is also decoded whole, as
// one frame's body. Nothing may trap, loop or take a field past the frame; a reply that decodes encodes to the same
// frame.
//
// With TOKENPIN_SEED_DIR set, the first run writes the seeds instead: one stream per reply kind, as the helper
// sends them (a listing with a P-256 and an RSA 2048 key, a key, a secret, a token, every kind of failure).
// Built by Tests/Fuzz/fuzz.sh against a TokenpinPKCS11 built with -enable-testing (the wire is internal).
import Foundation
import TokenpinCardCrypto
import TokenpinCore
import TokenpinSystem

@testable import TokenpinPKCS11

/// The frames `writer` sends, as bytes: what the other end of the socket reads.
func sent(_ writer: consuming WireWriter) -> [UInt8] {
    guard let pair = try? SocketPair.stream(), (try? writer.send(on: pair.first)) != nil else { return [] }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while (try? pair.second.waitForInput(timeoutMilliseconds: 0)) == true,
        let count = try? chunk.withUnsafeMutableBytes({ try pair.second.read(into: $0) }), count > 0
    {
        out += chunk.prefix(count)
    }
    return out
}

/// The frame `reply` encodes to.
func encoded(_ reply: consuming HelperReply) -> [UInt8] { sent(reply.encode()) }

func writeSeeds(to directory: String) {
    let token = PKCS11TokenInfo(
        module: "opensc-pkcs11", moduleIndex: 0, slot: 1, slotDescription: "Virtual PCD 00 00", isHardware: true,
        isRemovable: true, label: "PIV_II", manufacturer: "piv_II", model: "PKCS#15 emulated",
        serial: "00000000", flags: [.loginRequired, .userPINInitialized], pinLength: 4...8,
        uri: "pkcs11:model=PKCS%2315%20emulated;manufacturer=piv_II;serial=00000000;token=PIV_II")
    guard let pair = try? EllipticCurveDH.generateKeyPair(on: .nistP256),
        let rsa = try? RSAKeys.generate(bits: 2048)
    else { return }
    let ec = PKCS11Key(
        token: token, id: [0x03], label: "KEY MAN key", algorithm: .ecdh(.nistP256),
        publicKey: .ec(point: pair.publicPoint), privateKeySeen: false,
        uri: token.uri + ";id=%03;object=KEY%20MAN%20key;type=private")
    let rsaKey = PKCS11Key(
        token: token, id: [0x02], label: "SIGN key", algorithm: .rsa(bits: 2048, padding: .oaep),
        publicKey: .rsa(modulus: rsa.modulus, exponent: rsa.publicExponent), privateKeySeen: true,
        uri: token.uri + ";id=%02;object=SIGN%20key;type=private")
    var secretBytes = [UInt8](repeating: 0x5A, count: 32)
    let inventory = PKCS11Inventory(
        listings: [
            PKCS11TokenListing(
                token: token, keys: [ec, rsaKey], matches: [true, false], looseMatches: [true, true],
                unusable: ["EC key (id 01) on secp256k1"])
        ],
        problems: ["softhsm2: C_GetSlotList failed: CKR_GENERAL_ERROR"])
    let failures: [PKCS11TokenError] = [
        .wrongPIN(.finalTry), .pinLocked, .noToken("no token"), .ambiguous([ec.uri, rsaKey.uri]),
        .unusable("an RSA key of 1024 bits"), .module(.generalError, function: "C_Login", module: "opensc-pkcs11"),
        .malformed("a point off its curve"), .notAnswering("C_Login did not return"), .helperFailed("signal 11"),
        .tokenChanged("another serial"), .invalidRequest("no such key"),
    ]
    var seeds: [(String, [UInt8])] = [
        ("ready", encoded(.ready(modules: ["opensc-pkcs11", "softhsm2"], calls: 2))),
        ("inventory", encoded(.inventory(inventory, calls: 12))),
        ("key", encoded(.key(ec, calls: 4))),
        ("key-rsa", encoded(.key(rsaKey, calls: 4))),
        ("secret", encoded(.secret(SecretBytes(consuming: &secretBytes), calls: 6))),
        ("done", encoded(.done(calls: 3))),
        ("token", encoded(.token(token, calls: 2))),
    ]
    for (index, failure) in failures.enumerated() {
        seeds.append(("failure-\(index)", encoded(.failure(failure, calls: 1))))
    }
    // A session: the ready line, a listing, a secret.
    seeds.append(("session", seeds[0].1 + seeds[1].1 + seeds[4].1))
    for (name, bytes) in seeds {
        _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(bytes))
    }
}

/// Decodes `body` as one reply; a reply that decodes must encode to the same body.
func check(_ body: [UInt8]) {
    var copy = body
    let frame = SecretBytes(consuming: &copy)
    guard let reply = try? HelperReply.decode(frame) else { return }
    let again = encoded(reply)
    precondition(again.count >= 4 && Array(again.dropFirst(4)) == body, "a reply changed through decode and encode")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPKCS11Replies(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if let directory = ProcessInfo.processInfo.environment["TOKENPIN_SEED_DIR"] {
        writeSeeds(to: directory)
        return 0
    }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    if !input.isEmpty { check(input) }
    // The stream, as the helper's socket delivers it: the writer's end closed after the input, so reading ends.
    guard let pair = try? SocketPair.stream(), (try? pair.second.sendAll(input)) != nil else { return 0 }
    let socket = pair.keepingFirst()
    while let frame = try? HelperWire.receive(from: socket, deadline: MonotonicClock.milliseconds + 1000) {
        check(frame.withUnsafeBytes { Array($0) })
    }
    return 0
}
