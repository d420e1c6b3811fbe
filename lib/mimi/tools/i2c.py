# The raw I2C tools (SPEC §13): i2c_scan (the addresses that answer, with the parts they
# usually are) and i2c_io (a part without a type: bytes written and read, at a register
# or plain, in bounded sizes), on pins the pin policy allows and no other device uses,
# never at an address a device's driver owns.
import mimi
from mimi import devices

_DEFAULT_SDA, _DEFAULT_SCL = 8, 9  # MicroPython's I2C defaults on the ESP32-S3


def _bus(t, args):
    """(the I2C bus of args' sda/scl, whether a device uses it) after the pin checks;
    ValueError saying why not."""
    sda = args.get("sda", _DEFAULT_SDA)
    scl = args.get("scl", _DEFAULT_SCL)
    mimi.run("devices.types", "check_bus", sda, scl, t.listed())
    from mimi.devices import bus

    used = any(d.bus == ("i2c", sda, scl) for d in t.listed())
    return bus.i2c(sda, scl), used


def _done(b, used):
    if not used:  # a controller for a scan only: free for the devices' buses again
        from mimi.devices import bus

        bus.forget(b.sda, b.scl)


def i2c_scan(args, ctx):
    with devices.use() as t:
        try:
            b, used = _bus(t, args)
        except ValueError as e:
            return "Error: %s" % e
        try:
            with b.lock:
                found = b.i2c.scan()
        except OSError as e:
            return "Error: the I2C bus on %s did not work: %s (SDA or SCL held low? check the wiring)" % (
                b.name(), e)
        finally:
            _done(b, used)
        if not found:
            return ("No I2C part answered on %s. Check the wiring (SDA to SDA, SCL to SCL), the "
                    "pull-ups (4.7 kOhm to 3V3) and the power (3.3 V)." % b.name())
        devices.scanned = True
        mine = {d.params.get("addr"): d.name for d in t.listed() if d.bus == ("i2c", b.sda, b.scl)}
        return mimi.run("devices.i2cnames", "describe", b.name(), found, mine)


def i2c_io(args, ctx):
    """Write bytes and/or read some, at a register or plain, at an address no device owns."""
    from mimi import limits

    addr, reg, data, n = args.get("addr"), args.get("reg"), args.get("write"), args.get("read")
    if not isinstance(addr, int) or not 0x08 <= addr <= 0x77:
        return "Error: 'addr' must be an I2C address, 0x08 to 0x77 (8 to 119)"
    if reg is not None and (not isinstance(reg, int) or not 0 <= reg <= 255):
        return "Error: 'reg' must be a register number, 0 to 255"
    if data is not None:
        data = _hex(data)
        if data is None or not 1 <= len(data) <= limits.I2C_RAW_MAX:
            return "Error: 'write' must be 1 to %d bytes in hex, e.g. \"01 a0\"" % limits.I2C_RAW_MAX
    if n is not None and (not isinstance(n, int) or not 1 <= n <= limits.I2C_RAW_MAX):
        return "Error: 'read' must be a count of bytes, 1 to %d" % limits.I2C_RAW_MAX
    if data is None and n is None:
        return "Error: give 'write' (hex bytes), 'read' (a count) or both"
    with devices.use() as t:
        try:
            b, used = _bus(t, args)
        except ValueError as e:
            return "Error: %s" % e
        try:
            where = "0x%02x%s on %s" % (addr, "" if reg is None else " register 0x%02x" % reg, b.name())
            for d in t.listed():  # even a register read writes the register's number
                if d.bus == ("i2c", b.sda, b.scl) and d.params.get("addr") == addr:
                    return "Error: 0x%02x on %s is %s (%s): its driver owns it; use device_read / device_set" % (
                        addr, b.name(), d.name, d.type)
            with b.lock:
                i2c = b.i2c
                if data is not None:
                    if reg is None:
                        i2c.writeto(addr, data, n is None)
                    else:
                        i2c.writeto_mem(addr, reg, data)
                got = None
                if n is not None:
                    got = i2c.readfrom(addr, n) if reg is None else i2c.readfrom_mem(addr, reg, n)
        except OSError as e:
            from mimi.devices.drivers.i2cpart import fault, HINT

            return "Error: %s did not answer: %s. Check %s" % (where, fault(e), HINT)
        finally:
            _done(b, used)
    said = []
    if data is not None:
        said.append("wrote %d byte%s" % (len(data), "" if len(data) == 1 else "s"))
    if got is not None:
        said.append("read " + " ".join("%02x" % x for x in got))
    return "OK: %s: %s" % (where, ", ".join(said))


def _hex(text):
    if not isinstance(text, str):
        return None
    w = text.lower().replace("0x", "").replace(",", " ").replace(" ", "")
    try:
        return bytes.fromhex(w) if len(w) % 2 == 0 else None
    except ValueError:
        return None
