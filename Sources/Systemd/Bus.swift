#if canImport(Glibc)
import Glibc
#endif
internal import CSystemd
import Posix

/// A connection to a D-Bus message bus through sd-bus (`sd-bus(3)`), driven
/// by one thread: ``wait(stoppingOn:)`` polls its descriptor (and a stop
/// notifier), ``process()`` hands what arrived to the handlers given to
/// ``matchSignal(sender:path:interface:member:_:)``, ``addMatch(_:_:)`` and
/// ``callMethod(destination:path:interface:member:arguments:_:)``.
///
/// sd-bus is not thread-safe: a `Bus` is used by the thread that opened it
/// and by no other, and every handler runs on that thread, inside
/// ``process()``. Closing the bus (`deinit`) removes its matches.
public final class Bus {
    private let handle: OpaquePointer
    /// The match slots: unreferenced in `deinit`, which removes the matches.
    private var slots: [OpaquePointer] = []
    /// The handlers of matches, alive as long as the bus: sd-bus keeps raw
    /// pointers to them.
    private var handlers: [Handler] = []
    /// The handlers of method calls waiting for their reply, each dropped
    /// once its reply (or sd-bus's error in its place) was handled.
    private var pending: [ObjectIdentifier: Handler] = [:]

    /// What sd-bus calls back with one message, through a raw pointer.
    private final class Handler {
        let body: (BusMessage) -> Void
        /// For a method call's reply: the bus to forget this handler on.
        unowned(unsafe) let owner: Bus?
        init(_ body: @escaping (BusMessage) -> Void, owner: Bus? = nil) {
            self.body = body
            self.owner = owner
        }
    }

