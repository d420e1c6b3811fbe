# Power cuts (issue 16 item 2), the MicroPython side: the firmware's own code (memory,
# daily notes, sessions, file tools, settings, cron, the Telegram offset, the usage
# ledger, the sensor history, OTA staging and install, the device file) works on a flash chip kept in RAM under
# MicroPython's own VfsLfs2. For a workload step, one program or erase the step makes is picked at random (every one
# equally likely) and the chip is copied as it was when power went at that moment,
# half the time with that block torn (a program or erase that only got part way). The
# step then finishes on the live chip, so its committed result is known, and the copy
# is "booted": mounted by a new VfsLfs2 at / (as boot.py mounts it: mimi/flashmount.py),
# the firmware's boot repairs run (an interrupted OTA swap finished, *.tmp removed), its
# loaders run (settings, cron, sessions), and every file must be what it was before the
# step or after it; the code folders must be the old version or the new one, whole.
#   micropython powercut.py ARGS.json
# ARGS: {"lib", "image", "seed", "cuts", "save", "save_every"}; the result is printed
# as "POWERCUT ..." lines (tests/host/test_powercut.py reads them). The first cut of
# each kind of step, every save_every-th and every failing one are written to the
# folder `save` as they were cut (cut<N>-<step>.img), for a boot of the real firmware.
import sys
import json

args = json.load(open(sys.argv[1]))
sys.path[:] = [args["lib"], ".frozen", __file__.rpartition("/")[0] or "."]
import os  # noqa: E402
import gc  # noqa: E402
import vfs  # noqa: E402
import random  # noqa: E402
import hashlib  # noqa: E402
import binascii  # noqa: E402
from mimi import board  # noqa: E402
from mimi.flashmount import lfs  # noqa: E402  (as boot.py mounts the board's flash)
from cutflash import CutFlash  # noqa: E402

CODE = ("/lib", "/defaults", "/certs", "/boot.py", "/main.py")  # what an OTA update swaps
SKIP = CODE + ("/ota",)  # checked as one digest (the code) or not at all (staging)
KEYS = ("ws_pc1", "ws_pc2", "tg_77")


def files(top="/", skip=SKIP):
    """Every file below top except the skipped folders, depth first."""
    out = []
    for e in sorted(os.ilistdir(top)):
        full = top.rstrip("/") + "/" + e[0]
        if full == board.HOST_MOUNT or full in skip:
            continue
        if e[1] & 0x4000:
            out.extend(files(full, skip))
        else:
            out.append(full)
    return out


def read(p):
    with open(p, "rb") as f:
        return f.read()


def code_digest():
    h = hashlib.sha256()
    for top in CODE:
        try:
            isdir = os.stat(top)[0] & 0x4000
        except OSError:
            continue
        for p in files(top, ()) if isdir else [top]:
            h.update(p.encode() + b"\0" + read(p) + b"\0")
    return binascii.hexlify(h.digest()).decode()


def state(with_code):
    """{path: bytes} of the user's files, plus the code's digest under "code"."""
    gc.collect()
    st = {p: read(p) for p in files()}
    if with_code:
        st["code"] = code_digest()
    return st


# --- the workload: the firmware's own calls -------------------------------------
def text(rng, n):
    words = ("power", "cut", "flash", "\u00e9t\u00e9", "\u4e2d\u6587", "note", "memory", "\U0001f389")
    out = []
    size = 0
    while size < n:
        w = words[rng.getrandbits(3)]
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


