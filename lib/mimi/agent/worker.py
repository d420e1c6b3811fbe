# The agent thread (MimiClaw's "second core"): takes one message at a time from
# bus.inbound, runs a ReAct turn against the LLM with blocking HTTP, saves the
# session and puts the reply on bus.outbound. It never touches asyncio objects;
# the loop reads the outbound queue through its ThreadSafeFlag.
import sys
import time
import _thread
from micropython import const
import mimi
from mimi import limits, log, bus, channels, short, unload
from mimi.config import settings as config

_SORRY = const("Sorry, something went wrong: %s")
# Read by the watchdog (no lock needed: single writes of small ints/bools).
progress = time.ticks_ms()  # ticks_ms of the last sign of life
busy = False  # a turn is running
turns = 0
failures = 0

_started = False
_stop = False
# update/check.py asks (check = ASKED) for the agent's part of an update's check; the
# thread answers (why not or None, whether the heap ran out): agent/selftest.py
ASKED = "asked"
check = None
_SCRUB_CALLS = const(16)  # nested calls by _scrub(): 4 KB of stack on 32-bit, 6.4 KB on 64-bit
TOO_BIG = ("Sorry, this turn did not fit in the board's free memory (prompt, history and "
           "tools). Try again, or send /reset to start the chat afresh.")


def _alive():
    global progress
    progress = time.ticks_ms()


def _system_prompt(channel, chat_id, encoded, group):
    from mimi.agent import context

    tight = short(True)  # (collected first when it looks short)
    try:
        if encoded:  # each section JSON-escaped once for the whole turn: in RAM, or on
            # the flash when the heap is short (each call reads it from there)
            return context.encoded(channel, chat_id, limits.PROMPT_SPILL if tight else None, group)
        # [fixed, per-turn]: the provider marks only the fixed part for prompt caching,
        # so a memory or note change doesn't invalidate the cached instructions.
        return list(context.build_parts(channel, chat_id, group))
    finally:
        context = None
        if tight:
            for name in ("mimi.agent.context", "mimi.memory.store", "mimi.memory.skills"):
                unload(name)


def _spoken(meta, text):
    """A group shares one session: its members' messages carry the sender's name
    ("Ann: ...", one line, capped), in the history as for the model."""
    name = " ".join(str(meta.get("sender") or "").split())[:limits.SENDER_NAME_MAX]
    return "%s: %s" % (name, text) if meta.get("group") and name else text


def _wait_clock():
    """Right after boot the board's clock reads 2000 until NTP answers, and TLS then
    refuses every certificate: give NTP a moment instead of failing the first turn."""
    from mimi import board

    waited = 0
    while not board.clock.valid() and waited < limits.AGENT_CLOCK_WAIT_MS:
        time.sleep_ms(limits.AGENT_IDLE_MS)
        waited += limits.AGENT_IDLE_MS
        _alive()
    if waited:
        log.info("agent", "waited %d ms for the clock (NTP)", waited)


def _refused(msg):
    """None when the usage ledger lets the turn call the LLM; else the reply: why not,
    for a person, or "" for a heartbeat or cron turn (the owner is told once)."""
    from mimi.usage import ledger as usage

    why = usage.check((msg.channel, msg.chat_id))
    if why is None:
        return None
    log.warning("agent", "%s: turn refused: %s", msg.session, why)
    meta = msg.meta if isinstance(msg.meta, dict) else {}
    if not channels.get(msg.channel).label or "cron" in meta or "heartbeat" in meta or "rule" in meta:
        return ""
    return "Sorry, %s." % why


def _progress(msg):
    """run_turn's progress hook for a chat where a person waits: a status naming the
    step (the tool) and its detail."""
    def progress(name, detail):
        meta = dict(msg.meta) if isinstance(msg.meta, dict) else {}
        meta["step"] = name
        meta["detail"] = detail
        _put_out(bus.Msg(msg.channel, msg.chat_id, "working", bus.STATUS, meta),
                 limits.AGENT_STATUS_WAIT_MS)
    return progress


