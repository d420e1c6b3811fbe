"""The tool table (lib/mimi/tools/__init__.py): what every LLM request lists."""
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lib"))

from mimi.tools import TABLE, NEEDS  # noqa: E402  (plain data: CPython reads it as well)

TOOLS = [tuple(row.split("\t")) for row in b"".join(TABLE).decode().split("\n")[1:]]  # (name, module, description, schema)

# SPEC §10: names and input schemas as MimiClaw's (+ this firmware's cron extensions)
SPEC = {
    "web_search": ["query"], "get_current_time": [], "read_file": ["path"],
    "write_file": ["path", "content"], "edit_file": ["path", "old_string", "new_string"],
    "list_dir": ["prefix"],
    "cron_add": ["name", "schedule_type", "interval_s", "at_epoch", "message", "channel",
                 "chat_id", "time", "deliver"],
    "cron_list": [], "cron_remove": ["job_id"],
    "gpio_write": ["pin", "state"], "gpio_read": ["pin"], "gpio_read_all": [],
    # SPEC §13 (device_add takes each type's parameters besides these; i2c_scan's optional
    # sda/scl are in its description, for the bytes; i2c_io is ours)
    "device_list": [], "device_add": ["name", "type"], "i2c_scan": [],
    "device_read": ["name"], "device_set": ["name", "value"], "device_remove": ["name"],
    "i2c_io": ["addr", "reg", "write", "read", "sda", "scl"],
    # SPEC §14: rule_add's fields are in its description (the bytes); its handler names
    # them when one is wrong or missing
    "device_history": ["name", "hours", "chart"], "rule_add": [], "rule_list": [], "rule_remove": ["id"],
}


def test_the_table_is_whole_rows_in_small_blocks():
    """A .mpy loads each of TABLE's constants as one block, and a short heap loads them
    again mid-turn for a tool's call (tools/registry.py): none may need 1 KB in one piece."""
    assert isinstance(TABLE, tuple) and len(TABLE) > 1
    for chunk in TABLE:
        assert isinstance(chunk, bytes) and chunk.startswith(b"\n") and len(chunk) < 1024, chunk[:40]


def test_names_and_schemas_are_the_specs():
    assert [t[0] for t in TOOLS] == list(SPEC)
    for name, module, desc, schema in TOOLS:
        s = json.loads(schema)
        assert s["type"] == "object" and list(s.get("properties", ())) == SPEC[name], name
        assert all(r in s["properties"] for r in s.get("required", [])), name
        assert json.dumps(s, separators=(",", ":")) == schema, name  # compact, as sent


def test_descriptions_are_written_into_requests_as_they_are():
    for name, _, desc, _ in TOOLS:
        assert desc and json.dumps(desc) == '"%s"' % desc, name  # nothing to escape
        assert all(32 <= ord(c) < 127 for c in desc), name


def test_every_tool_has_its_handler():
    for name, module, _, _ in TOOLS:
        tree = ast.parse((ROOT / "lib/mimi/tools" / (module + ".py")).read_text())
        assert name in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, name


def _size(rows):
    return sum(len('{"name":"%s","description":"%s","input_schema":%s},' % (n, d, s)) for n, _, d, s in rows)


NONE = '{"type":"object","properties":{}}'  # a tool without arguments: OpenAI's shape leaves it out


def _size_openai(rows):
    return sum(len('{"type":"function","function":{"name":"%s","description":"%s"}},' % (n, d) if s == NONE else
                   '{"type":"function","function":{"name":"%s","description":"%s","parameters":%s}},' % (n, d, s))
               for n, _, d, s in rows)


def _offered(have):
    return [t for t in TOOLS if not NEEDS.get(t[0]) or NEEDS[t[0]] & have]


def test_request_bytes_of_the_table():
    # what the tools cost in every request, Anthropic's shape; was 4.7-5 KB
    size = _size(_offered(0))
    assert size < 3500 + 600, size


BODY = ("devices", "devedit", "i2c", "history", "rules")  # the modules of the tools of SPEC §13 and §14


# The tool table's bytes in each shape when issue 23 was filed (its budgets are over these)
BEFORE_DEVICES, BEFORE_DEVICES_OPENAI = 3455, 3803


def test_device_tools_cost_little():
    # issue 23: with no device at most +600 bytes a request; all device, history and rule
    # tools at most +1.6 KB (issues 23 and 24); i2c_io only after a scan found parts
    assert set(NEEDS) <= {t[0] for t in TOOLS} and all(t[1] in BODY for t in TOOLS if t[0] in NEEDS)
    base = _size([t for t in TOOLS if t[1] not in BODY])
    assert _size(_offered(0)) - base <= 600
    assert _size(_offered(1)) - base <= 1600
    assert _size(_offered(3)) - base <= 1600 + 240
    for size, before in ((_size, BEFORE_DEVICES), (_size_openai, BEFORE_DEVICES_OPENAI)):
        assert size(_offered(0)) - before <= 600, size
        assert size(_offered(1)) - before <= 1600, size
