# WiFi supervisor against a scripted network.WLAN: drops, a router swap behind the
# same SSID (#169), long outages with capped backoff, settings changes. Time is
# injected: the supervisor's sleeps advance a fake clock instead of waiting.
import asyncio
from mimi import limits
from mimi.config import settings as config
from mimi.services import wifi
from support import Capture


class Clock:
    def __init__(self):
        self.now = 0

    async def sleep_ms(self, ms):
        self.now += ms
        await asyncio.sleep_ms(0)


class FakeWLAN:
    """network.WLAN(IF_STA) with routers the test switches on and off."""

    def __init__(self, clock):
        self.clock = clock
        self.aps = {}  # ssid -> (password, ip the DHCP server hands out)
        self.assoc = None
        self.ip = "0.0.0.0"
        self.code = wifi.STAT_IDLE
        self.connects = []  # (time ms, ssid)
        self.disconnects = 0
        self._active = False

    def active(self, on=None):
        if on is not None:
            self._active = bool(on)
        return self._active

    def connect(self, ssid, key=None):
        assert self._active, "connect before active(True)"
        self.connects.append((self.clock.now, ssid))
        ap = self.aps.get(ssid)
        if ap is None:
            self.code = 201  # STAT_NO_AP_FOUND
        elif ap[0] != key:
            self.code = 202  # STAT_WRONG_PASSWORD
        else:
            self.assoc, self.ip, self.code = ssid, ap[1], wifi.STAT_GOT_IP

    def disconnect(self):
        self.disconnects += 1
        self.assoc, self.ip, self.code = None, "0.0.0.0", wifi.STAT_IDLE

    def isconnected(self):
        return self.assoc is not None and self.code == wifi.STAT_GOT_IP

    def status(self, param=None):
        if param == "rssi":
            return -61
        return self.code

    def ifconfig(self):
        return (self.ip, "255.255.255.0", "192.168.1.1", "192.168.1.1")

    def scan(self):
        return [(s.encode(), b"\x11\x22\x33\x44\x55\x66", 6, -50, 3, False) for s in self.aps]

    def config(self, *a, **kw):
        return b"\x02\x00\x00\x00\x00\x02" if a and a[0] == "mac" else None

    # script
    def drop(self):
        self.assoc, self.ip, self.code = None, "0.0.0.0", 200  # beacon timeout


def make(ssid="home", password="password1", router=True):
    clock = Clock()
    w = FakeWLAN(clock)
    if router:  # the home router is up
        w.aps["home"] = ("password1", "192.168.1.50")
    cfg = config.Config("/wifi-test.json")
    cfg.update({"wifi_ssid": ssid, "wifi_pass": password})
    sup = wifi.Supervisor(wlan=w, cfg=cfg, sleep_ms=clock.sleep_ms)
    return sup, w, clock, cfg


async def online():
    """make(), running and online -> (sup, w, the supervisor's task)."""
    sup, w, clock, cfg = make()
    t = asyncio.create_task(sup.run())
    await until(sup.online)
    return sup, w, t


async def until(cond, steps=200000):
    for _ in range(steps):
        if cond():
            return
        await asyncio.sleep_ms(0)
    raise AssertionError("condition never became true")


async def test_connects_at_once():
    sup, w, t = await online()
    assert sup.state == "online" and sup.ip == "192.168.1.50" and sup.retries == 0
    assert w.connects == [(0, "home")]
    assert sup.ssid == "home"
    from mimi import repl

    wifi.supervisor = sup  # what wifi_status() reports
    with Capture() as c:
        repl.wifi_status()
    assert "WiFi: online" in c.text and "rssi        -61 dBm" in c.text and "ip          192.168.1.50" in c.text
    t.cancel()


async def test_long_outage_backoff_is_capped_and_never_gives_up():
    sup, w, clock, cfg = make(router=False)
    t = asyncio.create_task(sup.run())
    await until(lambda: len(w.connects) >= 14)
    assert not sup.online() and sup.state in ("backoff", "connecting")
    times = [c[0] for c in w.connects]
    gaps = [b - a for a, b in zip(times, times[1:])]
    cap = limits.WIFI_BACKOFF_MAX_S * 1000
    expect = [min(limits.WIFI_BACKOFF_MIN_S * 1000 << i, cap) for i in range(len(gaps))]
    assert gaps == expect, gaps
    assert gaps[-1] == cap and gaps[-2] == cap  # capped, still trying (MimiClaw stopped at 10)
    assert sup.retries >= 13 and "AP not found" in sup.last_error
    # The router comes back: online within one capped wait, counters reset.
    w.aps["home"] = ("password1", "192.168.1.50")
    back = clock.now
    waiter_done = []

    async def channel():
        await sup.wait_online()
        waiter_done.append(clock.now)

    asyncio.create_task(channel())
    await until(lambda: waiter_done)
    assert sup.online() and sup.retries == 0 and sup.last_error == ""
    assert w.connects[-1][0] - back <= cap  # the next try, at most one capped wait later
    t.cancel()


