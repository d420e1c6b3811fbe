# Settings (/config.json): settings.py, what each accepts (rules.py), first-boot default files (defaults.py).
