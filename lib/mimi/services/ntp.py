# Clock sync. On the board a loop task asks an SNTP server (services/sntp.py, loaded
# for each sync) at boot and every limits.NTP_RESYNC_S; on the host the system clock
# is already right and nothing is sent. Cron and everything else that needs real
# time awaits wait_valid().
import asyncio
import mimi
from mimi import limits, log, board, bus

last_sync = 0  # Unix time of the last good sync (0: never)
last_error = None


def apply(unix):
    """Set the board clock; logs the correction."""
    global last_sync, last_error
    before = board.clock.unix()
    board.set_unix(int(unix))  # no float arithmetic: single precision on the board
    last_sync = board.clock.unix()
    last_error = None
    step = last_sync - before
    if abs(step) > 1:
        log.info("ntp", "clock set to %s (moved %+d s)", board.clock.local_str(0), step)
    _valid_flag().set()
    return step


def clock_ready():
    return board.clock.valid()


_flag = None


def _valid_flag():
    global _flag
    if _flag is None:
        _flag = asyncio.Event()
    return _flag


async def wait_valid(poll_s=1):
    """Return once the wall clock is valid (set by SNTP or by hand)."""
    while not clock_ready():
        await bus.wait_event(_valid_flag(), poll_s)


async def sync_once(hosts=None, port=None):
    """Ask each server in turn (services/sntp.py); True when the clock was set
    (last_error says why not)."""
    global last_error
    from mimi.services import sntp

    for host in hosts or sntp.HOSTS:
        try:
            apply(await sntp.aquery(host, port or sntp.PORT))
            return True
        except (OSError, sntp.NTPError, IndexError) as e:
            last_error = "%s: %s" % (host, e)
            log.warning("ntp", "sync with %s failed: %s", host, e)
    return False


async def run():
    """Loop task: sync at boot, then every NTP_RESYNC_S; backoff while failing."""
    if board.NAME == "host":
        log.info("ntp", "host: using the system clock")
        return
    from mimi.services import wifi

    retry = limits.NTP_RETRY_MIN_S
    while True:
        await wifi.supervisor.wait_online()
        ok = await sync_once()
        mimi.drop("services.sntp")
        if ok:
            retry = limits.NTP_RETRY_MIN_S
            await asyncio.sleep(limits.NTP_RESYNC_S)
        else:
            await asyncio.sleep(retry)
            retry = min(retry * 2, limits.NTP_RETRY_MAX_S)