class Work:
    def __init__(self, rng):
        from mimi.config.settings import cfg
        from mimi.services.cron import Scheduler
        from mimi import bus

        self.rng = rng
        self.cfg = cfg
        cfg.load()
        self.sched = Scheduler(inbound=bus.Queue(4))
        self.sched.load()
        self.jobs = [j["id"] for j in self.sched.list()]
        self.gen = 0
        self.n = 0
        self.hist_t = 1767225600  # the readings' clock, 5 minutes a reading

    def memory(self):
        from mimi.memory import store

        store.write_memory("# Memory\n\n" + text(self.rng, self.rng.randint(10, 6000)) + "\n")

    def note(self):
        from mimi.memory import store

        store.append_note(text(self.rng, self.rng.randint(10, 400)), "2027-01-%02d" % self.rng.randint(1, 3))

    def session(self):
        from mimi.memory import sessions

        key = KEYS[self.rng.randint(0, len(KEYS) - 1)]
        sessions.append(key, "user", "q%d " % self.n + text(self.rng, self.rng.randint(10, 3000)))
        sessions.append(key, "assistant", "a%d " % self.n + text(self.rng, self.rng.randint(10, 5000)))
        assert sessions.flush() is None
        return key

    def file_tool(self):
        from mimi.tools.registry import registry
        import mimi.tools.files  # noqa: F401 - the file tools

        p = "/spiffs/pc/f%d.md" % self.rng.randint(0, 3)
        if self.rng.getrandbits(1) and board_exists(p):
            old = read(p).decode()[:5]
            r = registry.call("edit_file", {"path": p, "old_string": old, "new_string": "E%d" % self.n})
        else:
            r = registry.call("write_file", {"path": p, "content": text(self.rng, self.rng.randint(1, 9000))})
        assert r.startswith("OK"), r

    def setting(self):
        self.cfg.set("model", "model-%d-%s" % (self.n, "x" * self.rng.randint(0, 60)))

    def cron(self):
        if self.jobs and (len(self.jobs) > 6 or self.rng.getrandbits(1)):
            assert self.sched.remove(self.jobs.pop(self.rng.randint(0, len(self.jobs) - 1)))
        else:
            j = self.sched.add("pc%d" % self.n, "every", "check %d" % self.n, interval_s=3600 + self.n)
            assert isinstance(j, dict), j
            self.jobs.append(j["id"])

    def offset(self):
        from mimi.channels.telegram import poller as telegram, updates

        bot = telegram.Telegram()
        bot.bot_id = "42"
        bot.offset = 1000 + self.n
        updates.save_offset(bot)

    def ledger(self):
        """LLM calls counted by the usage ledger, then saved (as at the minute's save)."""
        from mimi.usage import ledger as usage

        class LLM:
            name = "anthropic"
            model = "model-%d" % self.rng.randint(0, 9)

        for _ in range(self.rng.randint(1, 4)):
            usage.add(LLM, {"input": self.rng.randint(1, 9000), "output": self.rng.randint(1, 900),
                            "cache_read": self.rng.randint(0, 4000)})
        usage.tick(force=True)

    def history(self):
        """Sensor readings (issue 24): fewer than a batch for one of two devices, one
        with a second value, then the store's flush (one append, or a segment filled
        and the next begun, its oldest removed beyond the count)."""
        from mimi.services.history import store

        name = ("pc_temp", "pc_hum")[self.rng.getrandbits(1)]
        for _ in range(self.rng.randint(1, 11)):
            self.hist_t += 300
            v = self.rng.randint(-400, 400) / 10
            assert store.add(name, v, None if name == "pc_temp" else v + 50, t=self.hist_t) is None
        assert store.flush() is None

    def ota(self):
        """A new version staged as a deploy does (a copy of the installed one, one file
        changed), verified and swapped in; now and then confirmed or rolled back."""
        from mimi.update import ota, boot as otaboot, staging

        st = otaboot._state()
        if st and st.get("state") in ("ok", "trial") and self.rng.randint(0, 3) == 0:
            ota.rollback(reboot=False)
            return
        if st and st.get("state") == "trial":  # a trial boot, then confirmed
            otaboot.boot_check(reboot=False)
            from mimi import safemode

            safemode.confirm()
        swap = self.rng.getrandbits(1)  # half of the cuts fall in the swap itself, not the copy
        dev.sampling = not swap
        staging.begin_deploy()
        self.gen += 1
        stamp = ("generation %d %d\n" % (self.gen, self.n)).encode()
        with open(staging.NEW + "/lib/mimi/powercut.txt", "wb") as f:
            f.write(stamp)
        entries = []
        for p in files(staging.NEW, ()):
            if p == ota.MANIFEST:
                continue
            from mimi.config.defaults import file_hash

            entries.append({"path": p[len(staging.NEW):], "size": os.stat(p)[6], "sha256": file_hash(p)})
        with open(ota.MANIFEST, "w") as f:
            json.dump({"format": 1, "version": "pc%d" % self.gen, "files": entries}, f)
        m = ota.verify()
        dev.sampling = True
        ota.install(m)


    def devices(self):
        """A device added or removed through the tools: the device file rewritten (or
        gone with its last device)."""
        from mimi.tools.registry import registry

        t = fresh_devices()
        mine = [d for d in t.listed() if not d.builtin]
        if mine and (len(mine) > 5 or self.rng.getrandbits(1)):
            r = registry.call("device_remove", {"name": mine[self.rng.randint(0, len(mine) - 1)].name})
        else:
            used = [p for d in mine for p in d.pins]
            pin = [p for p in range(4, 19) if p not in used][0]
            typ = ("relay", "digital_in", "pwm")[self.rng.randint(0, 2)]
            args = {"name": "dev%d_%s" % (self.n, "x" * self.rng.randint(0, 12)), "type": typ, "pin": pin}
            if typ == "relay":
                args["inverted"] = bool(self.rng.getrandbits(1))
            r = registry.call("device_add", args)
        assert r.startswith("OK"), r


