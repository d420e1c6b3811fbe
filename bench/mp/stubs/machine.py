# What board/esp32.py and esp32_io.py take from the ESP32's machine module at import,
# for bench/mp/hostshare.py to load them on the host (their heap, not their behaviour).
class Pin:
    pass


class WDT:
    pass


class RTC:
    pass


class I2C:
    pass


class ADC:
    ATTN_0DB = 0
    ATTN_2_5DB = 1
    ATTN_6DB = 2
    ATTN_11DB = 3


def time_pulse_us():
    pass


def bitstream():
    pass
