// swift-tools-version:6.1
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "tokenpin",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tokenpin", targets: ["tokenpin"]),
        .executable(name: "tokenpin-bench", targets: ["tokenpin-bench"]),
        .executable(name: "tokenpind", targets: ["tokenpind"]),
        .executable(name: "tokenpin-pkcs11", targets: ["tokenpin-pkcs11"]),
        .executable(name: "tokenpin-askpass", targets: ["tokenpin-askpass"]),
        .executable(name: "age-plugin-tokenpin", targets: ["age-plugin-tokenpin"]),
        .library(name: "TokenpinCore", targets: ["TokenpinCore"]),
        .library(name: "TokenpinAPDU", targets: ["TokenpinAPDU"]),
    ],
    targets: [
        // C libraries, one system library target each.
        .systemLibrary(
            name: "CSodium",
            path: "Sources/C/CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // pcsc-lite without pkg-config: its flags carry -pthread, which SwiftPM warns about. Its headers include
        // each other with angled brackets, so TokenpinPCSC (the only importer) adds /usr/include/PCSC.
        .systemLibrary(
            name: "CPCSCLite",
            path: "Sources/C/CPCSCLite",
            providers: [.apt(["libpcsclite-dev"])]
        ),
        // OpenSSL 3 libcrypto (EVP) for the card algorithms libsodium lacks; TokenpinCardCrypto is its only importer.
        // Not linked: libcrypto.c loads libcrypto.so.3 the first time one of its functions is called, so processes
        // that use no card algorithm do not pay its relocation at start (headers from libssl-dev).
        .target(name: "COpenSSL", path: "Sources/C/COpenSSL"),
        // sd-login's header (libsystemd-dev) for tokenpind's "who owns the active session" check; no link: the
        // daemon loads libsystemd with dlopen, so it runs where there is no systemd.
        .systemLibrary(
            name: "CSystemd",
            path: "Sources/C/CSystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // p11-kit: PKCS#11's header (pkcs11.h), module loading and RFC 7512 URIs; TokenpinPKCS11 is its only importer.
        // Not linked: libp11kit.c loads libp11-kit.so.0 the first time one of its functions is called, so processes
        // that touch no PKCS#11 token do not pay its relocation at start. Its headers (libp11-kit-dev) are under
        // /usr/include/p11-kit-1 (pkg-config p11-kit-1's --cflags), which the importer adds too.
        .target(
            name: "CP11Kit",
            path: "Sources/C/CP11Kit",
            cSettings: [.unsafeFlags(["-I/usr/include/p11-kit-1"])]
        ),
        .target(name: "CTokenpinShims", path: "Sources/C/CTokenpinShims"),
        // libpam for tokenpind's login-password check before enrolment (the PAM module itself is pam/, plain C).
        .target(name: "CTokenpinPAM", path: "Sources/C/CTokenpinPAM", linkerSettings: [.linkedLibrary("pam")]),

        // Glibc wrapped once, swift-system style: Errno, an owning FileDescriptor, Unix sockets, AtomicFile.
        .target(
            name: "TokenpinSystem",
            dependencies: ["CTokenpinShims"],
            path: "Sources/System",
            swiftSettings: strictSettings
        ),

        // One small argv parser: commands, flags and value options declared once; help, usage and shell
        // completions generated from the declarations. Depends on nothing.
        .target(name: "TokenpinArguments", path: "Sources/Arguments", swiftSettings: strictSettings),

        // The domain: secrets, PIN policy, key slots, record, store, counter, events.
        .target(
            name: "TokenpinCore",
            dependencies: ["CSodium", "CTokenpinShims", "TokenpinSystem"],
            path: "Sources/Core",
            swiftSettings: strictSettings
        ),
        // RSA and NIST/brainpool ECDH as OpenPGP cards use them, wrapping libcrypto's EVP API.
        .target(
            name: "TokenpinCardCrypto",
            dependencies: ["COpenSSL", "TokenpinCore"],
            path: "Sources/Cards/Crypto",
            swiftSettings: strictSettings
        ),
        // APDUs, status words, BER-TLV and the CardConnection protocol.
        .target(
            name: "TokenpinAPDU", dependencies: ["TokenpinCore"], path: "Sources/Cards/APDU",
            swiftSettings: strictSettings),
        // PC/SC over libpcsclite: readers, connections, transactions, status monitoring.
        .target(
            name: "TokenpinPCSC",
            dependencies: ["CPCSCLite", "TokenpinAPDU"],
            path: "Sources/Cards/PCSC",
            swiftSettings: strictSettings + [.unsafeFlags(["-Xcc", "-I/usr/include/PCSC"])]
        ),
        // The OpenPGP card application session over any CardConnection.
        .target(
            name: "TokenpinOpenPGP",
            dependencies: ["TokenpinAPDU", "TokenpinCore", "TokenpinCardCrypto"],
            path: "Sources/Cards/OpenPGP",
            swiftSettings: strictSettings
        ),
        // The PIV card application session (SP 800-73-4, YubiKey extensions) over any CardConnection.
        .target(
            name: "TokenpinPIV",
            dependencies: ["TokenpinAPDU", "TokenpinCore", "TokenpinCardCrypto"],
            path: "Sources/Cards/PIV",
            swiftSettings: strictSettings
        ),
        // PKCS#11 tokens through p11-kit: the calls tokenpin makes, URIs, key discovery, and the isolation helper's
        // protocol and client. Modules are loaded only by tokenpin-pkcs11, never by the daemon or the CLI.
        .target(
            name: "TokenpinPKCS11",
            dependencies: ["CP11Kit", "TokenpinCore", "TokenpinCardCrypto", "TokenpinSystem"],
            path: "Sources/Cards/PKCS11",
            swiftSettings: strictSettings + [.unsafeFlags(["-Xcc", "-I/usr/include/p11-kit-1"])]
        ),
        // The helper process PKCS#11 modules run in: a socket on standard input, nothing else inherited.
        .executableTarget(
            name: "tokenpin-pkcs11",
            dependencies: ["TokenpinPKCS11", "TokenpinCore", "TokenpinSystem"],
            path: "Sources/Executables/tokenpin-pkcs11",
            swiftSettings: strictSettings
        ),
        // The virtual OpenPGP card (a deliverable of its own, under Simulator/).
        .target(
            name: "TokenpinSimulator",
            dependencies: ["TokenpinAPDU", "TokenpinCore", "TokenpinSystem", "TokenpinCardCrypto"],
            path: "Simulator/Sources/TokenpinSimulator",
            swiftSettings: strictSettings
        ),
        // (simulator executables go here)
        .executableTarget(
            name: "tokenpin-sim",
            dependencies: ["TokenpinSimulator", "TokenpinAPDU", "TokenpinSystem", "TokenpinArguments"],
            path: "Simulator/Sources/tokenpin-sim",
            swiftSettings: strictSettings
        ),

        // The card sources the executables plug into the service: PC/SC readers, and apart the simulated card
        // (`--reader sim` and the demo), so that only tokenpin-bench and tokenpind link the simulator.
        .target(
            name: "TokenpinReaders",
            dependencies: ["TokenpinService", "TokenpinAPDU", "TokenpinPCSC", "TokenpinSystem"],
            path: "Sources/Readers",
            swiftSettings: strictSettings
        ),
        .target(
            name: "TokenpinSimulatedReaders",
            dependencies: [
                "TokenpinReaders", "TokenpinService", "TokenpinSimulator", "TokenpinCore", "TokenpinSystem",
            ],
            path: "Sources/SimulatedReaders",
            swiftSettings: strictSettings
        ),

        // The operations joining core and token.
        .target(
            name: "TokenpinService",
            dependencies: [
                "TokenpinCore", "TokenpinAPDU", "TokenpinOpenPGP", "TokenpinCardCrypto", "TokenpinPIV",
                "TokenpinPKCS11", "TokenpinSystem",
            ],
            path: "Sources/Service",
            swiftSettings: strictSettings
        ),
        // The CLI both tokenpin and tokenpin-bench run: declarations, parsing, context, output, every command but
        // bench and demo. `package` marks what the two executables use of it.
        .target(
            name: "TokenpinCLI",
            dependencies: [
                "TokenpinService", "TokenpinCore", "TokenpinAPDU", "TokenpinReaders", "TokenpinProtocol",
                "TokenpinArguments", "TokenpinSystem", "TokenpinOpenPGP", "TokenpinDoctor", "TokenpinPKCS11",
                "TokenpinAge",
            ],
            path: "Sources/CLI",
            swiftSettings: strictSettings,
            plugins: ["Registries"]
        ),
        // The production CLI: TokenpinCLI, handing bench, demo and the simulated card to tokenpin-bench beside it.
        .executableTarget(
            name: "tokenpin",
            dependencies: ["TokenpinCLI"],
            path: "Sources/Executables/tokenpin",
            swiftSettings: strictSettings
        ),
        // `tokenpin bench`, `tokenpin demo` and `tokenpin --reader sim` (which run it in their place): TokenpinCLI
        // with the benchmarks and the simulated card.
        .executableTarget(
            name: "tokenpin-bench",
            dependencies: [
                "TokenpinCLI", "TokenpinSimulatedReaders", "TokenpinSimulator", "TokenpinService", "TokenpinCore",
                "TokenpinAPDU", "TokenpinReaders", "TokenpinProtocol", "TokenpinArguments", "TokenpinSystem",
                "TokenpinOpenPGP", "TokenpinPKCS11",
            ],
            path: "Sources/Executables/tokenpin-bench",
            swiftSettings: strictSettings
        ),
        // SSH_ASKPASS for ssh keys whose passphrase is an application key: it runs `tokenpin derive` in its place.
        .executableTarget(
            name: "tokenpin-askpass",
            dependencies: ["TokenpinCore", "TokenpinSystem"],
            path: "Sources/Executables/tokenpin-askpass",
            swiftSettings: strictSettings
        ),
        // The age plugin protocol (identity-v1), age's X25519 recipients and Bech32: what `tokenpin age` and the
        // plugin share.
        .target(
            name: "TokenpinAge",
            dependencies: ["TokenpinCore", "TokenpinCardCrypto", "CSodium"],
            path: "Sources/Age",
            swiftSettings: strictSettings
        ),
        // age's plugin for tokenpin identities: it runs `tokenpin age plugin` in its place.
        .executableTarget(
            name: "age-plugin-tokenpin",
            dependencies: ["TokenpinCore", "TokenpinSystem"],
            path: "Sources/Executables/age-plugin-tokenpin",
            swiftSettings: strictSettings
        ),
        // `tokenpin doctor`'s checks: pcscd and who holds each card, tokenpind, the PAM stacks that load the module
        // (read and run as libpam would), the configuration files, the record, polkit and udev.
        .target(
            name: "TokenpinDoctor",
            dependencies: [
                "TokenpinReaders", "TokenpinProtocol", "TokenpinService", "TokenpinCore", "TokenpinArguments",
                "TokenpinSystem",
            ],
            path: "Sources/Doctor",
            swiftSettings: strictSettings
        ),

        // The daemon protocol: messages, framing, and the client the CLI uses. Its list of operations is written at
        // build time from the files in Operations/ (Registries).
        .target(
            name: "TokenpinProtocol",
            dependencies: ["TokenpinService", "TokenpinCore", "TokenpinSystem"],
            path: "Sources/Protocol",
            swiftSettings: strictSettings,
            plugins: ["Registries"]
        ),
        // The lists of operations and of CLI commands, written at build time from their folders' file names.
        .plugin(
            name: "Registries",
            capability: .buildTool(),
            dependencies: ["tokenpin-registries"],
            path: "Plugins/Registries"
        ),
        .executableTarget(name: "tokenpin-registries", path: "Sources/BuildTools/tokenpin-registries"),
        // The daemon: server, peer authorization, relayed prompts, memory budget, limits.
        .target(
            name: "TokenpinDaemon",
            dependencies: [
                "TokenpinProtocol", "TokenpinService", "TokenpinCore", "TokenpinSystem", "TokenpinAPDU",
                "CTokenpinShims",
                "CTokenpinPAM", "CSystemd",
            ],
            path: "Sources/Daemon",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "tokenpind",
            dependencies: [
                "TokenpinDaemon", "TokenpinCore", "TokenpinReaders", "TokenpinSimulatedReaders", "TokenpinArguments",
                "TokenpinSystem",
            ],
            path: "Sources/Executables/tokenpind",
            swiftSettings: strictSettings
        ),
        // What the test targets share: a hand-moved clock, temporary directories, secrets from text, a scripted
        // card transport, and the private pcscd sandbox with its simulated cards. Only test targets use it.
        .target(
            name: "TokenpinTestSupport",
            dependencies: ["TokenpinCore", "TokenpinAPDU"],
            path: "Tests/TokenpinTestSupport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinDaemonTests",
            dependencies: [
                "TokenpinDaemon", "TokenpinProtocol", "TokenpinService", "TokenpinCore", "TokenpinSystem",
                "TokenpinTestSupport",
            ],
            swiftSettings: strictSettings
        ),

        .testTarget(
            name: "TokenpinArgumentsTests",
            dependencies: ["TokenpinArguments"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinDoctorTests",
            dependencies: ["TokenpinDoctor", "TokenpinCore", "TokenpinService", "TokenpinTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinSystemTests",
            dependencies: ["TokenpinSystem", "TokenpinTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinCoreTests",
            dependencies: ["TokenpinCore", "TokenpinTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinAPDUTests",
            dependencies: ["TokenpinAPDU", "TokenpinCore", "TokenpinTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinCardCryptoTests",
            dependencies: ["TokenpinCardCrypto", "TokenpinCore", "TokenpinAPDU"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinPCSCTests",
            dependencies: ["TokenpinPCSC", "TokenpinAPDU", "TokenpinTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinOpenPGPTests",
            dependencies: [
                "TokenpinOpenPGP", "TokenpinSimulator", "TokenpinAPDU", "TokenpinCore", "TokenpinCardCrypto",
                "TokenpinTestSupport",
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinPIVTests",
            dependencies: [
                "TokenpinPIV", "TokenpinSimulator", "TokenpinAPDU", "TokenpinCore", "TokenpinCardCrypto",
                "TokenpinPCSC",
                "TokenpinTestSupport",
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinSimulatorTests",
            dependencies: [
                "TokenpinSimulator", "TokenpinAPDU", "TokenpinCore", "TokenpinCardCrypto", "TokenpinTestSupport",
            ],
            path: "Simulator/Tests/TokenpinSimulatorTests",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinServiceTests",
            dependencies: [
                "TokenpinService", "TokenpinCore", "TokenpinAPDU", "TokenpinSimulator", "TokenpinOpenPGP",
                "TokenpinCardCrypto", "TokenpinPIV", "TokenpinTestSupport",
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinPKCS11Tests",
            // tokenpin-pkcs11 is built first: the tests start it (and tokenpin, whose bench one runs, in
            // tokenpin-bench). The C files are a test-only PKCS#11 module that the tests compile; the PIV session and
            // PC/SC put a key on the simulated card OpenSC's module reads.
            dependencies: [
                "TokenpinPKCS11", "tokenpin-pkcs11", "tokenpin", "tokenpin-bench", "TokenpinCore",
                "TokenpinCardCrypto", "TokenpinSystem", "TokenpinTestSupport", "TokenpinPIV", "TokenpinPCSC",
                "TokenpinAPDU", "TokenpinService",
            ],
            exclude: ["Support/hostile-module.c", "Support/wrapper-module.c"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinAgeTests",
            dependencies: ["TokenpinAge", "TokenpinCore", "TokenpinCardCrypto", "CSodium"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinAskpassTests",
            dependencies: ["tokenpin-askpass", "TokenpinCore"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenpinCLITests",
            // The simulator and the OpenPGP session put a key on a simulated card as gpg would, between CLI runs.
            // tokenpin-bench runs `tokenpin bench` and `tokenpin demo`. TokenpinCLI for its list of declared commands.
            dependencies: [
                "tokenpin", "tokenpin-bench", "TokenpinTestSupport", "TokenpinSimulator", "TokenpinOpenPGP",
                "TokenpinCore", "TokenpinAge", "TokenpinCLI", "TokenpinArguments",
            ],
            exclude: ["Support/keyboard.py"],
            swiftSettings: strictSettings
        ),
    ]
)
