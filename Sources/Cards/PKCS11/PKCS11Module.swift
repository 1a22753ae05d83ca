internal import CP11Kit
import TokenpinCore
import TokenpinSystem

/// One PKCS#11 module, initialized, and the calls tokenpin makes through its function list, each wrapped once.
///
/// This file, `PKCS11SessionCalls.swift` (the calls in a session) and `PKCS11Attributes.swift` are the only ones
/// that reach the function list (through `f`, which counts each call); every `CK_ULONG` becomes a Swift `UInt` here. Each wrapper checks what the module answers before anything reads it: counts and lengths
/// against the buffer given, and against a bound a real token never reaches, so a hostile or broken module gets a
/// `PKCS11ModuleError`, never an out-of-bounds read or a huge allocation.
///
/// A class, not a non-copyable owner: sessions keep it alive, and a module loaded by path is finalized and
/// unloaded when the last of them goes. Not thread-safe by itself: the helper drives it from one thread.
final class PKCS11Module {
    /// How messages name the module: p11-kit's name (`softhsm2`, `opensc-pkcs11`) or the file's path.
    let name: String
    /// The module's shared object, when known.
    let path: String?
    private let functions: UnsafeMutablePointer<CK_FUNCTION_LIST>
    /// Keeps a module loaded by path (its `deinit` finalizes first) or p11-kit's list alive.
    private let owner: Owner
    /// PKCS#11 calls made through this module so far (for the figures: calls per verify), from its
    /// `C_GetFunctionList` and `C_Initialize` on (as p11-kit makes them for its modules).
    private(set) var calls = PKCS11Module.loadingCalls

    private enum Owner {
        case library(LoadedLibrary)
        case p11kit(P11KitModules)
    }

    /// The calls that load a module: `C_GetFunctionList` and `C_Initialize`.
    static let loadingCalls = 2

    /// The most slots, mechanisms and objects a list may hold; beyond it a module's answer is refused.
    static let maximumListCount = 1024
    /// The longest attribute value read (a certificate is a few KiB; 64 KiB is far beyond any key attribute).
    static let maximumAttributeLength = 65536

    private init(name: String, path: String?, functions: UnsafeMutablePointer<CK_FUNCTION_LIST>, owner: Owner) {
        self.name = name
        self.path = path
        self.functions = functions
        self.owner = owner
    }

    // MARK: Loading

