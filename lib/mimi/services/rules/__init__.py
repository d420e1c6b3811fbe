# Rules (SPEC §14): the body acting on its own. engine.py is the loop's state (resident
# while rules or device logging exist; the loop is devices.body()), check.py one pass of
# it, upkeep.py the rule file read and what the loop needs now and then (the rules
# loaded, a batch of readings written), book.py the rules' checks, changes and words,
# act.py what a firing notify or ask rule sends (all loaded for that and dropped).
