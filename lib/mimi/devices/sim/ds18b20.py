# DS18B20 temperature sensors on a 1-Wire bus, from Maxim's datasheet
# (reference/hardware.md §3.6), at the level of time slots: every sensor on the pin
# hears each reset and write slot, and the line is the wired AND of what they all put
# on it in a read slot. ROM commands: Read (0x33), Match (0x55), Skip (0xCC), Search
# (0xF0) and Alarm Search (0xEC) with the bit / complement / direction triplets;
# function commands: Convert T (0x44: 93.75 / 187.5 / 375 / 750 ms at 9-12 bits, read
# slots give 0 until it is done), Read Scratchpad (0xBE: 9 bytes, Maxim CRC-8 last),
# Write Scratchpad (0x4E: TH, TL, configuration), Copy (0x48: 10 ms to the EEPROM),
# Recall E2 (0xB8), Read Power Supply (0xB4: external, 1). Powers up with 85 °C in
# the scratchpad; TH / TL / configuration come from its EEPROM (75, 70, 12 bits).
import binascii
from mimi.board.host_pins import SIM_WIRES
from mimi.devices.sim.crc import maxim
from mimi.devices.sim.parts import PIN, Part

_CONVERT_MS = (93.75, 187.5, 375, 750)  # 9..12 bits
_COPY_MS = 10


class Bus:
    """The 1-Wire line on a pin: its sensors, pulled up when nobody pulls it low."""

    def __init__(self):
        self.devices = []

    def stuck(self):
        for d in self.devices:
            if d.fault == "stuck":
                return True
        return False

    def reset_pulse(self):
        present = self.stuck()  # a line held low looks like a presence pulse
        for d in self.devices:
            present = d.reset() or present
        return present

    def read_slot(self):
        v = 0 if self.stuck() else 1
        for d in self.devices:
            v &= d.read_slot()
        return v

    def write_slot(self, bit):
        if not self.stuck():
            for d in self.devices:
                d.write_slot(bit)

    def drive(self, pin):
        return 0 if self.stuck() else None

    def written(self, pin, level):
        pass

    def analog(self, pin):
        return None


