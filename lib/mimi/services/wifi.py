# WiFi supervisor: a task on the asyncio loop that keeps the station connected.
# Unlike MimiClaw (gave up after 10 retries, kept a stale "connected" bit, missed a
# router swap behind the same SSID, #169), it retries forever with capped
# exponential backoff, notices a lost link or a lost IP, reconnects (which renews
# DHCP), re-checks the lease periodically, and reconnects when the settings change.
# Others read `online()` (any thread) or `await wait_online()` (loop tasks).
# It also decides when the onboarding portal is needed: while the board is offline it
# runs onboard(), which loads the portal (services/portal.py) only then, and drops it
# once the board is online; an online board holds neither.
import asyncio
import mimi
from mimi import limits, log, board
from mimi.config import settings as config

TAG = "wifi"
# network.STAT_* on the esp32 port (no `network` module on the host)
STAT_IDLE = 1000
STAT_CONNECTING = 1001
STAT_GOT_IP = 1010
FAILED = {200: "beacon timeout", 201: "AP not found", 202: "wrong password",
          203: "association failed", 204: "handshake timeout"}


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

    def _set_online(self, on):
        if not on and self.portal and (self._onboard is None or self._onboard.done()):
            from mimi.services import loopwatch

            self._onboard = asyncio.create_task(loopwatch.watch("portal", onboard(self)))
        if on == self._online:
            return
        self._online = on
        if on:
            self.was_online = True
            self._event.set()
        else:
            self._event = asyncio.Event()  # a fresh unset event; waiters of the old one already woke

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

    async def _wait(self, ms):
        """Sleep ms, cut short by a settings change."""
        while ms > 0 and not self._changed:
            step = min(ms, limits.WIFI_POLL_MS * 4)
            await self._sleep_ms(step)
            ms -= step

    async def _attempt(self, ssid, password):
        w = self.wlan()
        self.state = "connecting"
        self.ssid = ssid
        try:
            w.active(True)
            try:
                w.disconnect()  # a fresh association renews the DHCP lease
            except OSError:
                pass
            # The esp32 port keeps the last disconnect reason (201, 202...) until the
            # next GOT_IP, so right after connect() status() still shows the previous
            # attempt's failure: the same code counts only after WIFI_FAIL_GRACE_MS.
            try:
                stale = w.status()
            except OSError:
                stale = None
            w.connect(ssid, password)
        except OSError as e:
            return "connect failed: %s" % e
        waited = 0
        while waited < limits.WIFI_CONNECT_TIMEOUT_S * 1000:
            ok, ip = self._link()
            if ok:
                self.ip = ip
                return None
            try:
                st = w.status()
            except OSError:
                st = None
            if st in FAILED and (st != stale or waited >= limits.WIFI_FAIL_GRACE_MS):
                return FAILED[st]
            if self._changed:
                return "settings changed"
            await self._sleep_ms(limits.WIFI_POLL_MS)
            waited += limits.WIFI_POLL_MS
        return "no IP after %d s" % limits.WIFI_CONNECT_TIMEOUT_S

    def backoff_ms(self):
        n = min(self.retries, 16)
        return min(limits.WIFI_BACKOFF_MIN_S * 1000 * (1 << max(n - 1, 0)),
                   limits.WIFI_BACKOFF_MAX_S * 1000)

    def _check(self, renew):
        """One look at the link while online (renew: at the lease too) -> why it is
        lost, or None. run() waits between two in its own frame: a coroutine of its own
        (96 B on 32-bit) would be held for as long as the board is online."""
        ok, ip = self._link()
        if not ok:
            return "link lost" if ip == "0.0.0.0" else "lost IP"
        if ip != self.ip:
            log.info(TAG, "address changed %s -> %s", self.ip, ip)
            self.ip = ip
        if renew:
            try:
                st = self.wlan().status()
            except OSError:
                st = None
            if st is not None and st != STAT_GOT_IP and self.ssid:
                return "status %s" % st
        return None

    async def run(self):
        while True:
            self._changed = False
            self._force = False
            ssid = self.cfg.get("wifi_ssid")
            ok, ip = self._link()
            if ok and (not ssid or self.ssid == ssid or self.state == "starting"):
                # Already up (host network, or boot.py connected): supervise that link.
                self.ip, self.ssid = ip, ssid or self.ssid
                err = None
            elif not ssid:
                self.state = "no-config"
                self._set_online(False)
                await self._wait(limits.WIFI_CHECK_S * 1000)
                continue
            else:
                self._set_online(False)
                err = await self._attempt(ssid, self.cfg.get("wifi_pass"))
            if err is None:
                if self.retries or self.state != "online":
                    if self.ssid:
                        log.info(TAG, "connected to %r, ip %s", self.ssid, self.ip)
                    else:
                        log.info(TAG, "network up, ip %s", self.ip)
                self.state = "online"
                self.retries = 0
                self.last_error = ""
                self._set_online(True)
                # while online: the link checked often, the lease now and then
                why = None
                since_renew = 0
                while why is None and not self._changed and not self._force:
                    await self._sleep_ms(limits.WIFI_CHECK_S * 1000)
                    since_renew += limits.WIFI_CHECK_S
                    renew = since_renew >= limits.WIFI_RENEW_S
                    if renew:
                        since_renew = 0
                    why = self._check(renew)
                if why is None:
                    why = "settings changed" if self._changed else "network unreachable"
                if why != "settings changed":
                    self.reconnects += 1
                    self.last_error = why
                    log.warning(TAG, "%s; reconnecting", why)
                    self.ssid = ""  # makes the next round associate again even if the link looks up
                    try:
                        self.wlan().disconnect()
                    except OSError:
                        pass
                self._set_online(False)
                continue
            if err == "settings changed":
                continue
            self.retries += 1
            self.last_error = err
            delay = self.backoff_ms()
            self.state = "backoff"
            log.warning(TAG, "%r: %s (attempt %d); next try in %d s",
                        ssid, err, self.retries, delay // 1000)
            await self._wait(delay)


supervisor = Supervisor()


async def onboard(sup=supervisor):
    """Loop task while the board is offline (Supervisor starts it): the onboarding
    portal while it is needed (see Supervisor.onboarding), its code loaded for that
    time only; ends once the board is online (onboarding is then not needed)."""
    while True:
        await asyncio.sleep(limits.PORTAL_CHECK_S)
        if not sup.onboarding():
            if sup.online():
                return
            continue
        try:
            from mimi.services import portal

            await portal.serve(sup)
        except Exception as e:  # the portal must never take the loop down: try again later
            log.exception("portal", "onboarding portal failed", e)
        finally:
            mimi.drop("services.portal")
            mimi.drop("services.captive_dns")


def online():
    return supervisor.online()


async def wait_online():
    await supervisor.wait_online()


def suspect(reason=""):
    supervisor.suspect(reason)


def healthy():
    supervisor.healthy()
