import Foundation
import Testing

/// The CLI starts without loading full Foundation and ICU: every module it links imports FoundationEssentials only.
/// (An `import Foundation` anywhere under the CLI brings back libFoundation and libicu, a third of a short run.)
@Suite struct StartupTests {
    @Test func theCLILinksNoFullFoundation() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/readelf")
        process.arguments = ["-d", CLI.binary]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "readelf -d \(CLI.binary)")
        let needed = output.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(!needed.isEmpty, "a dynamically linked debug build lists what it needs")
        #expect(!needed.contains { $0.contains("[libFoundation.so]") }, "\(needed)")
        #expect(!needed.contains { $0.contains("ICU") }, "\(needed)")
    }
}