def fresh_devices():
    """The device table read again from the flash mounted now, as a boot reads it."""
    import mimi

    import mimi.devices as devices

    for m in [m for m in sys.modules if m.startswith("mimi.devices.") and not m.startswith("mimi.devices.sim")]:
        mimi.unload(m)
    devices._file = devices.problem = devices.rows = None
    with devices.use() as t:
        pass
    assert devices.problem is None, devices.problem  # a cut never leaves a torn device file
    return t


def board_exists(p):
    try:
        os.stat(p)
        return True
    except OSError:
        return False


STEPS = (("memory", 3), ("note", 3), ("session", 5), ("file_tool", 3), ("setting", 2),
         ("cron", 2), ("offset", 1), ("ledger", 2), ("history", 2), ("ota", 1), ("devices", 2))


def pick(rng):
    total = sum(w for _, w in STEPS)
    r = rng.randint(1, total)
    for name, w in STEPS:
        r -= w
        if r <= 0:
            return name


# --- a cut image, booted and checked ----------------------------------------------
def boot_repairs():
    """What the firmware's boot does to a flash before it trusts it."""
    from mimi import startup
    from mimi.update import boot as otaboot

    if otaboot.boot_check(reboot=False) in ("swapped", "rolled back"):
        repairs["ota"] = repairs.get("ota", 0) + 1
    from mimi import app

    app.devices_off()  # app.main's first step: a device file's actuators off
    tmp = [p for p in files("/", ()) if p.endswith(".tmp")]
    startup.clean_tmp()
    repairs["tmp"] = repairs.get("tmp", 0) + len(tmp)
    assert not [p for p in tmp if board_exists(p)], tmp


def loaders(work):
    """The firmware reads back what it keeps: nothing here may raise."""
    from mimi.memory import sessions, store
    from mimi.services.cron import Scheduler
    from mimi import bus

    work.cfg.load()
    s = Scheduler(inbound=bus.Queue(4))
    s.load()
    for key in KEYS:
        sessions.load(key)
    store.read_memory()
    store.recent_notes()
    from mimi.usage import file as usagefile

    for line in usagefile.lines():
        assert usagefile.parse(line), line
    import mimi

    mimi.unload("mimi.services.history.store")  # read as a boot would, from the cut flash
    from mimi.services.history import store

    for name in store.names():
        times = [t for t, _ in store.read(name)]
        assert times == sorted(times), name
    assert not [p for p in files("/") if p.endswith(".bad")], "a history file was damaged"
    mimi.unload("mimi.services.history.store")  # the live flash's again at the next step
    fresh_devices()


