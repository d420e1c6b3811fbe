# ds18x20.DS18X20 (the firmware's frozen micropython-lib module's API) from the
# DS18B20 / DS18S20 / DS1822 datasheets' function commands.
_CONVERT_T = 0x44
_READ_SCRATCHPAD = 0xBE
_WRITE_SCRATCHPAD = 0x4E
_FAMILIES = (0x10, 0x22, 0x28)  # DS18S20, DS1822, DS18B20


class DS18X20:
    def __init__(self, onewire):
        self.ow = onewire
        self.buf = bytearray(9)

    def scan(self):
        return [rom for rom in self.ow.scan() if rom[0] in _FAMILIES]

    def convert_temp(self):
        """Every sensor on the bus starts converting (Skip ROM); it does not wait."""
        self.ow.reset(True)
        self.ow.writebyte(self.ow.SKIP_ROM)
        self.ow.writebyte(_CONVERT_T)

    def read_scratch(self, rom):
        self.ow.reset(True)
        self.ow.select_rom(rom)
        self.ow.writebyte(_READ_SCRATCHPAD)
        self.ow.readinto(self.buf)
        if self.ow.crc8(self.buf):  # the CRC over the 9 bytes, its own included, is 0
            raise Exception("CRC error")
        return self.buf

    def write_scratch(self, rom, buf):
        """TH, TL and the configuration byte (resolution)."""
        self.ow.reset(True)
        self.ow.select_rom(rom)
        self.ow.writebyte(_WRITE_SCRATCHPAD)
        self.ow.write(buf)

    def read_temp(self, rom):
        b = self.read_scratch(rom)
        if rom[0] == 0x10:  # DS18S20: 0.5 °C steps, refined by COUNT_REMAIN / COUNT_PER_C
            t = b[0] >> 1 if not b[1] else (b[0] >> 1) - 128
            return t - 0.25 + (b[7] - b[6]) / b[7]
        t = b[1] << 8 | b[0]
        return (t - 65536 if t & 0x8000 else t) / 16