    /// Loads the module at `path` with `dlopen`, takes its functions from `C_GetFunctionList` and initializes it
    /// with `CKF_OS_LOCKING_OK` (the module may use the operating system's locks; tokenpin passes none of its own).
    ///
    /// The corresponding C functions are `dlopen`, `C_GetFunctionList` and `C_Initialize`.
    static func load(path: String) throws(PKCS11ModuleError) -> PKCS11Module {
        let library: DynamicLibrary
        do {
            library = try DynamicLibrary(loading: path)
        } catch {
            throw PKCS11ModuleError(.loadFailed, "cannot load the PKCS#11 module \(path): \(error.message)")
        }
        guard let symbol = library.symbol(named: "C_GetFunctionList") else {
            throw PKCS11ModuleError(.loadFailed, "\(path) is not a PKCS#11 module: it has no C_GetFunctionList")
        }
        typealias GetFunctionList =
            @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<CK_FUNCTION_LIST>?>?)
            -> CK_RV
        let getFunctionList = unsafeBitCast(symbol, to: GetFunctionList.self)
        var list: UnsafeMutablePointer<CK_FUNCTION_LIST>?
        let result = getFunctionList(&list)
        guard result == CKR_OK else {
            throw PKCS11ModuleError(.loadFailed, "\(path): C_GetFunctionList failed: \(PKCS11Error(rawValue: result))")
        }
        guard let list else { throw PKCS11ModuleError(.loadFailed, "\(path): C_GetFunctionList gave no functions") }
        try checkFunctions(list, name: path)
        var arguments = CK_C_INITIALIZE_ARGS()
        arguments.flags = CK_FLAGS(CKF_OS_LOCKING_OK)
        let initialized = withUnsafeMutablePointer(to: &arguments) { list.pointee.C_Initialize!($0) }
        guard initialized == CKR_OK else {
            throw PKCS11ModuleError(.loadFailed, "\(path): C_Initialize failed: \(PKCS11Error(rawValue: initialized))")
        }
        let loaded = LoadedLibrary(library: library, functions: list)
        return PKCS11Module(name: path, path: path, functions: list, owner: .library(loaded))
    }

    /// Every module p11-kit is configured to load (`pkcs11.conf`, the `*.module` files), loaded and initialized by
    /// p11-kit, which keeps them for this process. A module that fails to load is left out by p11-kit (it logs why)
    /// unless it is marked critical, when nothing loads.
    ///
    /// The corresponding C functions are `p11_kit_modules_load_and_initialize`, `p11_kit_module_get_name` and
    /// `p11_kit_module_get_filename`.
    static func loadConfigured() throws(PKCS11ModuleError) -> [PKCS11Module] {
        guard let list = p11_kit_modules_load_and_initialize(0) else {
            let message = p11_kit_message().map { String(cString: $0) } ?? "no reason given"
            throw PKCS11ModuleError(.loadFailed, "p11-kit could not load its configured modules: \(message)")
        }
        let owner = P11KitModules(list: list)
        var modules: [PKCS11Module] = []
        var index = 0
        while let functions = list[index], index < maximumListCount {
            index += 1
            let name = String(takingMallocated: p11_kit_module_get_name(functions)) ?? "module \(index)"
            let path = String(takingMallocated: p11_kit_module_get_filename(functions))
            do {
                try checkFunctions(functions, name: name)
            } catch {
                continue  // p11-kit's own wrapper always has every function; skip anything else
            }
            modules.append(PKCS11Module(name: name, path: path, functions: functions, owner: .p11kit(owner)))
        }
        return modules
    }

    /// Refuses a function list without the functions tokenpin calls, or of a major version other than 2 or 3.
    private static func checkFunctions(_ list: UnsafeMutablePointer<CK_FUNCTION_LIST>, name: String)
        throws(PKCS11ModuleError)
    {
        let f = list.pointee
        guard f.version.major == 2 || f.version.major == 3 else {
            throw PKCS11ModuleError(
                .loadFailed, "\(name) implements PKCS#11 \(f.version.major).\(f.version.minor), not 2.x or 3.x")
        }
        let present: [Bool] = [
            f.C_Initialize != nil, f.C_Finalize != nil, f.C_GetInfo != nil, f.C_GetSlotList != nil,
            f.C_GetSlotInfo != nil, f.C_GetTokenInfo != nil, f.C_GetMechanismList != nil, f.C_OpenSession != nil,
            f.C_CloseSession != nil, f.C_Login != nil, f.C_Logout != nil, f.C_FindObjectsInit != nil,
            f.C_FindObjects != nil, f.C_FindObjectsFinal != nil, f.C_GetAttributeValue != nil,
            f.C_DeriveKey != nil, f.C_DestroyObject != nil, f.C_DecryptInit != nil, f.C_Decrypt != nil,
            f.C_SetPIN != nil,
        ]
        guard !present.contains(false) else {
            throw PKCS11ModuleError(.loadFailed, "\(name)'s function list lacks functions every module has")
        }
    }

    // MARK: Calls

    /// The function list, each use counted as one call: the one way to the module's functions.
    var f: CK_FUNCTION_LIST {
        calls += 1
        return functions.pointee
    }

    /// The module's description: its manufacturer, library description and versions.
    ///
    /// The corresponding C function is `C_GetInfo`.
    func info() throws(PKCS11Failure) -> CK_INFO {
        var info = CK_INFO()
        try call("C_GetInfo") { f.C_GetInfo!(&info) }
        return info
    }

    /// The slots, only those holding a token when `tokenPresent`.
    ///
    /// Asks for the count, then the list, again when a slot appeared in between (at most four times). The
    /// corresponding C function is `C_GetSlotList`.
    func slots(tokenPresent: Bool) throws(PKCS11Failure) -> [UInt] {
        let present = CK_BBOOL(tokenPresent ? CK_TRUE : CK_FALSE)
        for _ in 0..<4 {
            var count: CK_ULONG = 0
            try call("C_GetSlotList") { f.C_GetSlotList!(present, nil, &count) }
            guard count <= Self.maximumListCount else {
                throw .module(PKCS11ModuleError(.absurdCount, "C_GetSlotList reports \(count) slots"))
            }
            if count == 0 { return [] }
            var slots = [CK_SLOT_ID](repeating: 0, count: Int(count))
            var filled = count
            let result = f.C_GetSlotList!(present, &slots, &filled)
            if result == CKR_BUFFER_TOO_SMALL { continue }
            try call("C_GetSlotList") { result }
            guard filled <= count else {
                throw .module(PKCS11ModuleError(.wrongLength, "C_GetSlotList filled \(filled) of \(count) slots"))
            }
            return slots.prefix(Int(filled)).map { UInt($0) }
        }
        throw .call(.bufferTooSmall, "C_GetSlotList")
    }

    /// The slot's description and flags (`CKF_TOKEN_PRESENT`, `CKF_REMOVABLE_DEVICE`, `CKF_HW_SLOT`).
    ///
    /// The corresponding C function is `C_GetSlotInfo`.
    func slotInfo(_ slot: UInt) throws(PKCS11Failure) -> CK_SLOT_INFO {
        var info = CK_SLOT_INFO()
        try call("C_GetSlotInfo") { f.C_GetSlotInfo!(CK_SLOT_ID(slot), &info) }
        return info
    }

    /// Whether a slot event (a token inserted or removed) is pending, without waiting: `true` with a slot,
    /// `false` for none, nil when the module does not support the call (SoftHSM) or it failed.
    ///
    /// The corresponding C function is `C_WaitForSlotEvent` with `CKF_DONT_BLOCK`.
    func pendingSlotEvent() -> Bool? {
        guard let wait = f.C_WaitForSlotEvent else { return nil }
        var slot: CK_SLOT_ID = 0
        switch wait(CK_FLAGS(CKF_DONT_BLOCK), &slot, nil) {
        case CK_RV(CKR_OK): return true
        case CK_RV(CKR_NO_EVENT): return false
        default: return nil
        }
    }

    /// The token's label, manufacturer, model, serial number, flags and PIN lengths.
    ///
    /// The corresponding C function is `C_GetTokenInfo`.
    func tokenInfo(_ slot: UInt) throws(PKCS11Failure) -> CK_TOKEN_INFO {
        var info = CK_TOKEN_INFO()
        try call("C_GetTokenInfo") { f.C_GetTokenInfo!(CK_SLOT_ID(slot), &info) }
        return info
    }

    /// The mechanisms the token in `slot` supports.
    ///
    /// The corresponding C function is `C_GetMechanismList`.
    func mechanisms(_ slot: UInt) throws(PKCS11Failure) -> [UInt] {
        for _ in 0..<4 {
            var count: CK_ULONG = 0
            try call("C_GetMechanismList") { f.C_GetMechanismList!(CK_SLOT_ID(slot), nil, &count) }
            guard count <= Self.maximumListCount else {
                throw .module(PKCS11ModuleError(.absurdCount, "C_GetMechanismList reports \(count) mechanisms"))
            }
            if count == 0 { return [] }
            var list = [CK_MECHANISM_TYPE](repeating: 0, count: Int(count))
            var filled = count
            let result = f.C_GetMechanismList!(CK_SLOT_ID(slot), &list, &filled)
            if result == CKR_BUFFER_TOO_SMALL { continue }
            try call("C_GetMechanismList") { result }
            guard filled <= count else {
                throw .module(PKCS11ModuleError(.wrongLength, "C_GetMechanismList filled \(filled) of \(count)"))
            }
            return list.prefix(Int(filled)).map { UInt($0) }
        }
        throw .call(.bufferTooSmall, "C_GetMechanismList")
    }

    /// Finalizes the module: its sessions close and it forgets every login. p11-kit's modules are finalized
    /// together, once, by the first of them.
    ///
    /// The corresponding C functions are `C_Finalize` and `p11_kit_modules_finalize`.
    func finalize() {
        switch owner {
        case .library(let loaded): loaded.finalize()
        case .p11kit(let list): list.finalize()
        }
    }

    /// Throws the return value of one call, with the C function's name.
    func call(_ function: String, _ body: () -> CK_RV) throws(PKCS11Failure) {
        let result = body()
        guard result != CKR_OK else { return }
        throw .call(PKCS11Error(rawValue: result), function)
    }
}

