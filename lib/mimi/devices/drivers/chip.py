# chip_temp: the ESP32-S3's own die temperature (esp32.mcu_temperature(), whole °C). It
# reads above the room's: the chip warms itself.
from mimi import board
from mimi.devices.table import qty


class Chip:
    def read(self):
        return (qty("", board.mcu_temperature(), "°C"),)


def make(dev):
    return Chip()
