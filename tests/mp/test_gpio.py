# GPIO tools: pin policy, MimiClaw's strings, read-after-write keeps the output.
from support import raises
from mimi import board
from mimi.config.settings import cfg
from mimi.devices import pins as gpio_policy, gpio as gpio_pins
from mimi.tools import gpio
from mimi.tools.registry import registry


def setup():
    cfg.load()
    gpio_pins.forget()
    board.SIM_PINS.clear()


def call(name, **args):
    return registry.call(name, args)


def test_write_and_read_strings():
    assert call("gpio_write", pin=5, state=1) == "Pin 5 set to HIGH"
    assert call("gpio_read", pin=5) == "Pin 5 = HIGH"
    assert call("gpio_write", pin=5, state=0) == "Pin 5 set to LOW"
    assert call("gpio_read", pin=5) == "Pin 5 = LOW"
    assert call("gpio_write", pin=6, state=7) == "Pin 6 set to HIGH"  # non-zero is HIGH


def test_read_after_write_keeps_output_level_and_direction():
    call("gpio_write", pin=4, state=1)
    assert board.SIM_PINS[4]["mode"] == board.Pin.OUT
    for _ in range(3):
        assert call("gpio_read", pin=4) == "Pin 4 = HIGH"
    out = call("gpio_read_all")
    assert "4=HIGH" in out
    assert board.SIM_PINS[4] == {"mode": board.Pin.OUT, "level": 1, "pull": None}
    assert gpio_pins.mode(4) == gpio_pins.OUT
    # an outside signal on an output pin does not matter: the level is ours
    call("gpio_write", pin=4, state=0)
    assert call("gpio_read", pin=4) == "Pin 4 = LOW"
    assert board.SIM_PINS[4]["mode"] == board.Pin.OUT


def test_read_input_follows_outside_signal():
    board.sim_drive(7, 1)
    assert call("gpio_read", pin=7) == "Pin 7 = HIGH"
    board.sim_drive(7, 0)
    assert call("gpio_read", pin=7) == "Pin 7 = LOW"
    assert board.SIM_PINS[7]["mode"] == board.Pin.IN
    # an input later written becomes an output
    assert call("gpio_write", pin=7, state=1) == "Pin 7 set to HIGH"
    assert board.SIM_PINS[7]["mode"] == board.Pin.OUT


def test_read_all_lists_only_allowed_pins():
    cfg.set("gpio_allow", "2,5-6")
    board.sim_drive(2, 1)
    call("gpio_write", pin=6, state=1)
    assert call("gpio_read_all") == "GPIO states: 2=HIGH, 5=LOW, 6=HIGH"
    assert set(board.SIM_PINS) == {2, 5, 6}
    cfg.set("gpio_allow", "")
    assert call("gpio_read_all").startswith("Error: no GPIO pins are allowed")


def test_default_allow_list_reads_no_forbidden_pin():
    out = call("gpio_read_all")
    assert out.startswith("GPIO states: 1=LOW, 2=LOW, 4=LOW")
    pins = [int(x.split("=")[0]) for x in out[len("GPIO states: "):].split(", ")]
    assert pins == [1, 2] + list(range(4, 19)) + [21, 38, 39, 40, 41, 42, 47, 48]
    for p in pins:
        assert p not in gpio_policy.NEVER


def test_policy_refuses_pins():
    assert call("gpio_write", pin=40, state=1) == "Pin 40 set to HIGH"
    cfg.set("gpio_allow", "4-6")
    assert call("gpio_write", pin=40, state=1) == "Error: pin 40 is not in allowed list"
    assert call("gpio_read", pin=3) == "Error: pin 3 is not in allowed list (strapping pin (JTAG signal source))"
    for p in (0, 3, 19, 20, 26, 32, 33, 37, 43, 44, 45, 46, 99, -1):
        assert call("gpio_write", pin=p, state=1).startswith("Error: pin %d is not in allowed list" % p)
        assert call("gpio_read", pin=p).startswith("Error: pin %d is not in allowed list" % p)
    assert "USB" in call("gpio_read", pin=19)
    assert 0 not in board.SIM_PINS and 19 not in board.SIM_PINS


def test_bad_arguments():
    assert call("gpio_write", state=1) == "Error: 'pin' required (integer)"
    assert call("gpio_write", pin=5).startswith("Error: 'state' required")
    assert call("gpio_read", pin="5").startswith("Error: 'pin' must be an integer")
    assert gpio.gpio_write({"pin": 5, "state": "on"}, None) == "Error: 'state' required (0 or 1)"
    assert gpio.gpio_read({"pin": True}, None) == "Error: 'pin' required (integer)"


def test_setting_validation():
    for bad, word in (("0", "strapping"), ("19", "USB"), ("21-23", "GPIO22 does not exist"),
                      ("43", "console"), ("35", "PSRAM"), ("28", "flash"), ("x", "numbers"),
                      ("9-4", "range")):
        e = raises(ValueError, cfg.set, "gpio_allow", bad)
        assert word in str(e), (bad, str(e))
    cfg.set("gpio_allow", " 8, 4-6 ,8,48")
    assert cfg.get("gpio_allow") == "4,5,6,8,48"
    assert gpio_pins.allowed() == (4, 5, 6, 8, 48)
    cfg.load()  # persisted
    assert cfg.get("gpio_allow") == "4,5,6,8,48"


def test_schemas_match_mimiclaw():
    assert registry.schema("gpio_write") == {
        "type": "object",
        "properties": {"pin": {"type": "integer", "description": "GPIO pin number"},
                       "state": {"type": "integer", "description": "1 for HIGH, 0 for LOW"}},
        "required": ["pin", "state"]}
    assert registry.schema("gpio_read")["required"] == ["pin"]
    assert registry.schema("gpio_read_all") == {"type": "object", "properties": {}}
