import FoundationEssentials
import TokenpinArguments
internal import TokenpinCore
import TokenpinProtocol
import TokenpinReaders
internal import TokenpinService

/// The polkit rule and the udev rules the package installs.
extension Doctor {
    // MARK: polkit and udev

    func polkit() -> Finding {
        let policy = setup.path("/usr/share/polkit-1/actions/org.debian.pcsc-lite.policy")
        guard let data = FileManager.default.contents(atPath: policy) else {
            return Finding(
                "polkit", .ok, "pcscd here has no polkit policy: every local user may reach the readers")
        }
        let text = String(decoding: data, as: UTF8.self)
        let inactive = text.split(separator: "<allow_inactive>").dropFirst().map { String($0.prefix { $0 != "<" }) }
        var rules: [String] = []
        for directory in ["/etc/polkit-1/rules.d", "/usr/share/polkit-1/rules.d"] {
            let path = setup.path(directory)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            where name.hasSuffix(".rules") {
                if let rule = FileManager.default.contents(atPath: path + "/" + name),
                    String(decoding: rule, as: UTF8.self).contains("org.debian.pcsc-lite")
                {
                    rules.append(path + "/" + name)
                }
            }
        }
        if inactive.allSatisfy({ $0 == "yes" }) || !rules.isEmpty {
            return Finding(
                "polkit", .ok,
                "pcsc-lite's polkit policy lets inactive sessions reach the cards"
                    + (rules.isEmpty ? "" : " (rules: \(rules.joined(separator: ", ")))"))
        }
        return Finding(
            "polkit", setup.throughDaemon ? .info : .warning,
            "pcsc-lite's polkit policy keeps inactive sessions (ssh, su, a locked screen) from the cards "
                + "(allow_inactive: \(inactive.joined(separator: ", ")))"
                + (setup.throughDaemon ? "; tokenpind runs as root and is not affected" : ""),
            fix: "through tokenpind this does not matter; for local mode add a rule in /etc/polkit-1/rules.d allowing "
                + "org.debian.pcsc-lite.access_pcsc and access_card (pcscd's README.polkit)",
            exitCode: .permissionDenied)
    }

    func udev() -> [Finding] {
        let names = [
            "/etc/udev/rules.d", "/run/udev/rules.d", "/usr/local/lib/udev/rules.d", "/usr/lib/udev/rules.d",
            "/lib/udev/rules.d",
        ].map { setup.path($0) + "/70-tokenpin.rules" }
        let rulesFile = names.first { FileManager.default.fileExists(atPath: $0) }
        let rules =
            rulesFile.flatMap { FileManager.default.contents(atPath: $0) }.map { String(decoding: $0, as: UTF8.self) }
            ?? ""
        var findings: [Finding] = []
        let devices = setup.path("/sys/bus/usb/devices")
        for device in ((try? FileManager.default.contentsOfDirectory(atPath: devices)) ?? []).sorted()
        where !device.contains(":") {
            let base = devices + "/" + device
            func attribute(_ name: String) -> String? {
                FileManager.default.contents(atPath: base + "/" + name).map {
                    String(decoding: $0, as: UTF8.self).trimmingBlanks().split(separator: "\n").first.map(String.init)
                        ?? ""
                }
            }
            guard let vendor = attribute("idVendor"), let product = attribute("idProduct") else { continue }
            let interfaces = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).filter {
                $0.hasPrefix(device + ":")
            }
            let ccid = interfaces.contains { interface in
                FileManager.default.contents(atPath: base + "/" + interface + "/bInterfaceClass").map {
                    String(decoding: $0, as: UTF8.self).hasPrefix("0b")
                } ?? false
            }
            let listed = rules.contains("ATTRS{idVendor}==\"\(vendor)\"") && rules.contains(product)
            guard ccid || listed else { continue }
            let name = (attribute("product") ?? "USB device") + " (\(vendor):\(product))"
            if rulesFile == nil {
                findings.append(
                    Finding(
                        "udev", .warning,
                        "\(name) is a smart-card reader and no 70-tokenpin.rules is installed: "
                            + "tokenpind is not started when it is plugged in, and the user at the seat gets no access to it",
                        fix: "install udev/70-tokenpin.rules (the package does), then `udevadm control --reload`",
                        exitCode: .tokenUnavailable))
            } else if ccid && rules.contains("*:0b0000:*") || listed {
                findings.append(Finding("udev", .ok, "\(name) is matched by \(rulesFile ?? "")"))
            } else {
                findings.append(
                    Finding(
                        "udev", .warning, "\(name) is not matched by \(rulesFile ?? "")", exitCode: .tokenUnavailable))
            }
        }
        if findings.isEmpty {
            findings.append(
                Finding(
                    "udev", rulesFile == nil ? .info : .ok,
                    rulesFile.map { "the udev rule is installed (\($0)); no reader is plugged in" }
                        ?? "no udev rule for readers (70-tokenpin.rules) and no reader plugged in"))
        }
        return findings
    }
}
