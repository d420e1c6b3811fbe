# A button's pin interrupt handler (devices/drivers/digital.py arms it). It must outlive
# the driver, whose code a short heap drops after each use: the handler is a closure of
# this small module, which the table's drop() keeps once loaded (only a firmware with a
# button loads it). The count is devices/state.py's.
import time
from micropython import const
from mimi.devices import state

_DEBOUNCE_MS = const(50)


def counter(name, active):
    """The handler, on both edges: a press is an edge after 50 ms without one, the pin
    then at its pressed level `active`; an edge within 50 ms of the last one is a bounce.
    (Falling edges alone counted a release's bounces as a press.)"""
    if state.presses is None:
        state.presses = {}
    c = state.presses.setdefault(name, [0, 0])

    def edge(pin):
        now = time.ticks_ms()
        if time.ticks_diff(now, c[1]) >= _DEBOUNCE_MS and pin.value() == active:
            c[0] += 1
            if state.pressed:
                state.pressed(name)
        c[1] = now

    return edge
