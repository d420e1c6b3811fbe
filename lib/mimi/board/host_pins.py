# The host's simulated GPIO pins, with machine.Pin's API (board.Pin on the host):
# SIM_PINS holds each pin's mode, level and pull; the simulated parts of
# mimi/devices/sim/ wire themselves to pins in SIM_WIRES; sim_drive() is a bare
# outside signal. Loaded when first used (board.Pin, board.SIM_PINS: host_sys's
# __getattr__), so a boot that touches no pin does not carry it.


class Pin:
    """machine.Pin's API on simulated pins; SIM_PINS holds every pin's state
    ({"mode", "level", "pull"}). An input's level comes from what is wired to it
    (SIM_WIRES: a simulated part; sim_drive: a bare signal), else its pull, else it
    floats and keeps the level it last had. irq() handlers run as soft IRQs
    (micropython.schedule) when that level changes."""

    IN = 1
    OUT = 3
    OPEN_DRAIN = 7
    PULL_UP = 2
    PULL_DOWN = 1
    IRQ_RISING = 1
    IRQ_FALLING = 2

    def __init__(self, pin, mode=-1, pull=-1, value=None):
        if not (0 <= pin <= 21 or 33 <= pin <= 48):  # the firmware's Pin table (§1.1)
            raise ValueError("invalid pin")
        self.id = pin
        self._st = SIM_PINS.setdefault(pin, {"mode": None, "level": 0, "pull": None})
        self.init(mode, pull, value)

    def init(self, mode=-1, pull=-1, value=None):
        st = self._st
        if mode != -1:
            st["mode"] = mode
        if pull != -1:
            st["pull"] = pull
        if value is not None and st["mode"] in (Pin.OUT, Pin.OPEN_DRAIN):
            self._write(1 if value else 0)  # the chip writes the level before the direction
        elif mode != -1 or pull != -1:
            settle(self.id)

    def value(self, v=None):
        if v is None:
            return self._st["level"] if self._st["mode"] == Pin.OUT else settle(self.id)
        if self._st["mode"] in (Pin.OUT, Pin.OPEN_DRAIN):
            self._write(1 if v else 0)

    def _write(self, v):
        n = self.id
        if self._st["mode"] == Pin.OPEN_DRAIN:
            _OD[n] = v
            settle(n)
        else:
            _edge(n, v)
        part = SIM_WIRES.get(n)
        if part is not None:
            part.written(n, v)

    def on(self):
        self.value(1)

    def off(self):
        self.value(0)

    def irq(self, handler=None, trigger=3, hard=False):
        if handler is None:
            _IRQS.pop(self.id, None)
        else:
            _IRQS[self.id] = (handler, trigger, self)


SIM_PINS = {}
SIM_WIRES = {}  # pin -> the simulated part (or bus) wired to it: drive(pin), written(pin, v)
_EXT = {}  # pin -> level of a bare outside signal (sim_drive)
_OD = {}  # pin -> open-drain output latch (1: released)
_IRQS = {}  # pin -> (handler, trigger, Pin)


def _edge(n, level):
    """Store a pin's new level; a change fires its irq handler."""
    st = SIM_PINS[n]
    if st["level"] == level:
        return
    st["level"] = level
    h = _IRQS.get(n)
    if h and h[1] & (Pin.IRQ_RISING if level else Pin.IRQ_FALLING):
        import micropython

        try:
            micropython.schedule(h[0], h[2])
        except RuntimeError:  # the queue is full: the edge is lost, as on the chip
            pass


def settle(n):
    """Work out pin n's level from what drives it (after a part changed, or on a read)."""
    st = SIM_PINS.get(n)
    if st is None:
        st = SIM_PINS[n] = {"mode": None, "level": 0, "pull": None}
    mode = st["mode"]
    if mode == Pin.OUT:
        return st["level"]
    part = SIM_WIRES.get(n)
    v = part.drive(n) if part is not None else _EXT.get(n)
    if mode == Pin.OPEN_DRAIN and _OD.get(n, 1) == 0:
        v = 0
    if v is None:
        pull = st["pull"]
        v = 1 if pull == Pin.PULL_UP else 0 if pull == Pin.PULL_DOWN else st["level"]
    _edge(n, v)
    return v


def sim_drive(pin, level):
    """An outside signal on a bare pin (None: nothing drives it any more)."""
    SIM_PINS.setdefault(pin, {"mode": Pin.IN, "level": 0, "pull": None})
    _EXT[pin] = None if level is None else 1 if level else 0
    settle(pin)
