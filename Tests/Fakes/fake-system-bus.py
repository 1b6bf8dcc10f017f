#!/usr/bin/python3
"""A fake NetworkManager and logind on a private D-Bus bus, for the tests.

Usage: fake-system-bus.py ADDRESS [--metered N | --no-network-manager]

Connects to the bus at ADDRESS (a dbus-daemon the test started), owns
org.freedesktop.login1 and, unless told not to, org.freedesktop.NetworkManager
with its Metered property (u, NMMetered: 0 unknown, 1 yes, 2 no, 3 guess-yes,
4 guess-no), and prints "ready". The test steers it through methods of
org.expensed.FakeSystemBus on /org/expensed/FakeSystemBus (with busctl):

  SetMetered(u)          set Metered, emit PropertiesChanged with its value
  InvalidateMetered(u)   set Metered, emit PropertiesChanged naming it invalidated
  PrepareForSleep(b)     emit logind's PrepareForSleep(b)
  StopNetworkManager()   give up NetworkManager's name (NameOwnerChanged)
  StartNetworkManager()  take it again
  MeteredReads() -> u    how many times Metered was read with Get or GetAll

Debian's python3-dbus and python3-gi (GLib's main loop): /usr/bin/python3.
"""
import sys

import dbus
import dbus.bus
import dbus.exceptions
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

NM = "org.freedesktop.NetworkManager"
NM_PATH = "/org/freedesktop/NetworkManager"
LOGIN = "org.freedesktop.login1"
LOGIN_PATH = "/org/freedesktop/login1"
LOGIN_MANAGER = "org.freedesktop.login1.Manager"
CONTROL = "org.expensed.FakeSystemBus"
CONTROL_PATH = "/org/expensed/FakeSystemBus"


class NetworkManager(dbus.service.Object):
    def __init__(self, bus, metered):
        super().__init__(bus, NM_PATH)
        self.metered = metered
        self.reads = 0

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        if interface == NM and name == "Metered":
            self.reads += 1
            return dbus.UInt32(self.metered)
        raise dbus.exceptions.DBusException(f"no property {interface}.{name}", name="org.freedesktop.DBus.Error.UnknownProperty")

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        if interface != NM:
            return {}
        self.reads += 1
        return {"Metered": dbus.UInt32(self.metered), "State": dbus.UInt32(70)}

    @dbus.service.signal(dbus.PROPERTIES_IFACE, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass


class Login(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, LOGIN_PATH)

    @dbus.service.signal(LOGIN_MANAGER, signature="b")
    def PrepareForSleep(self, start):
        pass


class Control(dbus.service.Object):
    def __init__(self, bus, network_manager, login):
        super().__init__(bus, CONTROL_PATH)
        self.bus = bus
        self.network_manager = network_manager
        self.login = login

    @dbus.service.method(CONTROL, in_signature="u")
    def SetMetered(self, value):
        self.network_manager.metered = value
        # Another property in the same signal, as NetworkManager sends them.
        self.network_manager.PropertiesChanged(NM, {"Connectivity": dbus.UInt32(4), "Metered": dbus.UInt32(value)}, [])

    @dbus.service.method(CONTROL, in_signature="u")
    def InvalidateMetered(self, value):
        self.network_manager.metered = value
        self.network_manager.PropertiesChanged(NM, dbus.Dictionary({}, signature="sv"), ["Metered"])

    @dbus.service.method(CONTROL, in_signature="b")
    def PrepareForSleep(self, start):
        self.login.PrepareForSleep(start)

    @dbus.service.method(CONTROL)
    def StopNetworkManager(self):
        self.bus.release_name(NM)

    @dbus.service.method(CONTROL)
    def StartNetworkManager(self):
        own(self.bus, NM)

    @dbus.service.method(CONTROL, out_signature="u")
    def MeteredReads(self):
        return dbus.UInt32(self.network_manager.reads)


def own(bus, name):
    if bus.request_name(name, dbus.bus.NAME_FLAG_DO_NOT_QUEUE) != dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER:
        raise SystemExit(f"fake-system-bus: could not own {name}")


def main():
    arguments = sys.argv[1:]
    if not arguments:
        raise SystemExit(__doc__)
    address = arguments[0]
    metered = 0
    with_network_manager = True
    rest = arguments[1:]
    while rest:
        option = rest.pop(0)
        if option == "--metered" and rest:
            metered = int(rest.pop(0))
        elif option == "--no-network-manager":
            with_network_manager = False
        else:
            raise SystemExit(f"fake-system-bus: unknown argument {option!r}")
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    network_manager = NetworkManager(bus, metered)
    login = Login(bus)
    Control(bus, network_manager, login)
    own(bus, LOGIN)
    own(bus, CONTROL)
    if with_network_manager:
        own(bus, NM)
    print("ready", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
