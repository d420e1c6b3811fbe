# The two CRC-8s the simulated parts put on their data (reference/hardware.md §3.0).


def sensirion(data):
    """Sensirion (SHT3x) and ASAIR (AHT20): polynomial 0x31, init 0xFF, MSB first."""
    crc = 0xFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = ((crc << 1) ^ 0x31) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def maxim(data):
    """Maxim 1-Wire (DS18B20 ROM and scratchpad): 0x31 reflected (0x8C), init 0, LSB first."""
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8C if crc & 1 else crc >> 1
    return crc
