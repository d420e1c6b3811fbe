# A driver whose read blocks inside one call (SLOW: DHT, HC-SR04, a /drivers/ type that
# says so), read for the asyncio loop on a short thread of its own: loaded for such a
# read only (devices/table.py aread), and dropped with the device layer's code.
import _thread
from mimi import limits
from mimi.devices.table import run


async def threaded(fn, *args):
    """fn(*args) with its waits slept on a short thread; the loop polls for the result."""
    import asyncio

    box = []

    def work():
        try:
            box.append((True, run(fn(*args))))
        except BaseException as e:
            box.append((False, e))

    try:
        _thread.stack_size(limits.DEVICE_STACK)
        _thread.start_new_thread(work, ())
    finally:
        _thread.stack_size(0)
    while not box:
        await asyncio.sleep_ms(10)
    ok, v = box[0]
    if not ok:
        raise v
    return v
