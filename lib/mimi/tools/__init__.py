# The tools the model can call (SPEC §10), as data: every LLM request lists them all,
# while a tool's module (files, cron, gpio, search, clock) loads only when the tool is
# called. A row: (name, module under mimi.tools, description, input schema as compact
# JSON). The handler is the function of that module named like the tool:
# handler(args: dict, ctx) -> str. Descriptions are written into requests as they are:
# no '"', '\' or control characters in them (tests/host/test_tool_table.py).
# Literals only, no names or `+` in a row: the compiler makes the whole table one
# constant (in flash on a frozen build), so importing it builds nothing in RAM. A tool
# without arguments has '{"type":"object","properties":{}}' (OpenAI's shape leaves it out).
TOOLS = (
    ("web_search", "search",
     "Search the web for current information (up to 5 results: title, URL, snippet).",
     '{"type":"object","properties":{"query":{"type":"string","description":"The search query"}},'
     '"required":["query"]}'),
    ("get_current_time", "clock",
     "Current date, time, weekday and Unix time in the user's timezone.", '{"type":"object","properties":{}}'),
    ("read_file", "files", "Read a file under /spiffs/.",
     '{"type":"object","properties":{"path":{"type":"string","description":"Absolute path starting with /spiffs/"}},"required":["path"]}'),
    ("write_file", "files", "Create or overwrite a file under /spiffs/.",
     '{"type":"object","properties":{"path":{"type":"string","description":"Absolute path starting with /spiffs/"},"content":{"type":"string","description":'
     '"File content to write"}},"required":["path","content"]}'),
    ("edit_file", "files",
     "Replace the first old_string with new_string in a file under /spiffs/.",
     '{"type":"object","properties":{"path":{"type":"string","description":"Absolute path starting with /spiffs/"},"old_string":{"type":"string","description":'
     '"Text to find"},"new_string":{"type":"string","description":"Replacement text"}},'
     '"required":["path","old_string","new_string"]}'),
    ("list_dir", "files", "List files under /spiffs/, optionally only those starting with prefix.",
     '{"type":"object","properties":{"prefix":{"type":"string","description":'
     '"Optional path prefix filter, e.g. /spiffs/memory/"}}}'),
    ("cron_add", "cron",
     "Schedule a message to yourself: every interval_s seconds, at at_epoch (Unix time: call "
     "get_current_time first) or daily at time HH:MM (local). It runs as a new turn answered "
     "in this chat; deliver=true sends the message as is instead (plain reminders). Check "
     "cron_list first.",
     '{"type":"object","properties":{"name":{"type":"string"},"schedule_type":{"type":"string",'
     '"description":"every, at or daily"},"interval_s":{"type":"integer"},"at_epoch":'
     '{"type":"integer"},"message":{"type":"string","description":"A request to yourself, or '
     'with deliver the text to send"},"channel":{"type":"string"},"chat_id":{"type":"string"},'
     '"time":{"type":"string","description":"HH:MM"},"deliver":{"type":"boolean"}},'
     '"required":["name","schedule_type","message"]}'),
    ("cron_list", "cron", "List the scheduled jobs: ids, schedules, next runs.", '{"type":"object","properties":{}}'),
    ("cron_remove", "cron", "Remove a job by its id (from cron_list).",
     '{"type":"object","properties":{"job_id":{"type":"string","description":'
     '"The 8-character job ID to remove"}},"required":["job_id"]}'),
    ("gpio_write", "gpio",
     "Set an allowed GPIO pin HIGH (1) or LOW (0); it stays an output at that level.",
     '{"type":"object","properties":{"pin":{"type":"integer","description":"GPIO pin number"},"state":{"type":"integer","description":'
     '"1 for HIGH, 0 for LOW"}},"required":["pin","state"]}'),
    ("gpio_read", "gpio", "Read a GPIO pin's level (an output keeps its level).",
     '{"type":"object","properties":{"pin":{"type":"integer","description":"GPIO pin number"}},"required":["pin"]}'),
    ("gpio_read_all", "gpio", "Read every allowed GPIO pin without changing outputs.", '{"type":"object","properties":{}}'),
    # The device tools (SPEC §13), worded tight: every request carries them. Offered only
    # where they can do something (NEEDS); the handlers check what a schema leaves out.
    # i2c_scan's optional sda/scl are named in its words, not as properties: with none
    # attached the three must stay within +600 bytes in the OpenAI shape too (each tool's
    # wrapper there is 27 bytes longer than Anthropic's).
    ("device_list", "devices", "Devices, last readings.", '{"type":"object","properties":{}}'),
    ("device_add", "devices",
     "type: digital_in button analog_in ntc ldr soil ds18b20 dht11 dht22 sht3x aht20 bme280 "
     "bh1750 hcsr04 digital_out relay pwm servo rgb_led buzzer; pin or sda scl addr; log_min: "
     "minutes per log",
     '{"type":"object","properties":{"name":{},"type":{}}}'),
    ("i2c_scan", "i2c", "I2C addresses that answer; sda scl default 8 9.", '{"type":"object"}'),
    ("device_read", "devices", "Read a device.", '{"type":"object","properties":{"name":{}}}'),
    ("device_set", "devices", "Set: on/off, 0-100, angle, colour (red, #ff8000, blue 30%), "
     "tone (440 300).", '{"type":"object","properties":{"name":{},"value":{}}}'),
    ("device_remove", "devices", "Remove a device.", '{"type":"object","properties":{"name":{}}}'),
    ("i2c_io", "i2c", "Raw I2C to a part without a type: write hex, read n bytes, at register reg.",
     '{"type":"object","properties":{"addr":{"type":"integer"},"reg":{},"write":{},"read":{},'
     '"sda":{},"scl":{}}}'),
    # The rules and the history (SPEC §14): offered with devices. rule_add's handler
    # answers a wrong or missing field with what it takes (services/rules/book.py).
    ("device_history", "history", "Logged min/max/mean, hours (24); chart:true sends a chart.",
     '{"type":"object","properties":{"name":{},"hours":{},"chart":{}}}'),
    ("rule_add", "rules", "Board rule: name device when:above|below value hysteresis,"
     "changes,rises,falls,pressed then:set target to otherwise,notify text,ask prompt",
     '{"type":"object"}'),
    ("rule_list", "rules", "Rules and ids.", '{"type":"object","properties":{}}'),
    ("rule_remove", "rules", "Remove a rule.", '{"type":"object","properties":{"id":{}}}'),
)
# Tools a request offers only when mimi.devices.offer() has their bit: 1 devices are
# attached, 2 an I2C scan found parts this boot (PicoClaw #1184: hardware tools cost
# tokens where there is nothing to use them on).
NEEDS = {"device_read": 1, "device_set": 1, "device_remove": 1, "i2c_io": 2, "device_history": 1,
         "rule_add": 1, "rule_list": 1, "rule_remove": 1}

