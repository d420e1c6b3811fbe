# First thing at boot, when a device file exists (app.main): every actuator in it goes
# to its defined off level before anything else starts, so nothing a person wired
# switches on by itself while the firmware comes up: a relay or output off (HIGH when
# active-low: inverted), a PWM pin at 0 % (HIGH when inverted), a servo's and a buzzer's
# pin low, LEDs dark. Only pins the policy allows (devices/pins.py, gpio_allow): a
# hand-edited file is no back door. It drives the pins itself, with no table or driver
# code; then the table checks every device (and logs what it refuses) and what it found
# is kept (mimi.devices.rows), its code dropped. /drivers/ types are left alone.
from mimi import limits, log
from mimi.devices import pins as gpio_policy

_LEVELS = ("relay", "digital_out", "pwm", "servo", "buzzer")  # one pin: off = inverted


def at_boot():
    from mimi import board
    from mimi.config.settings import cfg
    from mimi.devices import store

    entries = store.read()  # a bad file is moved aside here, at boot, with its log line
    if not entries:
        return
    cfg.load()  # gpio_allow decides what may be driven
    try:
        allow = gpio_policy.parse(cfg.get("gpio_allow"))
    except ValueError:
        return
    done = []
    for e in entries:
        typ, pin = e.get("type"), e.get("pin")
        if typ not in _LEVELS + ("rgb_led",) or isinstance(pin, bool) or not isinstance(pin, int) or \
                pin not in allow or pin in gpio_policy.NEVER or pin in done:
            continue
        inverted = e.get("inverted") is True and typ in ("relay", "digital_out", "pwm")
        try:
            if typ == "rgb_led":
                n = e.get("n", 1)
                if not isinstance(n, int) or not 1 <= n <= limits.RGB_LED_MAX:
                    continue
                board.neopixel(pin, n, bpp=4 if e.get("rgbw") is True else 3).write()  # all dark
            else:
                board.Pin(pin, board.Pin.OUT, value=1 if inverted else 0)
            done.append(pin)
        except Exception as x:  # one part's trouble stops nothing else
            log.exception("devices", "GPIO%d: could not set its off level at boot" % pin, x)
    if done:
        log.info("devices", "off at boot: GPIO%s", ", GPIO".join(str(p) for p in done))
    # the table checked now, while the heap is whole, its rows kept (mimi.devices.rows): the
    # first turn's prompt lists the devices without loading their code in the middle of a
    # turn; the rest goes, devices/state.py too (nothing is in it yet: it loads again
    # when a device is read or driven)
    import mimi
    import mimi.devices as devices

    with devices.use() as t:
        pass
    t.drop()
    mimi.unload("mimi.devices.state")
