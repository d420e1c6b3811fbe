# What the device layer keeps while its code comes and goes. On a heap that is short
# (mimi.short(): a board without PSRAM) the table and the drivers are dropped when the
# last user leaves (`with devices.use() as t:`, devices/table.py's Use and drop()), like
# the tools' modules, and loaded again from the flash by the next; what must outlive
# them lives here: the drivers' state (an actuator's value, a sensor's last measurement
# time, a found ROM...), the last readings (the ## Devices part of the prompt is made
# from them and the rows without the table: devices/lines.py), the I2C controllers'
# pins, a button's presses (its pin interrupt's handler is devices/button.py,
# kept once a button is armed). The checked rows themselves are the package's
# (mimi.devices.rows, read by devices/lines.py and the table), so this module loads only
# when a device is used: the boot pass (devices/outputs.py) drops it. With the rules'
# loop running it stays, as any use of a device keeps it: data only, no code (each
# function here would be resident for good; the code that uses these is the table's,
# loaded with it).
import _thread

lock = _thread.allocate_lock()  # users, and loading/dropping the code
users = 0
mem = {}  # device name -> its driver's state (a dict)
last = {}  # device name -> its last reading: bytes, its ticks_ms (4, little-endian) then its text (devices/table.py done())
i2c_ids = {}  # sda << 8 | scl -> the I2C controller (0 or 1) those pins have (an int key: a tuple took 16 B)
presses = None  # button name -> [presses since the last reading, ticks of the last edge]: a dict from the first button armed
pressed = None  # fn(name) told of each press as it happens (the rules' `pressed`: devices.changed), or None
