# gpio_write, gpio_read, gpio_read_all (MimiClaw's schemas and result strings).
#
# Pin policy (mimi/gpio_policy.py): only pins in the `gpio_allow` setting
# (default 1,2,4-18,21,38-42,47,48); these are refused whatever the setting says:
#   0, 3, 45, 46  strapping pins (boot mode, JTAG source, flash voltage, ROM log)
#   19, 20        USB Serial/JTAG (the REPL/console on most S3 boards)
#   26-32         SPI flash bus
#   33-37         octal PSRAM bus on N16R8/N8R8 modules
#   43, 44        UART0 TX/RX, the serial console
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


def _level(v):
    return "HIGH" if v else "LOW"


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
        return None
    msg = "Error: pin %d is not in allowed list" % pin
    if pin in gpio_policy.NEVER:
        msg += " (%s)" % gpio_policy.NEVER[pin]
    return msg


def _pin_arg(args):
    pin = args.get("pin")
    if isinstance(pin, bool) or not isinstance(pin, int):
        return None, "Error: 'pin' required (integer)"
    return pin, refusal(pin)


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


def gpio_write(args, ctx):
    pin, err = _pin_arg(args)
    if err:
        return err
    state = args.get("state")
    if isinstance(state, bool):
        state = int(state)
    if not isinstance(state, int):
        return "Error: 'state' required (0 or 1)"
    state = 1 if state else 0
    write(pin, state)
    return "Pin %d set to %s" % (pin, _level(state))


def gpio_read(args, ctx):
    pin, err = _pin_arg(args)
    if err:
        return err
    return "Pin %d = %s" % (pin, _level(read(pin)))


def gpio_read_all(args, ctx):
    pins = allowed()
    if not pins:
        return "Error: no GPIO pins are allowed (setting gpio_allow is empty)"
    return "GPIO states: " + ", ".join("%d=%s" % (p, _level(read(p))) for p in pins)

