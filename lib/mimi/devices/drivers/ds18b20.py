# Maxim DS18B20 on a 1-Wire line, through the firmware's own ds18x20/onewire modules
# (board.ds18x20): Convert T to every sensor on the line (Skip ROM), 750 ms at 12 bits,
# then this sensor's scratchpad (Match ROM; the module checks its CRC). Several sensors
# may share one pin: each device keeps its ROM (the first free one found when added).
# The bus's time slots are real time (a scratchpad read ~12 ms of them, one C call a
# byte), so the loop runs the read on a short thread (SLOW): the 750 ms are slept there
# and the slots interleave with the loop a byte at a time.
from micropython import const
from mimi import board
from mimi.devices.table import Fault, qty, listed, lock_of

_CONVERT_MS = const(750)
_POWER_ON_C = 85.0  # the scratchpad's value until a conversion has run
_lines = {}  # pin -> the line's DS18X20 object, while this code is loaded (a pin's sensors share it)
HINT = ("the wiring (DQ to the GPIO, VDD to 3V3, GND), the 4.7 kOhm pull-up from DQ to 3V3 "
        "and the power (VDD wired: parasite power is not supported)")


class DS18B20:
    HINT = HINT
    SLOW = True

    def __init__(self, dev):
        self.dev = dev
        pin = dev.params["pin"]
        self.lock = lock_of("1-wire %d" % pin)  # (the line's: its sensors take turns)
        self.ds = _lines.get(pin) or _lines.setdefault(pin, board.ds18x20(pin))
        rom = dev.params.get("rom")
        self.rom = bytes.fromhex(rom) if rom else None

    def _call(self, fn, *args):
        with self.lock:
            try:
                return fn(*args)
            except Exception as e:  # OneWireError (no presence pulse), CRC error, OSError
                if "CRC" in str(e):
                    raise Fault("data", "CRC mismatch")
                raise Fault("answer", "no presence pulse" if type(e).__name__ == "OneWireError"
                            else str(e) or type(e).__name__)

    def _find(self):
        found = self._call(self.ds.scan)
        taken = [d.params.get("rom") for d in listed() or () if d is not self.dev and
                 d.bus == self.dev.bus]
        for rom in found:
            if bytes(rom).hex() not in taken:
                self.rom = bytes(rom)
                self.dev.params["rom"] = self.rom.hex()
                self.dev.dirty = True
                return
        raise Fault("answer", "no DS18B20 found on the line" if not found else
                    "every DS18B20 on the line (%d) is another device already" % len(found))

    def read(self):
        if self.rom is None:
            self._find()
        first = True
        while True:
            self._call(self.ds.convert_temp)
            yield _CONVERT_MS
            try:
                t = self._call(self.ds.read_temp, self.rom)
            except Fault as e:
                if e.kind == "data" and bytes(self.rom) not in [bytes(r) for r in self._call(self.ds.scan)]:
                    # on a shared line a sensor gone reads as all ones: a CRC error
                    raise Fault("answer", "its ROM %s is not on the line" % self.rom.hex())
                if e.kind != "data" or not first:
                    raise
                first = False
                continue  # a CRC mismatch: measured again once
            if t == _POWER_ON_C and first:  # the sensor lost power since: once more
                first = False
                continue
            break
        if not -55 <= t <= 125:
            raise Fault("range", "%.1f °C, outside the DS18B20's -55 to 125 °C" % t)
        return (qty("", t, "°C"),)


def make(dev):
    return DS18B20(dev)
