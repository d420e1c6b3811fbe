# The rule file read (/rules.json, limits.RULES_PATH; its shape: services/rules/book.py):
# what the engine and a firing rule need of the rule book, without book.py's checks and
# words (names MicroPython interns for good when a .mpy loads: the rules' loop holds
# as few as it can). A file that is not that shape is moved aside to limits.RULES_BAD
# with a log line; the firmware runs without rules.
import json
from mimi import limits, log, fs

TAG = "rules"
WHEN = ("above", "below", "changes", "rises", "falls", "pressed")
THEN = ("set", "notify", "ask")


def read():
    """The rules of the file ([] without one); a damaged file is moved aside."""
    try:
        if fs.size(limits.RULES_PATH) > limits.RULES_FILE_MAX:
            raise ValueError("over %d bytes" % limits.RULES_FILE_MAX)
        text = fs.read_text(limits.RULES_PATH, limits.RULES_FILE_MAX)
    except OSError:
        return []
    try:
        rules = json.loads(text)["rules"]
        ids = set()
        for r in rules:
            if not isinstance(r.get("id"), int) or r["id"] in ids or r.get("when") not in WHEN or \
                    r.get("then") not in THEN or not isinstance(r.get("device"), str):
                raise ValueError("rule %r" % (r.get("id"),))
            ids.add(r["id"])
        return rules
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        try:
            fs.rename(limits.RULES_PATH, limits.RULES_BAD)
            where = "moved aside to " + limits.RULES_BAD
        except OSError as x:
            where = "could not be moved aside (%s)" % fs.why(x)
        log.error(TAG, "%s is damaged (%s): %s; no rules run", limits.RULES_PATH, e, where)
        return []
