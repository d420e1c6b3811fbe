# MimiClaw for MicroPython. `make test` and `make run` set themselves up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum < requirements.txt | cut -d' ' -f1)
FLASH ?= 8M
SECRETS ?= secrets.json
TEST_ARGS ?=

.PHONY: setup test run image clean help

help:
	@echo "make test            run the whole test suite (sets itself up)"
	@echo "make run             run the firmware on this computer (gateway on 127.0.0.1:18789)"
	@echo "make image           build the LittleFS image into build/ (FLASH=8M|16M)"

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $@

setup: $(STAMP)

test: setup
	$(BIN)/python -m pytest -n 2 --dist loadfile $(TEST_ARGS)

run: setup
	$(BIN)/python tools/sim $(SIM_ARGS)

image: setup
	$(BIN)/python tools/mkimage.py --flash $(FLASH) -o build/fs-$(FLASH).img \
		$(if $(wildcard $(SECRETS)),--config $(SECRETS))

clean:
	rm -rf build .pytest_cache
