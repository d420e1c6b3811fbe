# The GPIO pins the tools drive, and the mode each was left in (the GPIO tools,
# tools/gpio.py, call these). Only pins in the `gpio_allow` setting (devices/pins.py:
# the ESP32-S3's pin policy, and the pins refused whatever the setting says).
#
# Unlike MimiClaw, reading never reconfigures a pin the tools drove as an output:
# the mode of every pin is remembered, and an output is read back through its
# existing Pin object (the ESP32 port's Pin.OUT also enables the input buffer, so
# value() reports the pad level) — a relay switched on stays on.
import _thread
from mimi import board
from mimi.devices import pins as gpio_policy

OUT = "out"
IN = "in"

_lock = _thread.allocate_lock()
_pins = {}  # pin number -> (mode, Pin object)


def allowed():
    """The pins of the `gpio_allow` setting, as a sorted tuple."""
    from mimi.config.settings import cfg

    try:
        return gpio_policy.parse(cfg.get("gpio_allow"))
    except ValueError:  # cannot happen for a validated setting; stay safe anyway
        return ()


def refusal(pin):
    """None when `pin` may be used, else the tool's error string."""
    if pin in allowed():
        owner = owned().get(pin)
        if owner:
            return "Error: pin %d is device %s: use device_read / device_set" % (pin, owner)
        return None
    msg = "Error: pin %d is not in allowed list" % pin
    if pin in gpio_policy.NEVER:
        msg += " (%s)" % gpio_policy.NEVER[pin]
    return msg


def owned():
    """{pin: device name} of the pins devices use (devices/table.py): the GPIO tools leave
    them alone (a read would make a relay's output an input)."""
    from mimi import devices

    if not devices.attached():
        return {}
    from mimi.devices import state

    if not state.fresh():
        with devices.use():
            pass
    return {p: row[0] for row in state.rows for p in row[6]}


def write(pin, state):
    with _lock:
        cur = _pins.get(pin)
        if cur and cur[0] == OUT:
            cur[1].value(state)
        else:
            _pins[pin] = (OUT, board.Pin(pin, board.Pin.OUT, value=state))


def read(pin):
    """The pin's level; an output keeps its mode and level."""
    with _lock:
        cur = _pins.get(pin)
        if cur is None:
            cur = (IN, board.Pin(pin, board.Pin.IN))
            _pins[pin] = cur
        return 1 if cur[1].value() else 0


def mode(pin):
    cur = _pins.get(pin)
    return cur[0] if cur else None


def forget():
    """Tests: drop what is known about pin modes."""
    with _lock:
        _pins.clear()