async def test_wrong_password_is_reported_and_retried():
    sup, w, clock, cfg = make(password="wrongpass")
    t = asyncio.create_task(sup.run())
    await until(lambda: len(w.connects) >= 3)
    assert sup.last_error == "wrong password" and not sup.online()
    cfg.update({"wifi_pass": "password1"})  # set_wifi() from the REPL: reconnect now
    await until(sup.online)
    assert w.connects[-1][0] - w.connects[-2][0] < limits.WIFI_BACKOFF_MAX_S * 1000
    t.cancel()


class Esp32WLAN(FakeWLAN):
    """The esp32 port's status(): the last disconnect reason (201/202) stays until
    the next GOT_IP (ports/esp32/network_wlan.c), disconnect() does not clear it,
    and an association with the right password takes a few seconds."""

    ASSOC_MS = 3000

    def connect(self, ssid, key=None):
        assert self._active, "connect before active(True)"
        self.connects.append((self.clock.now, ssid))
        ap = self.aps.get(ssid)
        if ap is None:
            self.code = 201
        elif ap[0] != key:
            self.code = 202
        else:
            self._up_at, self._ap = self.clock.now + self.ASSOC_MS, (ssid, ap[1])

    def disconnect(self):
        self.disconnects += 1
        self.assoc, self.ip, self._up_at = None, "0.0.0.0", None  # self.code kept

    def _tick(self):
        if getattr(self, "_up_at", None) is not None and self.clock.now >= self._up_at:
            self.assoc, self.ip = self._ap
            self.code, self._up_at = wifi.STAT_GOT_IP, None

    def isconnected(self):
        self._tick()
        return FakeWLAN.isconnected(self)

    def status(self, param=None):
        self._tick()
        return FakeWLAN.status(self, param)


async def test_stale_failure_code_after_new_password_is_not_a_failure():
    clock = Clock()
    w = Esp32WLAN(clock)
    w.aps["home"] = ("password1", "192.168.1.50")
    cfg = config.Config("/wifi-test.json")
    cfg.update({"wifi_ssid": "home", "wifi_pass": "wrongpass"})
    sup = wifi.Supervisor(wlan=w, cfg=cfg, sleep_ms=clock.sleep_ms)
    t = asyncio.create_task(sup.run())
    # the second attempt starts on the stale 202 and still ends as "wrong password"
    await until(lambda: len(w.connects) >= 2 and sup.state == "backoff")
    assert sup.last_error == "wrong password" and w.code == 202
    cfg.update({"wifi_pass": "password1"})
    await until(lambda: sup.state == "connecting")
    states = set()
    for _ in range(200000):
        if sup.online():
            break
        states.add(sup.state)
        await asyncio.sleep_ms(0)
    # the right password's attempt was waited for, not failed on the old 202
    assert sup.online() and "backoff" not in states, states
    assert sup.retries == 0 and sup.last_error == ""
    t.cancel()


async def test_drop_reconnects_and_waiters_resume():
    sup, w, t = await online()
    del w.aps["home"]  # the router reboots
    w.drop()
    await until(lambda: not sup.online() and sup.retries >= 2)
    resumed = []

    async def channel():
        await sup.wait_online()  # how Telegram waits while offline
        resumed.append(sup.ip)

    asyncio.create_task(channel())
    for _ in range(100):
        await asyncio.sleep_ms(0)
    assert not resumed  # still waiting while offline
    w.aps["home"] = ("password1", "192.168.1.50")
    await until(lambda: resumed)
    assert sup.reconnects == 1 and resumed == ["192.168.1.50"]
    t.cancel()


async def test_an_online_board_holds_no_reconnect_code():
    """services/wifilink.py (connecting, backoff, reconnect) is loaded while the board
    is offline and dropped once it is online: an online board's supervisor waits with
    wifi.py alone, its lease check (WIFI_RENEW_S) loading the closer look for a moment."""
    import sys

    loaded = lambda: "mimi.services.wifilink" in sys.modules  # noqa: E731
    sup, w, clock, cfg = make()
    t = asyncio.create_task(sup.run())
    await until(sup.online)
    t0 = clock.now
    while clock.now - t0 < 2 * limits.WIFI_RENEW_S * 1000:  # two lease checks
        assert not loaded() and sup.online()
        await asyncio.sleep_ms(0)
    del w.aps["home"]
    w.drop()
    await until(lambda: sup.retries >= 1)
    assert loaded() and not sup.online()  # offline: the reconnect's code
    w.aps["home"] = ("password1", "192.168.1.50")
    await until(sup.online)
    assert not loaded() and sup.reconnects == 1
    t.cancel()


