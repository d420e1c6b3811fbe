# Skills: titles and non-empty descriptions, sorted summary within its cap, new
# skills showing up next turn, list/show/search helpers.
from support import write
from mimi import limits
from mimi.memory import skills
from mimi.tools.registry import registry
import mimi.tools.files  # noqa: F401  (registers write_file)

WEATHER = """# Weather

Get the current weather and forecast for a city
using web_search.

## When to use
When the user asks about weather.

## How to use
1. get_current_time
"""


def test_parse_description_after_blank_line():
    assert skills.parse(WEATHER) == (
        "Weather", "Get the current weather and forecast for a city using web_search.")
    assert skills.parse("# T\nright away\n\n## x") == ("T", "right away")
    assert skills.parse("# T\n\n## When to use\nx") == ("T", "")
    assert skills.parse("no title here\n\nmore", "fb") == ("fb", "no title here")
    assert skills.parse("", "fb") == ("fb", "")
    t, d = skills.parse("# " + "T" * 200 + "\n\n" + "d" * 1000)
    assert len(t) == limits.SKILL_TITLE_MAX and len(d) == limits.SKILL_DESC_MAX and d.endswith("...")


def test_shipped_skills_have_descriptions():
    import os
    import support

    src = support.REPO + "/spiffs_data/skills"
    try:
        names = [n for n in os.listdir(src) if n.endswith(".md")]
    except OSError:
        names = []
    if not names:
        support.skip("no shipped skills yet")
    for n in names:
        with open(src + "/" + n) as f:
            title, desc = skills.parse(f.read())
        assert title and desc, n


def test_summary_sorted_and_shaped():
    write("/spiffs/skills/weather.md", WEATHER)
    write("/spiffs/skills/alpha.md", "# Alpha\n\nFirst skill.\n")
    write("/spiffs/skills/notes.txt", "not a skill")
    s = skills.summary()
    assert s == ("- **Alpha**: First skill. (read_file /spiffs/skills/alpha.md)\n"
                 "- **Weather**: Get the current weather and forecast for a city using web_search. "
                 "(read_file /spiffs/skills/weather.md)\n")


def test_summary_capped():
    for i in range(40):
        write("/spiffs/skills/s%02d.md" % i, "# Skill number %d\n\n%s\n" % (i, "ü" * 200))
    s = skills.summary()
    assert len(s.encode()) <= limits.SKILLS_MAX
    assert s.split("\n")[-2].startswith("- ... ")
    assert "- **Skill number 0**" in s


def test_new_skill_appears_next_turn():
    write("/spiffs/skills/weather.md", WEATHER)
    assert "Haiku" not in skills.summary()
    r = registry.call("write_file", {"path": "/spiffs/skills/haiku.md",
                                     "content": "# Haiku\n\nWrite a haiku about the topic.\n\n## When to use\n..."})
    assert r.startswith("OK:")
    assert "- **Haiku**: Write a haiku about the topic. (read_file /spiffs/skills/haiku.md)" in skills.summary()
    from mimi.agent import context

    assert "Write a haiku about the topic." in context.build_system_prompt("websocket", "x")


def test_list_show_search():
    write("/spiffs/skills/weather.md", WEATHER)
    write("/spiffs/skills/gpio-control.md", "# GPIO Control\n\nSwitch pins.\n\n## Example\nTurn on the RELAY\n")
    assert skills.skill_list() == [
        ("gpio-control", "GPIO Control", "Switch pins."),
        ("weather", "Weather", "Get the current weather and forecast for a city using web_search.")]
    assert skills.skill_show("weather") == WEATHER
    assert skills.skill_show("weather.md") == WEATHER
    assert skills.skill_show("nope") is None
    assert skills.skill_show("../config/SOUL") is None
    assert skills.skill_search("relay") == [("gpio-control", "Turn on the RELAY")]
    assert skills.skill_search("GPIO") == [("gpio-control", "# GPIO Control")]
    assert skills.skill_search("forecast") == [("weather", "Get the current weather and forecast for a city")]
    assert skills.skill_search("zzz") == []
    assert skills.skill_list() and skills.names() == ["gpio-control.md", "weather.md"]


def test_no_skills_dir():
    assert skills.summary() == "" and skills.skill_list() == [] and skills.skill_search("x") == []


def test_repl_skill_commands():
    from support import Capture
    from mimi import repl

    write("/spiffs/skills/weather.md", WEATHER)
    with Capture() as c:
        repl.skill_list()
        repl.skill_show("weather")
        repl.skill_show("nope")
        repl.skill_search("forecast")
        repl.skill_search("zzz")
    t = c.text
    assert "weather" in t and "Weather: Get the current weather" in t
    assert "## How to use" in t and "no skill 'nope'" in t
    assert "no skill matches 'zzz'" in t


def test_shipped_skill_examples_match_the_tools():
    # Every `tool {json}` a shipped skill shows is a valid call of the real tool (no
    # argument the schema lacks), and a shown `-> "result"` is what the tool answers.
    import os
    import json
    import support
    from mimi import board
    from mimi.config.settings import cfg
    from mimi.tools.registry import Ctx, registry as reg

    cfg.load()
    board.set_unix(1800000000)
    src = support.REPO + "/spiffs_data/skills"
    seen = []
    for n in sorted(os.listdir(src)):
        with open(src + "/" + n) as f:
            text = f.read()
        i = text.find(" {")
        while i >= 0:
            name = text[:i].replace("\n", " ").rsplit(" ", 1)[-1]
            b = text.index("}", i) + 1
            if name in reg.names():
                args = json.loads(text[i + 1:b].replace(": N", ": 5"))  # "pin": N
                props = reg.schema(name)["properties"]
                for k in args:
                    assert k in props, (n, name, k)
                got = reg.call(name, args, Ctx("websocket", "w1"))
                if name == "web_search":  # no key in this test: the arguments were accepted
                    assert got.startswith("Error: No search API key"), got
                else:
                    assert not got.startswith("Error"), (n, name, got)
                if text[b:].startswith(' -> "'):
                    want = text[b + 5:text.index('"', b + 5)]
                    assert got == want, (n, name, got, want)
                seen.append(name)
            i = text.find(" {", b)
    assert sorted(set(seen)) == ["cron_add", "gpio_read", "gpio_write", "web_search"], seen
