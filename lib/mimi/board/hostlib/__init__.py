# The host's own onewire, ds18x20, dht and neopixel: the micropython-lib drivers the
# board's firmware freezes, written again here from the 1-Wire, DHT and WS2812 specs
# with the same API, on the host's simulated primitives (_onewire here, bitstream in
# board/host_io.py, dht_readinto in board/host_signals.py). tests/mp/test_sim_mplib.py
# runs the real micropython-lib modules on the same primitives.