/// A module loaded by path: finalized, then unloaded, when the last user goes.
private final class LoadedLibrary {
    private let library: DynamicLibrary
    private let functions: UnsafeMutablePointer<CK_FUNCTION_LIST>
    private var finalized = false

    init(library: consuming DynamicLibrary, functions: UnsafeMutablePointer<CK_FUNCTION_LIST>) {
        self.library = library
        self.functions = functions
    }

    func finalize() {
        guard !finalized else { return }
        finalized = true
        _ = functions.pointee.C_Finalize!(nil)
    }

    deinit {
        finalize()
        // Unloading runs the module's destructors; some (SoftHSM with OpenSSL 3) crash in them. The process that
        // loads modules ends soon after and skips them (`exitImmediately`), so the module stays mapped.
        library.keepLoaded()
    }
}

/// p11-kit's list of configured modules: finalized and released when the last module of it goes.
private final class P11KitModules {
    let list: UnsafeMutablePointer<UnsafeMutablePointer<CK_FUNCTION_LIST>?>
    private var finalized = false

    init(list: UnsafeMutablePointer<UnsafeMutablePointer<CK_FUNCTION_LIST>?>) { self.list = list }

    func finalize() {
        guard !finalized else { return }
        finalized = true
        _ = p11_kit_modules_finalize(list)
    }

    deinit {
        finalize()
        p11_kit_modules_release(list)
    }
}

/// An open session with a token, closed when its owner goes away.
struct PKCS11Session: ~Copyable {
    let module: PKCS11Module
    /// The `CK_SESSION_HANDLE`.
    let handle: UInt

    deinit { module.closeSession(handle) }
}

/// What went wrong in a call to a module: the return value of a named function, or an answer tokenpin refused.
enum PKCS11Failure: Error {
    /// The function returned an error.
    case call(PKCS11Error, String)
    /// The module answered something impossible (a count or length past the buffer, an absurd size).
    case module(PKCS11ModuleError)
}
