import PackagePlugin

/// Writes the lists no Swift declaration can make of itself: every operation a client may ask for
/// (TokenpinProtocol's `Operation`, one case per file in Sources/Protocol/Operations) and every command of the CLI
/// (TokenpinCLI's `Commands.all`, one per file in Sources/CLI/Commands). Each file is named after what it declares,
/// so adding an operation or a command is adding its file: no list to keep beside it.
@main
struct Registries: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        guard let module = target as? SourceModuleTarget else { return [] }
        let (kind, folder): (String, String)
        switch target.name {
        case "TokenpinProtocol": (kind, folder) = ("operations", "Operations")
        case "TokenpinCLI": (kind, folder) = ("commands", "Commands")
        default: return []
        }
        let declarations = module.sourceFiles(withSuffix: "swift").map(\.url)
            .filter { $0.deletingLastPathComponent().lastPathComponent == folder }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "Registry+\(folder).swift")
        return [
            .buildCommand(
                displayName: "Listing \(target.name)'s \(kind)",
                executable: try context.tool(named: "tokenpin-registries").url,
                arguments: [kind, output.path(percentEncoded: false)]
                    + declarations.map { $0.path(percentEncoded: false) },
                inputFiles: declarations, outputFiles: [output])
        ]
    }
}
