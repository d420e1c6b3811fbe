# device_history's answer and the chat page's chart data (services/history/summary.py)
# after simulated hours: a clock that stands still (on the ESP32's 2000 epoch) is moved
# by board.clock.skew, never waited for.
import json
from support import FakeTime
from mimi import board
from mimi.board.clock import Clock

FS_BLOCKS = 256
T0 = 1767225600  # 2026-01-01 00:00 UTC, a Thursday


def night():
    """A night of readings every 5 minutes from 18:00 UTC: 21 degrees falling by 0.1 a
    reading to its coldest at 03:40 (116 readings: 9.5), then rising again until 09:00;
    humidity beside it."""
    from mimi.services.history import store

    start = T0 - 6 * 3600
    vals = []
    board.clock = Clock(FakeTime(2000, start))  # the board's epoch; it moves by skew only
    for i in range(181):
        v = round(21 - 0.1 * i, 1) if i <= 116 else round(9.4 + 0.1 * (i - 116), 1)
        vals.append(v)
        assert store.add("bedroom", v, 50 + i % 7) is None
        board.clock.skew += 300
    return start, vals


def test_how_cold_did_it_get_last_night():
    from mimi.services.history import summary

    start, vals = night()
    now = board.clock.unix()  # 09:05
    sm = summary.summary("bedroom", 24)
    assert sm["count"] == 181 and sm["to"] == now and sm["from"] == now - 86400
    assert abs(sm["min"] - 9.4) < 1e-5 and sm["min_t"] == start + 116 * 300  # 03:40
    assert abs(sm["max"] - 21) < 1e-5 and sm["max_t"] == start
    assert abs(sm["mean"] - sum(vals) / len(vals)) < 1e-3
    assert abs(sm["last"] - vals[-1]) < 1e-5 and sm["last_t"] == start + 180 * 300
    second = sm["second"]
    assert second["min"] == 50 and second["max"] == 56 and second["count"] == 181
    # a dozen points: the mean of each twelfth of the day that has readings, at its middle
    pts = sm["points"]
    assert 5 <= len(pts) <= 12 and all(sm["from"] <= t <= sm["to"] for t, _ in pts)
    assert pts == sorted(pts) and min(v for _, v in pts) < 11 and max(v for _, v in pts) > 19
    text = summary.text(sm, tz_s=3600, unit="\u00b0C", unit2="%")
    assert "bedroom, last 24 h" in text and "181 readings" in text
    assert "min 9.4 \u00b0C at 04:40" in text and "max 21 \u00b0C at 19:00" in text  # UTC+01:00
    assert "second value: min 50 %" in text and "points: " in text
    # the last 3 hours only
    sm3 = summary.summary("bedroom", 3)
    assert sm3["count"] == 36 and abs(sm3["min"] - vals[-36]) < 1e-5  # from 06:05 on


def test_a_longer_range_names_the_days_and_no_readings_says_so():
    from mimi.services.history import summary

    night()
    board.clock.skew += 2 * 86400
    sm = summary.summary("bedroom", 72)
    text = summary.text(sm)
    assert "min 9.4 at Thu 03:40" in text and "max 21 at Wed 18:00" in text, text
    assert summary.summary("bedroom", 24)["count"] == 0
    assert summary.text(summary.summary("bedroom", 24)) == "bedroom: no readings in the last 24 h"
    assert summary.summary("nobody", 24)["count"] == 0


def test_means_weigh_each_record_by_the_time_it_stands_for():
    from mimi.services.history import store, summary

    # a day at 1 minute (its older part kept as 5-minute means), then 10 minutes at 50
    for i in range(2 * 1440):
        store.add("mix", 10.0 if i < 1440 else 20.0, t=T0 + i * 60, every_s=60)
    for i in range(10):
        store.add("mix", 50.0, t=T0 + 2 * 86400 + i * 60, every_s=60)
    sm = summary.summary("mix", 48 + 1, now=T0 + 2 * 86400 + 600)
    assert abs(sm["mean"] - (10 * 1440 + 20 * 1440 + 50 * 10) / 2890) < 0.05, sm["mean"]


def test_the_chart_data_for_the_chat_page():
    from mimi.services.history import summary

    start, vals = night()
    now = board.clock.unix()
    msg = json.loads(summary.chart_json("bedroom", 24, columns=48, unit="\u00b0C"))
    assert msg["type"] == "chart" and msg["name"] == "bedroom" and msg["hours"] == 24
    assert msg["unit"] == "\u00b0C" and msg["from"] == now - 86400 and msg["to"] == now
    assert msg["count"] == 181 and msg["min"] == [9.4, start + 116 * 300] and msg["max"] == [21, start]
    lo, hi = msg["lo"], msg["hi"]
    assert len(lo) == len(hi) == 48
    span = 86400 + 1
    for k in range(48):
        inside = [v for i, v in enumerate(vals)
                  if (start + i * 300 - msg["from"]) * 48 // span == k]
        if inside:
            assert abs(lo[k] - min(inside)) < 1e-4 and abs(hi[k] - max(inside)) < 1e-4, k
        else:
            assert lo[k] is None and hi[k] is None
    assert len(summary.chart_json("bedroom", 24)) < 4096  # the default columns: one small frame
    empty = json.loads(summary.chart_json("nobody", 24))
    assert empty["count"] == 0 and "min" not in empty and set(empty["lo"]) == {None}


def test_units_come_from_the_last_readings_text():
    # query.units(): the word after a number of each of the first two items of the text
    # devices/state.py keeps; a text reading or a bare number has none
    from mimi.devices import state
    from mimi.services.history.query import units

    state.last["t"] = b"\0\0\0\0" + "21.5 \u00b0C, humidity 40 %".encode()  # (its ticks, then its text)
    state.last["l"] = b"\0\0\0\0about 320 lx"
    state.last["d"] = b"\0\0\0\0door open, 3"
    assert units("t") == ("\u00b0C", "%") and units("l") == ("lx", "")
    assert units("d") == ("", "") and units("nothing") == ("", "")
