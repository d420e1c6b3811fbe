# Fuzzing the settings (issue 16, item 3): config.cfg.set with values of every type
# for every setting (as the REPL, the portal or a tool would pass them) and mutated
# /config.json files at load. A value is stored as its setting's type or refused with
# a ValueError naming the setting; the file stays valid JSON in valid UTF-8 and loads
# back the same; a broken file is reported, never fatal; the next sound change works.
# Seed and case count: tests/mp/fuzz.py.
import fuzz
from mimi import fs, limits, log
from mimi.config import settings as config
from mimi.utf8 import valid

HEAPSIZE = "2m"
TIMEOUT = 300
KEYS = sorted(config.SCHEMA)
SOUND = {"model": "m", "tz": "+08:00", "ws_port": 18790, "tg_allow": "42,7", "max_tokens": 2048,
         "api_base": "http://127.0.0.1:11434/v1", "gpio_allow": "2,4,5,6", "ws_token": "abcdefghijklmnop"}
ODD = (float("inf"), float("-inf"), float("nan"), b"bytes", bytearray(b"x"), (1, 2), {1, 2}, object())


def hostile(r):
    if r.chance(10):
        return r.pick(ODD)
    v = fuzz.junk(r)
    if isinstance(v, str) and r.chance(20):
        b = v.encode() + r.pick(fuzz.BAD_BYTES)
        try:
            v = b.decode()  # MicroPython lets CESU-8 and overlong forms into a str
        except UnicodeError:
            pass
    if r.chance(15):
        v = " %s " % (v,)
    return v


def kind(key):
    d, rule = config.SCHEMA[key][:2]
    if rule == "price":  # USD per million tokens: 0 or a fraction
        return (int, float)
    return (str, type(None)) if d is None else type(d)  # None: made when first needed


def test_fuzz_settings():
    log.mute = True
    cfg = config.cfg
    cfg.load()
    what = "settings"
    for n, r in fuzz.cases(300, what):
        key = r.pick(KEYS) if r.chance(95) else r.pick(("nope", "", "Model", "\u4e2d"))
        v = hostile(r)
        try:
            cfg.set(key, v)
            ok = True
        except ValueError as e:
            msg = str(e)
            if not valid(msg) or not msg or len(msg) > 600 or (key and key not in msg and repr(key) not in msg and "UTF-8" not in msg):
                fuzz.fail(what, n, "refusal %r" % msg, (key, v))
            ok = False
        except Exception as e:  # noqa: B902 - any other escape is the finding
            fuzz.crash(what, n, e, (key, v))
        if ok:
            got = cfg.get(key)
            if not isinstance(got, kind(key)) or isinstance(got, str) and not valid(got):
                fuzz.fail(what, n, "stored %r" % (got,), (key, v))
        data = fs.read_head(limits.CONFIG_PATH, 1 << 16) if fs.exists(limits.CONFIG_PATH) else b"{}"
        if not valid(data):
            fuzz.fail(what, n, "config.json is not valid UTF-8: %r" % data[:200], (key, v))
        before = {k: cfg.get(k) for k in KEYS}
        cfg.load()
        after = {k: cfg.get(k) for k in KEYS}
        if cfg.problems or before != after:
            fuzz.fail(what, n, "loaded back %r, problems %r" % (
                [k for k in KEYS if before[k] != after[k]], cfg.problems), (key, v))
        cfg.rows()
        cfg.missing()
        k = r.pick(sorted(SOUND))  # the next sound change works
        cfg.set(k, SOUND[k])
        if cfg.get(k) != SOUND[k]:
            fuzz.fail(what, n, "sound %s=%r gave %r" % (k, SOUND[k], cfg.get(k)), (key, v))


def test_fuzz_config_file():
    log.mute = True
    cfg = config.cfg
    what = "config file"
    for n, r in fuzz.cases(150, what):
        obj = {r.pick(KEYS): hostile(r) if r.chance(50) else SOUND.get("model") for _ in range(r.below(5))}
        obj = {k: v for k, v in obj.items() if v not in ODD[3:]}  # what JSON can hold
        data = fuzz.dumps(fuzz.mutate(r, obj) if r.chance(50) else obj)
        if r.chance(40):
            data = fuzz.garble(r, data)
        with open(limits.CONFIG_PATH, "wb") as f:
            f.write(data)
        try:
            cfg.load()
        except Exception as e:  # noqa: B902 - never fatal
            fuzz.crash(what, n, e, data)
        for p in cfg.problems:
            if not isinstance(p, str) or not valid(p) or len(p) > 600:
                fuzz.fail(what, n, "problem %r" % (p,), data)
        for k in KEYS:
            got = cfg.get(k)
            if not isinstance(got, kind(k)) or isinstance(got, str) and not valid(got):
                fuzz.fail(what, n, "%s loaded as %r" % (k, got), data)
        cfg.rows()
        cfg.set("model", "sound %d" % n)  # the next change is saved over whatever was there
        cfg.load()
        if cfg.get("model") != "sound %d" % n:
            fuzz.fail(what, n, "model after a sound set: %r" % cfg.get("model"), data)
