# gpio_write, gpio_read, gpio_read_all (MimiClaw's schemas and result strings).
#
# Pin policy (devices/pins.py): only pins in the `gpio_allow` setting
# (default 1,2,4-18,21,38-42,47,48); these are refused whatever the setting says:
#   0, 3, 45, 46  strapping pins (boot mode, JTAG source, flash voltage, ROM log)
#   19, 20        USB Serial/JTAG (the REPL/console on most S3 boards)
#   26-32         SPI flash bus
#   33-37         octal PSRAM bus on N16R8/N8R8 modules
#   43, 44        UART0 TX/RX, the serial console
#
# The pins themselves (what each was left as, read-back of outputs): devices/gpio.py. A
# device's pin (devices/table.py) is the device's: refused here, left out of read_all.
from mimi.devices.gpio import refusal, allowed, owned, write, read


def _level(v):
    return "HIGH" if v else "LOW"


def _pin_arg(args):
    pin = args.get("pin")
    if isinstance(pin, bool) or not isinstance(pin, int):
        return None, "Error: 'pin' required (integer)"
    return pin, refusal(pin)


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
    taken = owned()
    out = "GPIO states: " + ", ".join("%d=%s" % (p, _level(read(p))) for p in pins if p not in taken)
    if taken:
        out += " (devices' pins left out: %s)" % ", ".join("%d=%s" % kv for kv in sorted(taken.items()))
    return out

