# onewire.OneWire (the firmware's frozen micropython-lib module's API) from the
# 1-Wire spec: ROM commands and the ROM search of Maxim's application note 187.
from mimi.board.hostlib import _onewire as _ow


class OneWireError(Exception):
    pass


class OneWire:
    SEARCH_ROM = 0xF0
    MATCH_ROM = 0x55
    SKIP_ROM = 0xCC

    def __init__(self, pin):
        self.pin = pin
        pin.init(pin.OPEN_DRAIN, pin.PULL_UP)

    def reset(self, required=False):
        present = _ow.reset(self.pin)
        if required and not present:
            raise OneWireError
        return present

    def readbit(self):
        return _ow.readbit(self.pin)

    def readbyte(self):
        return _ow.readbyte(self.pin)

    def readinto(self, buf):
        for i in range(len(buf)):
            buf[i] = _ow.readbyte(self.pin)

    def writebit(self, value):
        _ow.writebit(self.pin, value)

    def writebyte(self, value):
        _ow.writebyte(self.pin, value)

    def write(self, buf):
        for b in buf:
            _ow.writebyte(self.pin, b)

    def select_rom(self, rom):
        self.reset()
        self.writebyte(self.MATCH_ROM)
        self.write(rom)

    def crc8(self, data):
        return _ow.crc8(data)

    def scan(self):
        """Every ROM on the bus. Each pass walks the 64 ROM bits: where devices differ
        (the bit and its complement both read 0) it takes 0 until the last such place
        of the previous pass, 1 there; the last place it took 0 is where the next pass
        turns. A ROM with a bad CRC (or all zeros: a line held low) ends the search."""
        roms = []
        turn = -1
        rom = bytearray(8)
        while True:
            if not self.reset():
                return roms
            self.writebyte(self.SEARCH_ROM)
            last_zero = -1
            for i in range(64):
                bit, comp = self.readbit(), self.readbit()
                if bit and comp:  # nobody answered
                    return roms
                if bit == comp:
                    if i < turn:
                        bit = rom[i >> 3] >> (i & 7) & 1
                    else:
                        bit = 1 if i == turn else 0
                    if not bit:
                        last_zero = i
                if bit:
                    rom[i >> 3] |= 1 << (i & 7)
                else:
                    rom[i >> 3] &= ~(1 << (i & 7))
                self.writebit(bit)
            if rom[0] == 0 or _ow.crc8(rom):
                return roms
            roms.append(bytearray(rom))
            turn = last_zero
            if turn < 0:
                return roms
