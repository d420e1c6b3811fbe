# The usage ledger: its resident counters and caps (ledger.py), its file (file.py), its report (report.py).
