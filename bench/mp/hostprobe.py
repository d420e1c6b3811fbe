# The console side of bench/hostshare.py, exec'd on the simulator's console (names start
# with _hs: the REPL namespace is main.py's). _hs_rest(): the live heap, the host-only
# modules, the size of the simulated parts' data (each object measured by a copy of it)
# and every interned name (micropython.qstr_info(1)); _hs_watch(on): a task that notes
# each host-only module loaded while on (every 5 ms), printed when turned off.
import gc
import sys
import asyncio
import micropython

_HS_HOST = ("mimi.board.host", "mimi.devices.sim")
_HS_DATA = (("mimi.devices.sim.parts", ("_parts", "_buses", "_owner", "_clock", "_lock")),
            ("mimi.board.host_pins", ("SIM_PINS", "SIM_WIRES", "_EXT", "_OD", "_IRQS")),
            ("mimi.board.host_signals", ("SIM_CHIP", "SIM_PWM", "_ADC2_LAST")),
            ("mimi.board.host", ("_wlan", "_rtc", "_line")),
            ("mimi.board.host_fakes", ("_ap",)),
            ("mimi.repl", ("sim_set", "sim_get")))


def _hs_copy(f):
    gc.collect()
    a = gc.mem_alloc()
    x = f()
    b = gc.mem_alloc()
    del x
    return b - a


def _hs_size(o, seen):
    """Bytes of o and what it holds (not code: functions, classes, modules; interned
    names and small ints are not in the heap)."""
    if id(o) & 3 or id(o) in seen:
        return 0
    seen.add(id(o))
    t = type(o)
    if t is dict:
        return _hs_copy(o.copy) + sum(_hs_size(k, seen) + _hs_size(v, seen) for k, v in o.items())
    if t is list or t is tuple:
        s = 16 + (len(o) * 4 + 15) // 16 * 16 if t is list else (8 + len(o) * 4 + 15) // 16 * 16 if o else 0
        return s + sum(_hs_size(v, seen) for v in o)
    if t is bytearray:
        return 16 + (len(o) + 15) // 16 * 16
    if t is str or t is bytes:
        return 16 + (len(o) + 16) // 16 * 16
    d = getattr(o, "__dict__", None)
    if type(d) is dict and type(o) is not type and not hasattr(o, "__name__"):
        return _hs_copy(lambda: o.__dict__.copy()) - 16 + sum(_hs_size(v, seen) for v in d.values())
    return 16  # a float, a lock, a stream


def _hs_rest():
    gc.collect()
    out = {"alloc": gc.mem_alloc(), "modules": sorted(m for m in sys.modules if m.startswith(_HS_HOST))}
    seen = set()
    data = {}
    for mod, names in _HS_DATA:
        m = sys.modules.get(mod)
        for n in names if m else ():
            if n in m.__dict__:
                data[mod[5:] + "." + n] = _hs_size(m.__dict__[n], seen)
    out["data"] = data
    print("HOSTSHARE " + repr(out).replace("'", '"'))
    micropython.qstr_info(1)
    print("HOSTSHARE qstrs end")


_hs_seen = set()
_hs_on = [False]


async def _hs_sample():
    while _hs_on[0]:
        for m in sys.modules:
            if m.startswith(_HS_HOST):
                _hs_seen.add(m)
        await asyncio.sleep_ms(5)


def _hs_watch(on):
    _hs_on[0] = on
    if on:
        _hs_seen.clear()
        asyncio.create_task(_hs_sample())
    else:
        print("HOSTSHARE watched " + repr(sorted(_hs_seen)).replace("'", '"'))


print("hostprobe", "in")