def run_message(msg):
    """One turn for msg (a bus.Msg) -> the reply text ("" when nobody is to be told:
    a heartbeat or cron turn refused by a spend cap). Never raises. The session gets
    the user text and the answer only when the turn succeeded."""
    global busy, turns, failures
    refused = _refused(msg)
    if refused is not None:
        return refused
    busy = True
    _alive()
    llm = None
    try:
        _roots()
        key = msg.session
        meta = msg.meta if isinstance(msg.meta, dict) else {}
        # A heartbeat turn stands alone: carrying earlier heartbeat exchanges along
        # would re-upload them on every check (peers' heartbeat token blow-ups).
        stateless = bool(meta.get("stateless"))
        text = _spoken(meta, msg.content)
        _wait_clock()
        llm = _llm(msg)
        enc = getattr(llm, "message", None)
        system = _system_prompt(msg.channel, msg.chat_id, enc is not None, bool(meta.get("group")))
        history = [] if stateless else _history(key, enc)
        _alive()
        answer, error = _calls(llm, system, history, text, msg)
        system = history = llm.stream = None
        _release(llm)
        llm = None
        turns += 1
        if short(True):  # the LLM calls' code goes before the save: a long answer is
            _forget(True)  # escaped into the session file in its room
        if error:
            failures += 1
            log.warning("agent", "%s: turn failed: %s", key, error)
            return answer or _SORRY % error
        if stateless:
            return answer
        from mimi.memory import sessions

        sessions.append(key, "user", text)
        sessions.append(key, "assistant", answer)
        err = sessions.flush()  # a chat that could not be saved is told so
        if not err:
            return answer
        return answer + ("\n\n" + err,) if isinstance(answer, tuple) else answer + "\n\n" + err
    except MemoryError as e:  # say so: never a silently shorter prompt or history
        failures += 1
        llm = None
        _forget()
        mimi.spare(False)  # room for the line and the reply
        log.exception("agent", "turn for %s:%s" % (msg.channel, msg.chat_id), e)
        return TOO_BIG
    except Exception as e:  # one bad turn must not stop the agent
        failures += 1
        log.exception("agent", "turn for %s:%s" % (msg.channel, msg.chat_id), e)
        return _SORRY % (str(e) or type(e).__name__)
    finally:
        if llm is not None and hasattr(llm, "stream"):
            llm.stream = None  # (kept for the next turn, which may be nobody's)
        if short(True):  # a short heap keeps nothing of a turn but the LLM connection, its
            _forget(True)  # code neither: kept, it leaves the loop too little room to send a
            # long answer (its formatter's code and parts) and breaks up the next turn's room
        busy = False
        _alive()


# The turn's phases that load code run in frames of their own: the modules and
# functions a frame's value stack held stay there, roots the GC scans, until the frame
# returns; in run_message's they kept the code _forget() had let go (the LLM calls' ~8 KB
# at the session's save; the store's 6.3 KB until the calls began).

def _llm(msg):
    """The turn's LLM provider (built per turn: settings changed on the REPL apply
    without a reboot), with the connection a turn on a short heap kept."""
    global _kept
    from mimi.llm import provider

    if _kept:
        provider.keep(_kept)
        _kept = None
    llm = provider.from_config(config.cfg)
    if config.cfg.get("stream") and hasattr(llm, "stream") and channels.get(msg.channel).label:
        llm.stream = _partials(msg)  # a person waits: the answer shows as it comes
    if getattr(getattr(llm, "client", None), "tls", False):  # its code now, before the
        from mimi.net import tls  # noqa: F401 - turn's data: the heap is least broken up now
    return llm