async def test_router_swap_same_ssid_renews_the_lease():
    # #169: a new router with the same SSID. The station stays "associated" but the
    # old lease is gone; the supervisor must re-associate and ask DHCP again.
    sup, w, t = await online()
    disc = w.disconnects
    w.aps["home"] = ("password1", "10.0.0.7")  # the new router's network
    w.ip = "0.0.0.0"  # lease lost, link still up
    await until(lambda: sup.online() and sup.ip == "10.0.0.7")
    assert w.disconnects > disc  # a real disconnect + connect, not a wait
    assert sup.reconnects == 1
    t.cancel()


async def test_unreachable_while_online_forces_reconnect():
    # Same SSID, new router, and the old IP still looks fine locally: the channels'
    # failures (wifi.suspect) make the supervisor re-associate.
    sup, w, t = await online()
    w.aps["home"] = ("password1", "10.0.0.7")
    for _ in range(limits.WIFI_SUSPECT_MAX):
        sup.suspect("telegram: connect failed")
    await until(lambda: sup.ip == "10.0.0.7" and sup.online())
    assert len(w.connects) == 2
    t.cancel()


async def test_settings_change_moves_to_the_new_network():
    sup, w, clock, cfg = make()
    w.aps["office"] = ("password2", "172.16.0.9")
    t = asyncio.create_task(sup.run())
    await until(sup.online)
    cfg.update({"wifi_ssid": "office", "wifi_pass": "password2"})
    await until(lambda: sup.online() and sup.ssid == "office")
    assert sup.ip == "172.16.0.9" and w.connects[-1][1] == "office"
    t.cancel()


async def test_no_ssid_waits_for_settings():
    sup, w, clock, cfg = make(ssid="", password="")
    t = asyncio.create_task(sup.run())
    await until(lambda: sup.state == "no-config")
    assert w.connects == []
    cfg.update({"wifi_ssid": "home", "wifi_pass": "password1"})
    await until(sup.online)
    t.cancel()


def test_repl_status_and_scan():
    from mimi import repl

    with Capture() as c:
        repl.wifi_status()
        repl.wifi_scan()
    for word in ("WiFi:", "ssid", "ip", "rssi", "retries"):
        assert word in c.text, c.text
    assert "host-network" in c.text


async def test_onboarding_needed_without_settings_or_before_the_first_connection():
    sup, w, clock, cfg = make(router=False)
    assert not sup.onboarding()  # the supervisor has not looked yet (boot.py may have connected)
    t = asyncio.create_task(sup.run())
    await until(lambda: sup.retries >= limits.PORTAL_AFTER_FAILS)
    assert sup.onboarding()  # WiFi failed and never came up since boot
    w.aps["home"] = ("password1", "192.168.1.50")
    await until(sup.online)
    assert not sup.onboarding()
    w.aps.clear()
    w.drop()
    await until(lambda: sup.retries >= limits.PORTAL_AFTER_FAILS)
    assert not sup.online() and not sup.onboarding()  # a later outage is not onboarding
    cfg.update({"wifi_ssid": "", "wifi_pass": ""})
    await until(lambda: sup.state == "no-config")
    assert sup.onboarding()  # settings gone: onboarding again
    t.cancel()


async def test_the_portal_check_runs_only_while_offline():
    """An online board holds no task for the onboarding portal: the supervisor starts
    its check (onboard()) when the board is offline, and the check ends once online."""
    check = limits.PORTAL_CHECK_S
    limits.PORTAL_CHECK_S = 0  # module constant, shortened for this test
    try:
        sup, w, clock, cfg = make()
        sup.portal = True
        t = asyncio.create_task(sup.run())
        await until(lambda: sup._onboard is not None)  # connecting: offline
        first = sup._onboard
        await until(sup.online)
        await until(first.done)  # online: no check left
        w.drop()  # offline again: the check again (until online again)
        await until(lambda: sup._onboard is not first)
        await until(sup._onboard.done)
        assert sup.online()
        t.cancel()
    finally:
        limits.PORTAL_CHECK_S = check


async def test_portal_code_loaded_only_while_onboarding():
    import sys
    from mimi import board

    class Sup:
        need = False
        up = False

        def onboarding(self):
            return self.need

        def online(self):
            return self.up

    sup = Sup()
    limits.PORTAL_CHECK_S = 0  # module constant, shortened for this test
    from mimi.services import wifilink

    t = asyncio.create_task(wifilink.onboard(sup))
    loaded = lambda: "mimi.services.portal" in sys.modules  # noqa: E731
    await asyncio.sleep_ms(5)
    assert not loaded()
    sup.need = True
    with Capture() as c:
        await until(lambda: loaded() and sys.modules["mimi.services.portal"].current.is_open)
        assert board.ap_wlan().active() and "captive_dns" in str(sys.modules)
        sup.up = True
        await until(lambda: not loaded())
    assert not board.ap_wlan().active() and "captive_dns" not in str(sys.modules)
    assert "join the WiFi network" in c.text and "onboarding access point off" in c.text
    t.cancel()
