# The rule tools (SPEC §14): rule_add, rule_list, rule_remove. The rule book
# (services/rules/book.py, loaded for the call) checks and keeps the rules; the loop of
# devices.body() runs them, told of each change (devices.changed()).
import mimi
from mimi import fs, channels, devices


def rule_add(args, ctx):
    ch = ctx.channel if ctx and ctx.channel and channels.get(ctx.channel).label else None
    try:  # a rule made on the REPL, or in a cron or heartbeat turn, tells the owner
        text = mimi.run("services.rules.book services.rules.upkeep", "add", args, ch, ctx.chat_id if ch else None)
    except OSError as e:
        return "Error: not saved (%s); no rule was added" % fs.why(e)
    except ValueError as e:
        return "Error: %s; no rule was added" % e
    devices.changed()
    return "OK: " + text


def rule_list(args, ctx):
    return mimi.run("services.rules.book services.rules.upkeep", "listing")


def rule_remove(args, ctx):
    rid = args.get("id")
    try:
        r = mimi.run("services.rules.book services.rules.upkeep", "remove", rid)
    except OSError as e:
        return "Error: not saved (%s); nothing changed" % fs.why(e)
    if r is None:
        return "Error: no rule %s (rule_list shows their ids)" % str(rid)[:16]
    devices.changed()
    note = " (%s stays as it is)" % r["target"] if r["then"] == "set" else ""
    return "OK: removed rule %d (%s)%s" % (r["id"], r["name"], note)
