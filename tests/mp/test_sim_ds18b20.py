# The simulated DS18B20s against Maxim's datasheet (reference/hardware.md §3.0, 3.6),
# at the 1-Wire level through the host's primitives (board.onewire: reset, time
# slots): presence, ROM commands with the search's bit triplets done here, function
# commands, conversion times by resolution, the power-on scratchpad and its CRC.
import time
from support import raises
from datasheet import maxim_crc as crc8
from mimi import board
from mimi.devices.sim import parts


def read(ow, n):
    return bytes(ow.readbyte() for _ in range(n))


def search(ow, command=0xF0):
    """Every ROM answering a search, by the datasheet's triplets: each device sends a bit
    and its complement, the master writes the direction; 0/0 means devices differ."""
    found = []
    prefixes = [[]]
    while prefixes:
        path = prefixes.pop()
        assert ow.reset()
        ow.writebyte(command)
        bits = []
        for i in range(64):
            b, c = ow.readbit(), ow.readbit()
            if b and c:
                bits = None  # nobody left
                break
            if i < len(path):
                d = path[i]
            elif b != c:
                d = b
            else:  # a fork: take 0 now, come back for 1
                prefixes.append(bits + [1])
                d = 0
            bits.append(d)
            ow.writebit(d)
        if bits is not None:
            found.append(bytes(sum(bits[8 * k + j] << j for j in range(8)) for k in range(8)))
    return sorted(found)


def bus(*temps):
    for t in temps:
        parts.attach("ds18b20", pin=4, temp=t)
    return board.onewire(4)


def test_crc_vectors():
    assert crc8(bytes((0x50, 0x05, 0x4B, 0x46, 0x7F, 0xFF, 0x0C, 0x10))) == 0x1C
    from mimi.devices.sim.crc import maxim

    assert maxim(bytes((0x50, 0x05, 0x4B, 0x46, 0x7F, 0xFF, 0x0C, 0x10))) == 0x1C


def test_presence_read_rom_and_power_on_scratchpad():
    ow = board.onewire(4)
    assert ow.reset() is False  # nothing on the bus
    ow = bus(21.0)
    assert ow.reset() is True
    ow.writebyte(0x33)  # Read ROM: one device only
    rom = read(ow, 8)
    assert rom[0] == 0x28 and crc8(rom) == 0
    assert parts.get("ds18b20@4")["rom"] == "".join("%02x" % b for b in rom)
    ow.writebyte(0xBE)  # after a ROM command: a function command
    pad = read(ow, 9)
    assert pad == bytes((0x50, 0x05, 0x4B, 0x46, 0x7F, 0xFF, 0x0C, 0x10, 0x1C))  # 85 °C
    assert read(ow, 1) == b"\xff"  # past the scratchpad the line stays high


def test_search_finds_every_sensor_and_match_rom_picks_one():
    ow = bus(20.5, -10.25, 99.0)
    roms = search(ow)
    assert len(roms) == 3 and all(r[0] == 0x28 and crc8(r) == 0 for r in roms)
    assert sorted(bytes(r) for r in ow.scan()) == roms  # the host's own onewire.scan agrees
    ow.reset()
    ow.writebyte(0xCC)  # Skip ROM: all convert at once
    ow.writebyte(0x44)
    time.sleep_ms(760)
    temps = {}
    for rom in roms:
        ow.reset()
        ow.writebyte(0x55)
        ow.write(rom)
        ow.writebyte(0xBE)
        pad = read(ow, 9)
        assert crc8(pad) == 0
        raw = pad[0] | pad[1] << 8
        temps[rom] = (raw - 65536 if raw & 0x8000 else raw) / 16
    assert sorted(temps.values()) == [-10.25, 20.5, 99.0]
    # Read ROM with several on the bus: they all answer, the line is the AND of their bits
    ow.reset()
    ow.writebyte(0x33)
    assert read(ow, 8) == bytes(a & b & c for a, b, c in zip(*roms))


