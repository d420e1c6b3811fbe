# First thing at boot, when a device file exists (app.main): every actuator of it goes
# to its defined off level (a relay off, its active-low pin HIGH; a PWM or a servo's pin
# low; LEDs dark) before anything else starts, so nothing a person wired switches on by
# itself while the firmware comes up. The same checks as always (the pin policy: a
# hand-edited file is no back door); /drivers/ types are left alone. Run and dropped:
# the table loads again when it is first used.
import sys
import mimi
from mimi import log


def at_boot():
    from mimi.config import cfg
    from mimi.devices import table

    cfg.load()  # gpio_allow and board decide what may be driven
    t = table.get()
    n = 0
    for d in t.listed():
        if d.kind != "out" or d.mod is None or d.err:
            continue
        try:
            t.run(d.driver().off())
            n += 1
        except Exception as e:
            log.exception("devices", "%s: could not set its off level at boot" % d.label(), e)
    if n:
        log.info("devices", "%d actuator%s set to off at boot", n, "" if n == 1 else "s")
    t = d = None
    for m in [m for m in sys.modules if m.startswith("mimi.devices.")]:
        mimi.unload(m)  # the table, its drivers and this: loaded again on first use
