# The WiFi supervisor's work away from a good link (services/wifi.py loads this for
# it and drops it once online): connecting with capped exponential backoff, the
# lost link's reconnect, the closer look at a link that looks wrong, and the
# onboarding portal's check while offline.
import asyncio
import mimi
from mimi import limits, log
from mimi.services.wifi import TAG, STAT_GOT_IP

FAILED = {200: "beacon timeout", 201: "AP not found", 202: "wrong password",
          203: "association failed", 204: "handshake timeout"}


def set_online(sup, on):
    if not on and sup.portal and (sup._onboard is None or sup._onboard.done()):
        from mimi.services import loopwatch

        sup._onboard = asyncio.create_task(loopwatch.watch("portal", onboard(sup)))
    if on == sup._online:
        return
    sup._online = on
    if on:
        sup.was_online = True
        sup._event.set()
    else:
        sup._event = asyncio.Event()  # a fresh unset event; waiters of the old one already woke


async def _wait(sup, ms):
    """Sleep ms, cut short by a settings change."""
    while ms > 0 and not sup._changed:
        step = min(ms, limits.WIFI_POLL_MS * 4)
        await sup._sleep_ms(step)
        ms -= step


async def _attempt(sup, ssid, password):
    w = sup.wlan()
    sup.state = "connecting"
    sup.ssid = ssid
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
        ok, ip = sup._link()
        if ok:
            sup.ip = ip
            return None
        try:
            st = w.status()
        except OSError:
            st = None
        if st in FAILED and (st != stale or waited >= limits.WIFI_FAIL_GRACE_MS):
            return FAILED[st]
        if sup._changed:
            return "settings changed"
        await sup._sleep_ms(limits.WIFI_POLL_MS)
        waited += limits.WIFI_POLL_MS
    return "no IP after %d s" % limits.WIFI_CONNECT_TIMEOUT_S


def backoff_ms(retries):
    n = min(retries, 16)
    return min(limits.WIFI_BACKOFF_MIN_S * 1000 * (1 << max(n - 1, 0)),
               limits.WIFI_BACKOFF_MAX_S * 1000)


def check(sup, renew):
    """A closer look at the link while online (renew: at the lease too; Supervisor.run()
    calls this when its own look found the link or its address changed, at the lease's
    time, and after a settings change or a forced reconnect) -> why it is lost, or None."""
    ok, ip = sup._link()
    if not ok:
        return "link lost" if ip == "0.0.0.0" else "lost IP"
    if ip != sup.ip:
        log.info(TAG, "address changed %s -> %s", sup.ip, ip)
        sup.ip = ip
    if renew:
        try:
            st = sup.wlan().status()
        except OSError:
            st = None
        if st is not None and st != STAT_GOT_IP and sup.ssid:
            return "status %s" % st
    if sup._changed:
        return "settings changed"
    if sup._force:
        return "network unreachable"
    return None


async def connect(sup, why):
    """Until the board is online again (returns then): after the link was lost (why:
    check()'s reason; None at boot), the reconnect; then attempts, retried forever
    with capped exponential backoff, and the wait for settings while there are none."""
    if why:
        if why != "settings changed":
            sup.reconnects += 1
            sup.last_error = why
            log.warning(TAG, "%s; reconnecting", why)
            sup.ssid = ""  # makes the next round associate again even if the link looks up
            try:
                sup.wlan().disconnect()
            except OSError:
                pass
        set_online(sup, False)
    while True:
        sup._changed = False
        sup._force = False
        ssid = sup.cfg.get("wifi_ssid")
        ok, ip = sup._link()
        if ok and (not ssid or sup.ssid == ssid or sup.state == "starting"):
            # Already up (host network, or boot.py connected): supervise that link.
            sup.ip, sup.ssid = ip, ssid or sup.ssid
            err = None
        elif not ssid:
            sup.state = "no-config"
            set_online(sup, False)
            await _wait(sup, limits.WIFI_CHECK_S * 1000)
            continue
        else:
            set_online(sup, False)
            err = await _attempt(sup, ssid, sup.cfg.get("wifi_pass"))
        if err is None:
            if sup.retries or sup.state != "online":
                if sup.ssid:
                    log.info(TAG, "connected to %r, ip %s", sup.ssid, sup.ip)
                else:
                    log.info(TAG, "network up, ip %s", sup.ip)
            sup.state = "online"
            sup.retries = 0
            sup.last_error = ""
            set_online(sup, True)
            return
        if err == "settings changed":
            continue
        sup.retries += 1
        sup.last_error = err
        delay = backoff_ms(sup.retries)
        sup.state = "backoff"
        log.warning(TAG, "%r: %s (attempt %d); next try in %d s", ssid, err, sup.retries, delay // 1000)
        await _wait(sup, delay)


async def onboard(sup):
    """Loop task while the board is offline (set_online() starts it): the onboarding
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
