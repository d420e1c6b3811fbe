# Rules (SPEC §14): the body acting on its own. engine.py is the loop task (resident
# while rules or device logging exist), book.py the rule file and its checks, act.py
# what a firing notify or ask rule sends (both loaded for that and dropped).