def _calls(llm, system, history, text, msg):
    """The turn's LLM calls and tools -> (answer, error)."""
    if getattr(llm, "stream", None):  # its code now, before the calls' data: not beside
        from mimi.llm import stream  # noqa: F401 - the prompt's making and the history's read
    from mimi.agent import react
    from mimi.tools.registry import Ctx, registry

    turn = react.run_turn(llm, system, history, text, registry, Ctx(msg.channel, msg.chat_id),
                          _progress(msg) if channels.get(msg.channel).label else None)
    return turn.text, turn.error


def _history(key, enc):
    """The session's history for the turn (the prompt's code gone first on a short heap:
    the two never share the heap, nor with the calls' code)."""
    from mimi.memory import sessions

    history = sessions.load(key, enc)
    if short():  # back for the save, after the LLM calls (unless it holds lines a
        if not sessions._pending:  # full flash refused: _forget())
            unload("mimi.memory.sessions")
        unload("mimi.jsonscan")
    return history


def _partials(msg):
    """The answer's text so far, for the chat (llm/stream.py calls it at most every
    STREAM_PARTIAL_MS). Never waits: with the outbound queue full it is skipped, and
    the next one says all of it."""
    def put(text):
        bus.outbound.put(bus.Msg(msg.channel, msg.chat_id, text, bus.PARTIAL, msg.meta))

    return put


def _forget(keep=False):
    """What a turn leaves goes (a short heap, or a turn that found no room): the agent
    path's code (loaded again by the next turn), so that the loop has the room to send
    the answer or the apology. keep (a short heap): the idle LLM connection stays for
    the next turn (provider.drop()), held here while its provider's module is unloaded,
    and with it the client's module (its code lives as long as the client anyway)."""
    global _kept
    provider = sys.modules.get("mimi.llm.provider")  # (no import: this must work without room)
    if provider:
        if _kept:  # (not handed over yet: never dropped unclosed)
            provider.keep(_kept)
        _kept = provider.drop(keep)  # its buffer and objects (net/tls.py keeps the roots)
    elif _kept and not keep:
        _kept[1].close()
        _kept = None
    provider = None
    # the sessions' module stays while it holds lines a full flash refused: the chat was
    # told they are kept in memory until a restart (sessions.flush())
    held = getattr(sys.modules.get("mimi.memory.sessions"), "_pending", None)
    for name in ("mimi.memory.sessions", "mimi.llm.anthropic", "mimi.llm.openai",
                 "mimi.llm.failure", "mimi.llm.stream", "mimi.jsonscan",
                 "mimi.agent.react", "mimi.agent.act", "mimi.agent.context", "mimi.llm.provider", "mimi.llm",
                 "mimi.tools.registry", "mimi.tools", "mimi.memory.store", "mimi.memory.skills", "mimi.memory",
                 "mimi.net.httpsync", "mimi.net.httpbody"):
        if not (_kept and name == "mimi.net.httpsync" or held and name == "mimi.memory.sessions"):
            unload(name)
    import gc

    gc.collect()


_kept = None  # (settings' signature, idle LLM client): _forget(True) to the next turn


def _release(llm):
    """Between turns the LLM connection stays open (a TLS handshake saved per turn)
    unless the board can't afford it next to the others (net/tls.py)."""
    if getattr(getattr(llm, "client", None), "_wrapped", False):
        from mimi.net import tls

        if tls.tight():
            llm.close()


