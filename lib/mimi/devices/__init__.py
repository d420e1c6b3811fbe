# The parts wired to the board: which GPIO pins may be used (pins.py).
