# MimiClaw for MicroPython. `make test` and `make run` set themselves up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum < requirements.txt | cut -d' ' -f1)
FLASH ?= 8M
SECRETS ?= secrets.json
TEST_ARGS ?=

.PHONY: setup test lint run bench image bundle browser proxies mp32 frozen clean help flash deploy mpremote-config fuzz

help:
	@echo "make test            run the whole test suite (sets itself up)"
	@echo "make run             run the firmware on this computer (gateway on 127.0.0.1:18789)"
	@echo "make image           build the LittleFS image into build/ (FLASH=8M|16M), and with"
	@echo "                     FIRMWARE=ESP32_GENERIC_S3-....bin one merged build/mimiclaw-FLASH.bin"
	@echo "make flash PORT=/dev/ttyACM0 FIRMWARE=....bin [FLASH=8M|16M] [SECRETS=secrets.json]"
	@echo "                     erase the board, write MicroPython and the filesystem image"
	@echo "make deploy PORT=... [MIP=1] [FORCE=1]  copy the code to a running board (user data kept)"
	@echo "make mpremote-config install the mpremote shortcuts (memory-read, config-show, ...)"
	@echo "make bundle          build the OTA update bundle into build/ (OTA_KEY=... signs it; SIM=1: for the simulator)"
	@echo "make bench           run the benchmarks (bench/, results in docs/benchmarks.md)"
	@echo "make frozen          build MicroPython's unix port with the firmware frozen in (build/mpy/;"
	@echo "                     FROZEN_BITS=\"32 64\", MPY_SRC=checkout or tarball)"
	@echo "make powercut        1,200 seeded power cuts on the firmware's files (CUTS=, SEED=)"
	@echo "make soak            10,000 messages through WebSocket and Telegram under a capped heap,"
	@echo "                     and the fault tests with 3-minute LLM and Telegram outages"
	@echo "make fuzz            the long fuzzing run (FUZZ_CASES per test, FUZZ_SEED; docs/reliability.md)"

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $@

setup: $(STAMP)

test: setup lint mp32 frozen $(if $(wildcard /usr/bin/chromium),,browser) $(if $(and $(wildcard /usr/sbin/squid),$(wildcard /usr/sbin/danted)),,proxies)
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder $(TEST_ARGS)

lint: setup
	$(BIN)/ruff check .

# The 32-bit MicroPython of ../shared/mp32 (board-sized objects; MP32=path overrides,
# MP32= turns it off) needs the 32-bit C library, and libgcc_s to end a process whose
# threads still run. Optional: nothing fails without it, its tests are left out.
MP32 ?= $(abspath ../shared/mp32/micropython)
export MP32
MP32_PROBE = import _thread,time,sys;_thread.start_new_thread(time.sleep,(5,));time.sleep_ms(20);sys.exit(0)
mp32:
	@if [ ! -x "$(MP32)" ] || "$(MP32)" -c "$(MP32_PROBE)" >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then echo "mp32: $(MP32) needs libc6-i386 and lib32gcc-s1 (sudo apt-get install -y libc6-i386 lib32gcc-s1)"; exit 0; fi; \
	echo "mp32: installing libc6-i386 and lib32gcc-s1 for $(MP32)"; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q libc6-i386 lib32gcc-s1 >/dev/null 2>&1 || \
	{ apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libc6-i386 lib32gcc-s1 >/dev/null 2>&1; } || \
	echo "mp32: apt-get could not install libc6-i386 lib32gcc-s1; 32-bit runs are skipped"

run: setup
	$(BIN)/python tools/sim $(SIM_ARGS)

# MicroPython's unix port with the firmware frozen in, as a custom board firmware has it
# (tools/mpbuild.py): built into build/mpy/ from MPY_SRC (../shared/micropython/'s v1.28.0
# tarball, or a MicroPython checkout), again only when lib/ or the manifest changed. The
# 32-bit one needs a compiler for 32-bit programs (Debian's gcc-multilib, libc6-dev-i386:
# installed here when root). Without the source or the compiler one line says so and the
# tests and benchmark rows that need it are skipped.
MPY_SRC ?= $(abspath ../shared/micropython)
export MPY_SRC
FROZEN_BITS ?= 32
CC32_PROBE = printf 'int main(void){return 0;}\n' | $${CC:-cc} -m32 -x c - -o /dev/null >/dev/null 2>&1
frozen: setup
	@if [ -e "$(MPY_SRC)" ] && echo " $(FROZEN_BITS) " | grep -q " 32 " && ! $(CC32_PROBE) && [ "$$(id -u)" = 0 ]; then \
	echo "frozen: installing gcc-multilib and libc6-dev-i386 for the 32-bit build"; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc-multilib libc6-dev-i386 >/dev/null 2>&1 || \
	{ apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc-multilib libc6-dev-i386 >/dev/null 2>&1; } || \
	echo "frozen: apt-get could not install gcc-multilib libc6-dev-i386"; fi
	@$(BIN)/python tools/mpbuild.py $(foreach b,$(FROZEN_BITS),--bits $(b))