def _put_out(msg, timeout_ms=None):
    """Outbound full: retry with short sleeps (the loop drains it), never drop a reply."""
    if bus.outbound.put(msg):
        return True
    if timeout_ms is not None:
        return bus.outbound.put_wait(msg, timeout_ms)
    while not bus.outbound.put_wait(msg, limits.AGENT_OUT_WARN_MS):
        log.warning("agent", "outbound queue full for %ds; still holding a reply for %s",
                    limits.AGENT_OUT_WARN_MS // 1000, msg.session)
        _alive()
    return True


def handle(msg):
    """Status, turn, reply: what the thread does with one inbound message. Out of memory
    anywhere on the way (a status, a log line, the reply itself): what the turn loaded
    is freed, with the spare (mimi.spare()), and the person gets TOO_BIG once."""
    mimi.spare()  # (given back when a turn or its reply found no room)
    try:
        log.info("agent", "turn for %s (%d chars)", msg.session, len(msg.content or ""))
        reply = _refused(msg)
        if reply is None:
            if channels.get(msg.channel).label:  # a person waits: show that a turn runs
                _put_out(bus.Msg(msg.channel, msg.chat_id, "working", bus.STATUS, msg.meta),
                         limits.AGENT_STATUS_WAIT_MS)
            reply = run_message(msg)
        if reply:
            _put_out(bus.Msg(msg.channel, msg.chat_id, reply, bus.REPLY, msg.meta))
    except MemoryError:
        reply = None
        _forget()
        mimi.spare(False)
        if channels.get(msg.channel).label:
            _put_out(bus.Msg(msg.channel, msg.chat_id, TOO_BIG, bus.REPLY, msg.meta))
        log.error("agent", "no room in the heap for a turn of %s; told so", msg.session)


def _scrub(n=_SCRUB_CALLS):
    """Write over the stack a turn used below the loop with frames that hold nothing
    but small ints. The GC scans this thread's stack as roots, word by word, and the
    idle wait (bus.get_blocking: time.sleep_ms) leaves holes in its frames: a pointer
    a turn left in one kept a finished coroutine or the code of a module dropped since
    (telegram/format.py's 6 KB) in the heap until the next turn, minutes on an idle
    board (docs/reliability.md, "Soak")."""
    return _scrub(n - 1) if n else 0


def _roots():
    """The LLM's TLS roots (net/tls.py: made once, kept) made before the first turn's
    code and data are in the heap: made by its first request, their 1.4-1.8 KB blocks
    were wanted at that turn's peak (the whole firmware without Telegram over TLS, which
    makes them on a board, failed there at 232 + 32 KB on 32-bit .mpy)."""
    base = config.cfg.get("api_base") or config.DEFAULT_BASE.get(config.cfg.get("provider"), "")
    if base.startswith("https://"):
        from mimi.net import tls

        if not tls.made:  # (once: a changed setting is the request's to see)
            try:
                tls.context()
            except Exception:  # no roots, no room: the first request says so
                pass


def _loop():
    global _started, check
    log.info("agent", "agent thread running")
    try:
        while not _stop:
            if check is ASKED:
                try:
                    check = (mimi.run("agent.selftest", "run"), False)
                except Exception as e:  # whatever it is, the version cannot do its job
                    check = ("%s: %s" % (type(e).__name__, e), isinstance(e, MemoryError))
                _alive()
            msg = bus.inbound.get_blocking(1000)
            _alive()
            ledger = sys.modules.get("mimi.usage.ledger")  # loaded by the first turn
            if ledger:
                ledger.tick()
                ledger = None
            if msg is not None:
                try:
                    handle(msg)
                except Exception as e:
                    log.exception("agent", "handling %r" % (msg,), e)
                msg = None
                _scrub()
    finally:
        _started = False
        if "mimi.usage.ledger" in sys.modules:
            sys.modules["mimi.usage.ledger"].tick(True)
        log.info("agent", "agent thread stopped")


def start():
    """Start the agent thread once (stack size set explicitly: TLS and JSON need it)."""
    global _started, _stop
    if _started:
        return False
    _stop = False
    _started = True
    from mimi import board

    board.before_threads()
    _thread.stack_size(limits.AGENT_STACK)
    try:
        _thread.start_new_thread(_loop, ())
    except Exception:
        _started = False
        raise
    finally:
        _thread.stack_size(0)
    return True


def stop():
    """Ask the thread to end after its current turn (tests, restart)."""
    global _stop
    _stop = True


def running():
    return _started