class DS18B20(Part):
    """serial: the 48-bit serial number of its ROM (-1: one made from the pin and its
    place on the bus, different for each)."""

    KEYS = (("pin", PIN), ("temp", 21.0), ("serial", -1))
    VALUES = ("temp",)
    FAULTS = ("nack", "crc", "stuck")

    def __init__(self, type_, params):
        Part.__init__(self, type_, params)
        self.eeprom = bytes((0x4B, 0x46, 0x7F))  # TH 75 °C, TL 70 °C, 12 bits
        self.scratch = bytearray((0x50, 0x05) + tuple(self.eeprom) + (0xFF, 0x0C, 0x10))
        self.alarm = False
        self._state = None  # what the next slots do: None (waiting for a reset), "rom", ...
        self._busy = None  # (kind, ends at ms) of a conversion or copy

    def check(self):
        if not -55 <= self.temp <= 125:
            raise ValueError("ds18b20 measures -55..125 °C")
        if not -1 <= self.serial < 1 << 48:
            raise ValueError("ds18b20: serial is 48 bits")

    def holder(self):
        return "1-Wire %d" % self.pin

    def wire(self):
        bus = SIM_WIRES.get(self.pin)
        if not isinstance(bus, Bus):
            bus = SIM_WIRES[self.pin] = Bus()
        if self.serial < 0:
            self.serial = binascii.crc32(self.name.encode()) << 16 | self.pin << 8 | len(bus.devices)
        rom = bytearray(8)
        rom[0] = 0x28
        for i in range(6):
            rom[1 + i] = self.serial >> (8 * i) & 0xFF
        rom[7] = maxim(rom[:7])
        self.rom = bytes(rom)
        bus.devices.append(self)

    def unwire(self):
        bus = SIM_WIRES.get(self.pin)
        bus.devices.remove(self)
        if not bus.devices:
            del SIM_WIRES[self.pin]

    def _bits(self):
        return 9 + (self.scratch[4] >> 5 & 3)

    def _sync(self):
        if self._busy is None or self.clock() < self._busy[1]:
            return
        if self._busy[0] == "convert":
            shift = 12 - self._bits()  # the undefined low bits of a lower resolution read 0
            raw = (round(self.temp * 16) >> shift << shift) & 0xFFFF
            self.scratch[0], self.scratch[1] = raw & 0xFF, raw >> 8
            whole = (raw - 65536 if raw & 0x8000 else raw) >> 4
            th, tl = (b - 256 if b & 0x80 else b for b in self.scratch[2:4])
            self.alarm = whole >= th or whole <= tl
        else:
            self.eeprom = bytes(self.scratch[2:5])
        self._busy = None

    # The slots, as the bus hands them out.
    def reset(self):
        self._sync()
        if self.fault == "nack":
            self._state = None
            return False
        self._state, self._n, self._acc = "rom", 0, 0
        return True

    def _out(self, data, then):
        self._state, self._queue, self._n, self._then = "out", data, 0, then

    def write_slot(self, bit):
        s = self._state
        if s == "search":
            if self._phase != 2:
                return
            if bit != self._bit(self._n):
                self._state = None  # the master went the other way: out until the next reset
                return
            self._n += 1
            self._phase = 0
            if self._n == 64:
                self._state, self._n, self._acc = "func", 0, 0
            return
        if s == "match":
            if bit != self._bit(self._n):
                self._state = None
            else:
                self._n += 1
                if self._n == 64:
                    self._state, self._n, self._acc = "func", 0, 0
            return
        if s not in ("rom", "func", "write"):
            return
        self._acc |= bit << (self._n & 7)
        self._n += 1
        if self._n & 7:
            return
        byte, self._acc = self._acc, 0
        if s == "rom":
            self._rom_command(byte)
        elif s == "func":
            self._function(byte)
        else:  # write scratchpad: TH, TL, configuration (only R1 R0 are writable)
            i = self._n // 8 - 1
            self.scratch[2 + i] = byte if i < 2 else 0x1F | (byte & 0x60)
            if i == 2:
                self._state = None

    def _bit(self, i):
        return self.rom[i >> 3] >> (i & 7) & 1

    def _rom_command(self, cmd):
        self._n = 0
        if cmd == 0x33:
            self._out(self.rom, "func")
        elif cmd == 0x55:
            self._state = "match"
        elif cmd == 0xCC:
            self._state = "func"
        elif cmd == 0xF0 or (cmd == 0xEC and self.alarm):
            self._state, self._phase = "search", 0
        else:  # an alarm search this sensor is not part of, or no such command
            self._state = None

    def _function(self, cmd):
        self._sync()
        self._state = None
        if cmd == 0x44:
            self._busy = ("convert", self.clock() + _CONVERT_MS[self._bits() - 9])
            self._state = "busy"
        elif cmd == 0xBE:
            pad = bytearray(self.scratch)
            c = maxim(pad)
            pad.append(c ^ 0xFF if self.fault == "crc" else c)
            self._out(pad, None)
        elif cmd == 0x4E:
            self._state, self._n, self._acc = "write", 0, 0
        elif cmd == 0x48:
            self._busy = ("copy", self.clock() + _COPY_MS)
            self._state = "busy"
        elif cmd == 0xB8:
            self.scratch[2:5] = self.eeprom
            self._state = "busy"
        elif cmd == 0xB4:
            self._state = "power"

    def read_slot(self):
        s = self._state
        if s == "search":
            if self._phase == 2:
                return 1
            b = self._bit(self._n) ^ self._phase  # the bit, then its complement
            self._phase += 1
            return b
        if s == "out":
            q = self._queue
            b = q[self._n >> 3] >> (self._n & 7) & 1
            self._n += 1
            if self._n == len(q) * 8:
                self._state, self._n, self._acc = self._then, 0, 0
            return b
        if s == "busy":
            self._sync()
            return 0 if self._busy else 1
        return 1  # "power": external supply; else the line is left to the pull-up

    def state(self):
        self._sync()
        raw = self.scratch[1] << 8 | self.scratch[0]
        out = Part.state(self)
        out.update(rom="".join("%02x" % b for b in self.rom), bits=self._bits(),
                   reads=(raw - 65536 if raw & 0x8000 else raw) / 16, alarm=self.alarm)
        return out


TYPES = {"ds18b20": DS18B20}
