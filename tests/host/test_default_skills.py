"""The four default skills: SPEC §4 shape, and facts that match the tools."""
import re

import pytest

from conftest import ROOT

SKILLS = ROOT / "spiffs_data" / "skills"
NAMES = ("daily-briefing", "gpio-control", "skill-creator", "weather")


@pytest.mark.parametrize("name", NAMES)
def test_shape(name):
    text = (SKILLS / (name + ".md")).read_text()
    lines = text.split("\n")
    assert lines[0].startswith("# ") and lines[0][2:].strip()
    assert lines[1] == ""
    assert lines[2].strip() and not lines[2].startswith("#")  # the description paragraph
    heads = [ln for ln in lines if ln.startswith("## ")]
    assert heads == ["## When to use", "## How to use", "## Example"]
    assert len(text.encode()) < 2500


def test_gpio_skill_matches_pin_policy():
    text = (SKILLS / "gpio-control.md").read_text()
    policy = (ROOT / "lib" / "mimi" / "devices" / "pins.py").read_text()
    default = re.search(r'DEFAULT = "([^"]+)"', policy).group(1)
    assert default == "1,2,4-18,21,38-42,47,48"
    assert "default 1, 2, 4-18, 21, 38-42, 47, 48" in text
    for pins in ("0, 3, 45, 46", "19 and 20", "26-32", "33-37", "43, 44"):
        assert pins in text
    assert "does not change it" in text  # read-after-write keeps the output


def test_daily_form_documented():
    for name in ("daily-briefing", "weather"):
        text = (SKILLS / (name + ".md")).read_text()
        assert 'schedule_type "daily"' in text and '"HH:MM"' in text


def test_skill_creator_states_the_summary_cap():
    limits = (ROOT / "lib" / "mimi" / "limits.py").read_text()
    cap = int(re.search(r"SKILL_DESC_MAX = const\((\d+)\)", limits).group(1))
    assert "first %d characters" % cap in (SKILLS / "skill-creator.md").read_text()
