# MimiClaw for MicroPython: a private AI assistant on an ESP32-S3.
VERSION = "0.1.0"
