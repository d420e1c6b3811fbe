# What a failed read or set says: the tool's words for a part's Fault (devices/table.py
# said()) and an I2C part's faults (drivers/i2cpart.py): loaded when something failed, so a
# read that works does not hold them; on a short heap they go with the device layer's code
# (devices/table.py drop()).
from mimi.devices.table import Fault


def said(dev, e):
    """A part's Fault as the tool's error text (devices/table.py said())."""
    if e.kind == "answer":
        hint = getattr(dev.drv, "HINT", None)
        return "Error: %s did not answer: %s%s" % (dev.label(), e, ". Check " + hint if hint else "")
    if e.kind in ("value", "off"):
        return "Error: %s" % e
    return "Error: %s: %s" % (dev.label(), e)


def i2c(e):
    """An I2C transfer's OSError as the part's Fault."""
    code = e.args[0] if e.args else None
    if code == 19:  # ENODEV: the address was not acknowledged
        return Fault("answer", "no acknowledge")
    if code in (110, 116):  # ETIMEDOUT (Linux / newlib numbering)
        return Fault("answer", "the bus is stuck (SDA or SCL held low)")
    return Fault("answer", "I2C error %s" % (code if code is not None else e))


def hexs(data):
    return " ".join("%02x" % b for b in data)


def crc(data):
    return Fault("data", "CRC mismatch twice (last bytes %s): a noisy bus? (long wires, weak "
                 "pull-ups)" % hexs(data))