# The fuzz tests (tests/mp/test_fuzz_*.py) with FUZZ_CASES cases each (10 tests: over
# 10,000 cases in all per interpreter) and a new seed each run unless FUZZ_SEED is
# given; a failure names its seed and case (FUZZ_SEED=... FUZZ_CASE=... reruns it).
FUZZ_CASES ?= 2000
FUZZ_SEED ?= $(shell date +%s)
fuzz: setup mp32
	FUZZ_CASES=$(FUZZ_CASES) FUZZ_SEED=$(FUZZ_SEED) MIMI_TIMEOUT_SCALE=$$(( $(FUZZ_CASES) / 150 + 1 )) \
		$(BIN)/python -m pytest -n 2 --dist loadfile tests/mp/test_fuzz_*.py

# Speed and memory figures of this machine (docs/benchmarks.md); tables also in build/bench.md.
# The frozen rows (docs/benchmarks.md §3c) on both word sizes: the 64-bit one is the peer's.
bench: FROZEN_BITS = 32 64
bench: setup mp32 frozen
	$(BIN)/python bench/run_all.py --markdown build/bench.md $(BENCH_ARGS)

# Long reliability runs (issue 16, docs/reliability.md); `make test` runs short versions.
# CUTS=N power cuts (1,200), SEED=N repeats a run; the soak: MESSAGES=N (10,000), and
# the fault tests with outages of OUTAGE=N seconds (180).
.PHONY: powercut soak
powercut: setup
	MIMI_POWERCUT_CUTS=$(or $(CUTS),1200) $(if $(SEED),MIMI_POWERCUT_SEED=$(SEED)) \
		$(BIN)/python -m pytest tests/host/test_powercut.py -p no:xdist -q -s

soak: setup mp32
	MIMI_SOAK_MESSAGES=$(or $(MESSAGES),10000) MIMI_FAULTS_OUTAGE_S=$(or $(OUTAGE),180) \
		$(BIN)/python -m pytest tests/host/test_soak.py tests/host/test_faults.py -p no:xdist -q -s

# SECRETS named on the command line must exist; the default secrets.json is optional.
SECRETS_ARGS = $(if $(filter command line environment,$(origin SECRETS)),--secrets "$(SECRETS)" --secrets-required,$(if $(wildcard $(SECRETS)),--secrets $(SECRETS)))

image: setup
	@$(BIN)/python tools/flash.py image --flash $(FLASH) $(if $(FIRMWARE),--firmware "$(FIRMWARE)") $(SECRETS_ARGS)

flash: setup
	@$(BIN)/python tools/flash.py flash --port "$(PORT)" --firmware "$(FIRMWARE)" --flash $(FLASH) $(SECRETS_ARGS)

deploy: setup
	@$(BIN)/python tools/deploy.py --port "$(PORT)" $(if $(MIP),--mip) $(if $(FORCE),--force)

mpremote-config: setup
	@$(BIN)/python tools/mpremote_config.py install

bundle: setup
	@$(BIN)/python tools/bundle.py $(if $(OTA_KEY),--key $(OTA_KEY)) $(if $(SIM),--sim)

# Headless Chromium for the chat page test (tests/host/test_chat_page.py); skipped there if absent.
browser:
	@if [ -x /usr/bin/chromium ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "browser: /usr/bin/chromium is missing and this is not root; the chat page browser test will be skipped (sudo apt-get install -y chromium)"; exit 0; fi; \
	echo "browser: installing Debian chromium for the chat page test"; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || \
	{ apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; } || \
	echo "browser: apt-get could not install chromium; the chat page browser test will be skipped"

# The real proxies the proxy-authentication tests start (tests/fakes/realproxy.py).
proxies:
	@if [ -x /usr/sbin/squid ] && [ -x /usr/sbin/danted ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "proxies: squid or danted is missing and this is not root; the proxy authentication tests will be skipped (sudo apt-get install -y squid dante-server)"; exit 0; fi; \
	echo "proxies: installing Debian squid and dante-server for the proxy authentication tests"; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q squid dante-server >/dev/null 2>&1 || \
	{ apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q squid dante-server >/dev/null 2>&1; } || \
	echo "proxies: apt-get could not install squid and dante-server; the proxy authentication tests will be skipped"

clean:
	rm -rf build .pytest_cache