def test_conversion_time_by_resolution():
    ow = bus(-0.5)
    for config, ms in ((0x1F, 93.75), (0x3F, 187.5), (0x5F, 375), (0x7F, 750)):
        ow.reset()
        ow.writebyte(0xCC)
        ow.writebyte(0x4E)  # TH, TL, configuration
        ow.write(bytes((0x4B, 0x46, config)))
        ow.reset()
        ow.writebyte(0xCC)
        ow.writebyte(0x44)
        t0 = time.ticks_ms()
        assert ow.readbit() == 0  # converting
        while not ow.readbit():
            pass
        took = time.ticks_diff(time.ticks_ms(), t0)
        assert ms - 2 <= took <= ms + 60, (config, took)
        ow.reset()
        ow.writebyte(0xCC)
        ow.writebyte(0xBE)
        pad = read(ow, 9)
        assert pad[4] == config and crc8(pad) == 0
        raw = pad[0] | pad[1] << 8
        assert raw == 0xFFF8  # -0.5 °C; the undefined low bits of 9-11 bits read 0


def test_resolution_truncates_and_read_before_the_end_gives_the_old_value():
    ow = bus(23.4375)
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0x4E)
    ow.write(b"\x4b\x46\x1f")  # 9 bits: 0.5 °C steps
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0x44)
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0xBE)
    assert read(ow, 2) == b"\x50\x05"  # too early: still 85 °C
    time.sleep_ms(100)
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0xBE)
    pad = read(ow, 9)
    assert (pad[0] | pad[1] << 8) / 16 == 23.0


def test_copy_recall_and_power_supply():
    ow = bus(25)
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0x4E)
    ow.write(b"\x1e\x05\x3f")  # TH 30, TL 5, 10 bits
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0x48)  # Copy to EEPROM: read slots give 0 while it writes (10 ms)
    assert ow.readbit() == 0
    time.sleep_ms(11)
    assert ow.readbit() == 1
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0x4E)
    ow.write(b"\x00\x00\x7f")
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0xB8)  # Recall E2
    assert ow.readbit() == 1
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0xBE)
    assert read(ow, 5)[2:] == b"\x1e\x05\x3f"
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0xB4)
    assert ow.readbit() == 1  # external supply


def test_alarm_search():
    ow = bus(50, 50)
    roms = search(ow)
    ow.reset()
    ow.writebyte(0x55)
    ow.write(roms[0])
    ow.writebyte(0x4E)
    ow.write(b"\x28\x0a\x7f")  # TH 40 °C: 50 °C is an alarm
    ow.reset()
    ow.writebyte(0x55)
    ow.write(roms[1])
    ow.writebyte(0x4E)
    ow.write(b"\x64\x0a\x7f")  # TH 100, TL 10: none
    ow.reset()
    ow.writebyte(0xCC)
    ow.writebyte(0x44)
    time.sleep_ms(760)
    assert search(ow, 0xEC) == [roms[0]]


def test_faults():
    ow = bus(20, 30)
    names = parts.names()
    parts.set(names[1], fault="nack")  # one does not answer: the other still does
    assert len(search(ow)) == 1
    parts.set(names[1], fault=None)
    parts.set(names[0], fault="crc")
    ds = board.ds18x20(4)
    bad = [r for r in ds.scan() if parts.get(names[0])["rom"] == bytes(r).hex()][0]
    assert str(raises(Exception, ds.read_temp, bad)) == "CRC error"
    parts.set(names[0], fault="stuck")  # the line held low: a presence, and all zeros
    assert ow.reset() is True
    assert read(ow, 9) == bytes(9) and ow.scan() == []
    parts.set(names[0], fault=None)
    parts.set(names[1], fault="nack")
    parts.set(names[0], fault="nack")
    assert ow.reset() is False


def test_hosts_ds18x20_driver():
    parts.attach("ds18b20", pin=5, temp=-55)
    parts.attach("ds18b20", pin=5, temp=125, serial=0x0000DEADBEEF)
    assert parts.names() == ["ds18b20@5", "ds18b20@5#2"]
    assert parts.get("ds18b20@5#2")["rom"][:14] == "28efbeadde0000"
    ds = board.ds18x20(5)
    roms = ds.scan()
    assert len(roms) == 2
    assert [ds.read_temp(r) for r in roms] == [85.0, 85.0]
    ds.convert_temp()
    time.sleep_ms(760)
    assert sorted(ds.read_temp(r) for r in roms) == [-55.0, 125.0]
    assert "-55..125" in str(raises(ValueError, parts.set, "ds18b20@5", temp=130))
    parts.detach("ds18b20@5")
    assert len(ds.scan()) == 1