    private init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        for slot in slots { sd_bus_slot_unref(slot) }
        // Not flushed: nothing this side sends must arrive, and a bus that
        // stopped reading must not hold up the caller.
        sd_bus_close_unref(handle)
    }

    /// Connects to the system bus: the address in `DBUS_SYSTEM_BUS_ADDRESS`
    /// when set, else `unix:path=/run/dbus/system_bus_socket`. The
    /// connection is made before this returns; the bus's greeting is read
    /// by the first ``process()``. Wraps `sd_bus_open_system`.
    /// - Parameter description: the connection's name in sd-bus's own log lines.
    public static func system(description: String) throws(SystemCallError) -> Bus {
        var raw: OpaquePointer?
        let r = sd_bus_open_system(&raw)
        guard r >= 0, let raw else { throw SystemCallError(call: "sd_bus_open_system", errno: -r, subject: systemAddress) }
        _ = sd_bus_set_description(raw, description)
        return Bus(handle: raw)
    }

    /// The address ``system(description:)`` connects to, to name it in messages.
    public static var systemAddress: String {
        Environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"
    }

    /// Connects to the bus at `address` (`unix:path=/tmp/t/bus`), as a
    /// client of a bus daemon. Wraps `sd_bus_new`, `sd_bus_set_address`,
    /// `sd_bus_set_bus_client` and `sd_bus_start`.
    public static func open(address: String, description: String) throws(SystemCallError) -> Bus {
        var raw: OpaquePointer?
        var r = sd_bus_new(&raw)
        guard r >= 0, let raw else { throw SystemCallError(call: "sd_bus_new", errno: -r) }
        let bus = Bus(handle: raw)
        _ = sd_bus_set_description(raw, description)
        r = sd_bus_set_address(raw, address)
        guard r >= 0 else { throw SystemCallError(call: "sd_bus_set_address", errno: -r, subject: address) }
        r = sd_bus_set_bus_client(raw, 1)
        guard r >= 0 else { throw SystemCallError(call: "sd_bus_set_bus_client", errno: -r) }
        r = sd_bus_start(raw)
        guard r >= 0 else { throw SystemCallError(call: "sd_bus_start", errno: -r, subject: address) }
        return bus
    }

    /// Whether the connection is still up (or still being set up): false
    /// once the bus went away. Wraps `sd_bus_is_open`.
    public var isOpen: Bool { sd_bus_is_open(handle) > 0 }

    /// How long a method call waits for its reply, for calls whose caller
    /// gives no time of its own (matches, say). Wraps `sd_bus_set_method_call_timeout`.
    public func setMethodCallTimeout(microseconds: UInt64) {
        _ = sd_bus_set_method_call_timeout(handle, microseconds)
    }

    /// Handles what is queued: messages read, replies due, the greeting;
    /// runs handlers. Call it until it returns false before waiting again.
    /// Wraps `sd_bus_process`.
    /// - Returns: whether there may be more to do at once.
    /// - Throws: when the connection failed (it is then closed: ``isOpen`` is false).
    public func process() throws(SystemCallError) -> Bool {
        let r = sd_bus_process(handle, nil)
        guard r >= 0 else { throw SystemCallError(call: "sd_bus_process", errno: -r) }
        return r > 0
    }

    /// Waits until the bus has something to process, its next timeout
    /// (a reply's deadline) passes, or `stop` is signalled.
    /// Wraps `sd_bus_get_fd`, `sd_bus_get_events` and `sd_bus_get_timeout`.
    /// - Returns: true when `stop` was signalled.
    public func wait(stoppingOn stop: EventNotifier) throws(SystemCallError) -> Bool {
        let fd = sd_bus_get_fd(handle)
        guard fd >= 0 else { throw SystemCallError(call: "sd_bus_get_fd", errno: -fd) }
        let events = sd_bus_get_events(handle)
        guard events >= 0 else { throw SystemCallError(call: "sd_bus_get_events", errno: -events) }
        var deadline: UInt64 = 0
        let r = sd_bus_get_timeout(handle, &deadline)
        guard r >= 0 else { throw SystemCallError(call: "sd_bus_get_timeout", errno: -r) }
        // An absolute CLOCK_MONOTONIC time in µs, or UINT64_MAX for none.
        var timeout: Int32 = -1
        if deadline != UInt64.max {
            let now = Clock.monotonicNanoseconds / 1000
            timeout = deadline <= now ? 0 : Int32(min((deadline - now + 999) / 1000, UInt64(Int32.max)))
        }
        let ready = try Poll.wait(borrowed: [(fd, Poll.Events(rawValue: Int16(events))), (stop.descriptor.rawValue, .readable)],
                                  timeoutMilliseconds: timeout)
        withExtendedLifetime(stop) {}
        return !ready[1].isEmpty
    }

    /// Calls `handler` with every signal that matches, for as long as the
    /// bus is open. Waits for the bus daemon to confirm the match.
    /// Wraps `sd_bus_match_signal`; nil matches any.
    public func matchSignal(sender: String?, path: String?, interface: String?, member: String?,
                            _ handler: @escaping (BusMessage) -> Void) throws(SystemCallError) {
        let box = Handler(handler)
        var slot: OpaquePointer?
        let r = sd_bus_match_signal(handle, &slot, sender, path, interface, member, Bus.dispatch, Unmanaged.passUnretained(box).toOpaque())
        guard r >= 0, let slot else { throw SystemCallError(call: "sd_bus_match_signal", errno: -r, subject: member) }
        handlers.append(box)
        slots.append(slot)
    }

    /// Calls `handler` with every message a match rule (`dbus-daemon(1)`'s
    /// syntax, e.g. with `arg0='…'`) accepts. Wraps `sd_bus_add_match`.
    public func addMatch(_ rule: String, _ handler: @escaping (BusMessage) -> Void) throws(SystemCallError) {
        let box = Handler(handler)
        var slot: OpaquePointer?
        let r = sd_bus_add_match(handle, &slot, rule, Bus.dispatch, Unmanaged.passUnretained(box).toOpaque())
        guard r >= 0, let slot else { throw SystemCallError(call: "sd_bus_add_match", errno: -r, subject: rule) }
        handlers.append(box)
        slots.append(slot)
    }

    /// Calls a method with string arguments, without waiting: `reply` gets
    /// the answer (or an error: ``BusMessage/errorName``) from a later
    /// ``process()``, once; also when the call times out or the connection
    /// ends. The service is not started for the call if it is not running
    /// (no auto-start). Wraps `sd_bus_message_new_method_call`,
    /// `sd_bus_message_append_basic` and `sd_bus_call_async`.
    /// - Parameter timeoutMicroseconds: 0 is sd-bus's default (25 s, or ``setMethodCallTimeout(microseconds:)``).
    public func callMethod(destination: String, path: String, interface: String, member: String, arguments: [String],
                           timeoutMicroseconds: UInt64 = 0, _ reply: @escaping (BusMessage) -> Void) throws(SystemCallError) {
        var message: OpaquePointer?
        var r = sd_bus_message_new_method_call(handle, &message, destination, path, interface, member)
        guard r >= 0, let message else { throw SystemCallError(call: "sd_bus_message_new_method_call", errno: -r, subject: member) }
        defer { sd_bus_message_unref(message) }
        _ = sd_bus_message_set_auto_start(message, 0)
        for argument in arguments {
            r = argument.withCString { sd_bus_message_append_basic(message, BusMessage.code("s"), $0) }
            guard r >= 0 else { throw SystemCallError(call: "sd_bus_message_append_basic", errno: -r, subject: member) }
        }
        let box = Handler(reply, owner: self)
        // A floating slot: sd-bus frees it after the reply.
        r = sd_bus_call_async(handle, nil, message, Bus.dispatch, Unmanaged.passUnretained(box).toOpaque(), timeoutMicroseconds)
        guard r >= 0 else { throw SystemCallError(call: "sd_bus_call_async", errno: -r, subject: member) }
        pending[ObjectIdentifier(box)] = box
    }

    /// The one C callback: the user data is a ``Handler``.
    private static let dispatch: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        let box = Unmanaged<Handler>.fromOpaque(userdata).takeUnretainedValue()
        box.body(BusMessage(message))
        box.owner?.pending[ObjectIdentifier(box)] = nil
        return 0
    }
}

@available(*, unavailable, message: "sd-bus connections are used by one thread")
extension Bus: Sendable {}