def allowed(path, before, after):
    """The contents a file may have after a cut inside the step: before or after it;
    a session file also as appended but not yet compacted."""
    ok = [before.get(path), after.get(path)]
    if path.endswith(".jsonl") and after.get(path) is not None:
        tail = after[path].split(b"\n")
        ok.append((before.get(path) or b"") + b"\n".join(tail[-3:]))
    return ok


def check(snap, before, after, work):
    """-> None, or what is wrong with the cut image snap (bytearray)."""
    cut = CutFlash(snap, None)
    vfs.umount("/")
    try:
        try:
            vfs.mount(lfs(cut), "/")
        except OSError as e:
            return "does not mount: %r" % e
        try:
            boot_repairs()
            loaders(work)
            got = state(True)
        except Exception as e:  # noqa: B902 - any crash of the boot path is the finding
            sys.print_exception(e)
            return "boot path raised %r" % e
        finally:
            vfs.umount("/")
    finally:
        vfs.mount(live, "/")
        work.cfg.load()  # the live settings again
        fresh_devices()  # and the live devices
    bad = []
    for p in sorted(set(before) | set(after) | set(got)):
        if got.get(p) not in allowed(p, before, after):
            bad.append("%s: %s" % (p, "missing" if got.get(p) is None else "%d bytes, neither old (%s) nor new (%s)" % (
                len(got[p]), len(before.get(p) or "") if p in before else "none",
                len(after.get(p) or "") if p in after else "none")))
    return "; ".join(bad) or None


def save(snap, name):
    path = board.host_path(args["save"] + "/" + name)
    with open(path, "wb") as f:
        f.write(snap)
    print("POWERCUT saved", path)


# --- the run ------------------------------------------------------------------------
seed = args["seed"]
rng = random
rng.seed(seed)
with open(args["image"], "rb") as f:
    data = bytearray(f.read())
board.mount_image(args["image"])  # the host's files move to /host, as in the simulator
dev = CutFlash(data, rng)
live = lfs(dev)
vfs.umount("/")
vfs.mount(live, "/")
from mimi.config import defaults  # noqa: E402

defaults.install()
work = Work(rng)
before = state(True)
cuts = torn = failures = steps = 0
counts = {}
repairs = {}  # what the boot repairs did on the cut images
while cuts < args["cuts"]:
    kind = STEPS[steps][0] if steps < len(STEPS) else pick(rng)  # each kind cut at least once
    work.n = steps
    dev.arm(True)
    try:
        getattr(work, kind)()
    except Exception as e:  # noqa: B902
        sys.print_exception(e)
        print("POWERCUT FAIL seed=%d step=%d %s raised on the live flash: %r" % (seed, steps, kind, e))
        sys.exit(1)
    dev.sampling = False
    after = state(kind == "ota")
    if "code" not in after:
        after["code"] = before["code"]
    steps += 1
    if dev.snap is None:
        before = after
        continue
    snap, at, how = dev.snap
    dev.snap = None
    cuts += 1
    torn += how is not None
    counts[kind] = counts.get(kind, 0) + 1
    if counts[kind] == 1 or (args["save_every"] and cuts % args["save_every"] == 0):
        save(snap, "cut%d-%s.img" % (cuts, kind))
    keep = bytearray(snap) if args["save"] else None
    why = check(snap, before, after, work)
    if why:
        failures += 1
        print("POWERCUT FAIL seed=%d cut=%d step=%d %s at op %d of %d torn=%s: %s" % (
            seed, cuts, steps - 1, kind, at, dev.ops, how, why))
        if keep:
            save(keep, "fail%d-%s.img" % (cuts, kind))
    before = after
print("POWERCUT done seed=%d cuts=%d torn=%d failures=%d steps=%d by_step=%s repaired=%s" % (
    seed, cuts, torn, failures, steps, json.dumps(counts), json.dumps(repairs)))
sys.exit(1 if failures else 0)
