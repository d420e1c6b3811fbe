# The tools the model can call (SPEC §10), as data: every LLM request lists them all,
# while a tool's module (files, cron, gpio, search, clock) loads only when the tool is
# called. A row: "\n" name, module under mimi.tools, description, input schema as
# compact JSON, tab-separated. The handler is the function of that module named like
# the tool: handler(args: dict, ctx) -> str. Descriptions are written into requests as
# they are: no '"', '\', tab or control characters in them (tests/host/test_tool_table.py).
# A few bytes constants of whole rows (each under 1 KB), literals only (no names or
# `+`): a .mpy loads each as one object (its ~90 strings as a tuple of str objects cost
# ~3 KB of heap over their text), and on a short heap it loads the table again mid-turn
# for a tool's call (tools/registry.py release()), where one 4.3 KB block was not to be
# had; a frozen build keeps them in flash; a request's parts are views of them.
# A tool without arguments has '{"type":"object","properties":{}}' (OpenAI's shape leaves it out).
TABLE = (
    b"\nweb_search\tsearch\tSearch the web for current information (up to 5 results: title, URL, snippet).\t"
    b'{"type":"object","properties":{"query":{"type":"string","description":"The search query"}},'
    b'"required":["query"]}'
    b"\nget_current_time\tclock\tCurrent date, time, weekday and Unix time in the user's timezone.\t"
    b'{"type":"object","properties":{}}'
    b"\nread_file\tread\tRead a file under /spiffs/.\t"
    b'{"type":"object","properties":{"path":{"type":"string","description":"Absolute path starting with '
    b'/spiffs/"}},"required":["path"]}'
    b"\nwrite_file\tfiles\tCreate or overwrite a file under /spiffs/.\t"
    b'{"type":"object","properties":{"path":{"type":"string","description":"Absolute path starting with '
    b'/spiffs/"},"content":{"type":"string","description":"File content to write"}},"required":["path","content"]}',
    b"\nedit_file\tfiles\tReplace the first old_string with new_string in a file under /spiffs/.\t"
    b'{"type":"object","properties":{"path":{"type":"string","description":"Absolute path starting with '
    b'/spiffs/"},"old_string":{"type":"string","description":"Text to find"},"new_string":{"type":"string",'
    b'"description":"Replacement text"}},"required":["path","old_string","new_string"]}'
    b"\nlist_dir\tfiles\tList files under /spiffs/, optionally only those starting with prefix.\t"
    b'{"type":"object","properties":{"prefix":{"type":"string","description":"Optional path prefix filter, e.g. '
    b'/spiffs/memory/"}}}',
    b"\ncron_add\tcron\tSchedule a message to yourself: every interval_s seconds, at at_epoch (Unix time: call "
    b"get_current_time first) or daily at time HH:MM (local). It runs as a new turn answered in this chat; "
    b"deliver=true sends the message as is instead (plain reminders). Check cron_list first.\t"
    b'{"type":"object","properties":{"name":{"type":"string"},"schedule_type":{"type":"string",'
    b'"description":"every, at or daily"},"interval_s":{"type":"integer"},"at_epoch":{"type":"integer"},'
    b'"message":{"type":"string","description":"A request to yourself, or with deliver the text to send"},'
    b'"channel":{"type":"string"},"chat_id":{"type":"string"},"time":{"type":"string","description":"HH:MM"},'
    b'"deliver":{"type":"boolean"}},"required":["name","schedule_type","message"]}'
    b"\ncron_list\tcron\tList the scheduled jobs: ids, schedules, next runs.\t"
    b'{"type":"object","properties":{}}',
    b"\ncron_remove\tcron\tRemove a job by its id (from cron_list).\t"
    b'{"type":"object","properties":{"job_id":{"type":"string","description":"The 8-character job ID to remove"}},'
    b'"required":["job_id"]}'
    b"\ngpio_write\tgpio\tSet an allowed GPIO pin HIGH (1) or LOW (0); it stays an output at that level.\t"
    b'{"type":"object","properties":{"pin":{"type":"integer","description":"GPIO pin number"},'
    b'"state":{"type":"integer","description":"1 for HIGH, 0 for LOW"}},"required":["pin","state"]}'
    b"\ngpio_read\tgpio\tRead a GPIO pin's level (an output keeps its level).\t"
    b'{"type":"object","properties":{"pin":{"type":"integer","description":"GPIO pin number"}},"required":["pin"]}'
    b"\ngpio_read_all\tgpio\tRead every allowed GPIO pin without changing outputs.\t"
    b'{"type":"object","properties":{}}'
    # The device tools (SPEC §13), worded tight: every request carries them. Offered only
    # where they can do something (NEEDS); the handlers check what a schema leaves out.
    # i2c_scan's optional sda/scl are named in its words, not as properties: with none
    # attached the three must stay within +600 bytes in the OpenAI shape too (each tool's
    # wrapper there is 27 bytes longer than Anthropic's).
    b"\ndevice_list\tdevedit\tDevices, last readings.\t"
    b'{"type":"object","properties":{}}',
    b"\ndevice_add\tdevedit\ttype: digital_in button analog_in ntc ldr soil ds18b20 dht11 dht22 sht3x aht20 bme280 "
    b"bh1750 hcsr04 digital_out relay pwm servo rgb_led buzzer; pin or sda scl addr; log_min: minutes per log\t"
    b'{"type":"object","properties":{"name":{},"type":{}}}'
    b"\ni2c_scan\ti2c\tI2C addresses that answer; sda scl default 8 9.\t"
    b'{"type":"object"}'
    b"\ndevice_read\tdevices\tRead a device.\t"
    b'{"type":"object","properties":{"name":{}}}'
    b"\ndevice_set\tdevices\tSet: on/off, 0-100, angle, colour (red, #ff8000, blue 30%), tone (440 300).\t"
    b'{"type":"object","properties":{"name":{},"value":{}}}'
    b"\ndevice_remove\tdevedit\tRemove a device.\t"
    b'{"type":"object","properties":{"name":{}}}'
    b"\ni2c_io\ti2c\tRaw I2C to a part without a type: write hex, read n bytes, at register reg.\t"
    b'{"type":"object","properties":{"addr":{"type":"integer"},"reg":{},"write":{},"read":{},"sda":{},"scl":{}}}',
    # The rules and the history (SPEC §14): offered with devices. rule_add's handler
    # answers a wrong or missing field with what it takes (services/rules/book.py).
    b"\ndevice_history\thistory\tLogged min/max/mean, hours (24); chart:true sends a chart.\t"
    b'{"type":"object","properties":{"name":{},"hours":{},"chart":{}}}'
    b"\nrule_add\trules\tBoard rule: name device when:above|below value hysteresis,changes,rises,falls,pressed "
    b"then:set target to otherwise,notify text,ask prompt\t"
    b'{"type":"object"}'
    b"\nrule_list\trules\tRules and ids.\t"
    b'{"type":"object","properties":{}}'
    b"\nrule_remove\trules\tRemove a rule.\t"
    b'{"type":"object","properties":{"id":{}}}'
)
# Tools a request offers only when mimi.devices.offer() has their bit: 1 devices are
# attached, 2 an I2C scan found parts this boot (PicoClaw #1184: hardware tools cost
# tokens where there is nothing to use them on).
NEEDS = {"device_read": 1, "device_set": 1, "device_remove": 1, "i2c_io": 2, "device_history": 1,
         "rule_add": 1, "rule_list": 1, "rule_remove": 1}

