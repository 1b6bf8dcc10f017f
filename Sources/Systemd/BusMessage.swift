#if canImport(Glibc)
import Glibc
#endif
internal import CSystemd
import Posix

/// One message a ``Bus`` handler is given, read in order of its signature
/// (`sd_bus_message_read_basic(3)` and its siblings). Valid only inside the
/// handler: sd-bus frees it afterwards.
public struct BusMessage {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) {
        self.handle = handle
    }

    /// A D-Bus type code as sd-bus takes it (`'s'`).
    static func code(_ type: Unicode.Scalar) -> CChar { CChar(bitPattern: UInt8(type.value)) }

    /// The error's name when the message is an error reply
    /// (`org.freedesktop.DBus.Error.ServiceUnknown`), or nil.
    /// Wraps `sd_bus_message_is_method_error` and `sd_bus_message_get_error`.
    public var errorName: String? {
        guard sd_bus_message_is_method_error(handle, nil) > 0, let error = sd_bus_message_get_error(handle) else { return nil }
        return error.pointee.name.map { String(cString: $0) } ?? ""
    }

    /// The error reply's text, or nil.
    public var errorMessage: String? {
        guard sd_bus_message_is_method_error(handle, nil) > 0, let error = sd_bus_message_get_error(handle) else { return nil }
        return error.pointee.message.map { String(cString: $0) }
    }

    /// Reads a string (`s`), an object path (`o`) or a signature (`g`).
    public func readString(_ type: Unicode.Scalar = "s") throws(SystemCallError) -> String {
        var pointer: UnsafePointer<CChar>?
        try read(type, &pointer)
        guard let pointer else { throw SystemCallError(call: "sd_bus_message_read_basic", errno: EBADMSG) }
        return String(cString: pointer)
    }

    /// Reads a `u`.
    public func readUInt32() throws(SystemCallError) -> UInt32 {
        var value: UInt32 = 0
        try read("u", &value)
        return value
    }

    /// Reads a `b` (which sd-bus reads as a C `int`).
    public func readBool() throws(SystemCallError) -> Bool {
        var value: Int32 = 0
        try read("b", &value)
        return value != 0
    }

    private func read<T>(_ type: Unicode.Scalar, _ value: inout T) throws(SystemCallError) {
        let r = withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(handle, Self.code(type), $0) }
        // 0: the end of the message or container, where a value was expected.
        guard r > 0 else { throw SystemCallError(call: "sd_bus_message_read_basic", errno: r < 0 ? -r : EBADMSG) }
    }

    /// Enters a container: `a` with its element's signature, `e` (a dict
    /// entry) or `r` with their members', `v` with its contents'.
    /// Wraps `sd_bus_message_enter_container`.
    /// - Returns: false at the end of the enclosing array (no more entries).
    public func enterContainer(_ type: Unicode.Scalar, contents: String) throws(SystemCallError) -> Bool {
        let r = sd_bus_message_enter_container(handle, Self.code(type), contents)
        guard r >= 0 else { throw SystemCallError(call: "sd_bus_message_enter_container", errno: -r, subject: contents) }
        return r > 0
    }

    /// Leaves the container entered last. Wraps `sd_bus_message_exit_container`.
    public func exitContainer() throws(SystemCallError) {
        let r = sd_bus_message_exit_container(handle)
        guard r >= 0 else { throw SystemCallError(call: "sd_bus_message_exit_container", errno: -r) }
    }

    /// The type of the next value and, for a container, its contents'
    /// signature (a variant's `u`); nil at the end. Wraps `sd_bus_message_peek_type`.
    public func peek() throws(SystemCallError) -> (type: Unicode.Scalar, contents: String?)? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let r = sd_bus_message_peek_type(handle, &type, &contents)
        guard r >= 0 else { throw SystemCallError(call: "sd_bus_message_peek_type", errno: -r) }
        guard r > 0 else { return nil }
        return (Unicode.Scalar(UInt8(bitPattern: type)), contents.map { String(cString: $0) })
    }

    /// Passes over values of these types (`v`, `as`). Wraps `sd_bus_message_skip`.
    public func skip(_ types: String) throws(SystemCallError) {
        let r = sd_bus_message_skip(handle, types)
        guard r >= 0 else { throw SystemCallError(call: "sd_bus_message_skip", errno: -r, subject: types) }
    }
}
