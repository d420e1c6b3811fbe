# WiFi supervisor: a task on the asyncio loop that keeps the station connected.
# Unlike MimiClaw (gave up after 10 retries, kept a stale "connected" bit, missed a
# router swap behind the same SSID, #169), it retries forever with capped
# exponential backoff, notices a lost link or a lost IP, reconnects (which renews
# DHCP), re-checks the lease periodically, and reconnects when the settings change.
# Others read `online()` (any thread) or `await wait_online()` (loop tasks).
# It also decides when the onboarding portal is needed: while the board is offline it
# runs onboard() (services/wifilink.py), which loads the portal (services/portal.py)
# only then, and drops it once the board is online; an online board holds neither.
# What the supervisor does while offline (connecting, backing off) and when the link
# looks wrong is services/wifilink.py, loaded for that only: an online board waits
# with this module's small part.
import gc
import asyncio
import mimi
from mimi import limits, log, board
from mimi.config import settings as config

TAG = "wifi"
# network.STAT_* on the esp32 port (no `network` module on the host)
STAT_IDLE = 1000
STAT_CONNECTING = 1001
STAT_GOT_IP = 1010


def _ip_ok(ip):
    return bool(ip) and ip != "0.0.0.0"


class Supervisor:
    portal = False  # startup.tasks(): look for onboarding (onboard()) while offline

    def __init__(self, wlan=None, cfg=None, sleep_ms=None):
        self._wlan = wlan
        self.cfg = cfg or config.cfg
        self._sleep_ms = sleep_ms or asyncio.sleep_ms
        self.state = "starting"  # starting|no-config|connecting|online|backoff
        self.ssid = ""
        self.ip = "0.0.0.0"
        self.retries = 0  # failed attempts since the last success
        self.reconnects = 0  # link losses since boot
        self.last_error = ""
        self._online = False
        self.was_online = False  # online at least once since boot
        self._event = asyncio.Event()
        self._changed = False
        self._force = False
        self._suspects = 0
        self._onboard = None  # onboard()'s task
        self.cfg.watch(self._on_settings)

    def wlan(self):
        if self._wlan is None:
            self._wlan = board.wlan()
        return self._wlan

    # --- what other parts use -------------------------------------------------
    def online(self):
        return self._online

    async def wait_online(self):
        while not self._online:
            await self._event.wait()

    def suspect(self, reason=""):
        """A channel saw the network fail while we look online (e.g. a new router
        kept our old lease): a few of these in a row force a reconnect."""
        if self._online:
            self._suspects += 1
            if self._suspects >= limits.WIFI_SUSPECT_MAX:
                log.warning(TAG, "network unreachable while online (%s); reconnecting", reason)
                self._suspects = 0
                self._force = True

    def healthy(self):
        self._suspects = 0

    def onboarding(self):
        """Is the onboarding portal needed? Offline with no WiFi settings, or WiFi has
        failed since boot and never came up (a later outage is not onboarding)."""
        if self._online or self.state == "starting":  # not looked yet (boot.py may have connected)
            return False
        if not self.cfg.get("wifi_ssid"):
            return True
        return not self.was_online and self.retries >= limits.PORTAL_AFTER_FAILS

    # --- internals ------------------------------------------------------------
    def _on_settings(self, keys):
        if "wifi_ssid" in keys or "wifi_pass" in keys:
            self._changed = True

    def _link(self):
        """(associated and has an IP, ip) without raising."""
        w = self.wlan()
        try:
            if not w.isconnected():
                return False, "0.0.0.0"
            ip = w.ifconfig()[0]
        except OSError:
            return False, "0.0.0.0"
        return _ip_ok(ip), ip

    async def run(self):
        """Connecting, backing off, reconnecting: services/wifilink.py, loaded for that
        and dropped once online. While online this frame only waits, looks at the link
        every WIFI_CHECK_S (the same address still up: nothing loaded) and has
        wifilink.check() look closer when it is not, at the lease's time, or when the
        settings changed or a reconnect is forced."""
        why = None
        while True:
            await mimi.load("mimi.services.wifilink").connect(self, why)  # back once online
            mimi.drop("services.wifilink")
            gc.collect()  # (as mimi.run(): what is made next fills its room, low)
            why = since = 0
            while not why:
                if not (self._changed or self._force):
                    await self._sleep_ms(limits.WIFI_CHECK_S * 1000)
                    since += limits.WIFI_CHECK_S
                    if (since < limits.WIFI_RENEW_S and not (self._changed or self._force)
                            and self._link() == (True, self.ip)):
                        continue
                renew = since >= limits.WIFI_RENEW_S
                if renew:
                    since = 0
                why = mimi.run("services.wifilink", "check", self, renew)


supervisor = Supervisor()


def online():
    return supervisor.online()


async def wait_online():
    await supervisor.wait_online()


def suspect(reason=""):
    supervisor.suspect(reason)


def healthy():
    supervisor.healthy()
