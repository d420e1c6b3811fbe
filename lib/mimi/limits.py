# Every size, count and interval of the firmware, in one place.
# Sizes are bytes unless the name says otherwise.
try:
    from micropython import const
except ImportError:  # host tools (CPython) read these numbers too
    def const(x):
        return x

# Filesystem
BLOCK_SIZE = const(4096)
FS_OFFSET = const(0x200000)  # where MicroPython's auto "vfs" partition starts
SPIFFS = "/spiffs"
CONFIG_PATH = "/config.json"
DEFAULTS_DIR = "/defaults"  # pristine copies of spiffs_data/, installed at boot
DEFAULTS_RECORD = "/spiffs/.defaults.json"
CA_BUNDLE = "/certs/roots.pem"

# Message bus
BUS_QUEUE_LEN = const(16)
AGENT_STACK = const(32 * 1024)
AGENT_IDLE_MS = const(50)

# Agent / LLM (SPEC §9)
MAX_TOOL_ITER = const(10)
MAX_TOOL_CALLS = const(4)
TOOL_OUTPUT_MAX = const(8 * 1024)
HISTORY_MAX = const(20)
MAX_TOKENS_DEFAULT = const(4096)
LLM_TIMEOUT_S = const(120)
LLM_RETRIES = const(3)
LLM_BACKOFF_MAX_S = const(30)
HTTP_RESPONSE_MAX = const(256 * 1024)
HTTP_HEADER_MAX = const(8 * 1024)

# System prompt (SPEC §11)
PROMPT_MAX = const(16 * 1024)
MEMORY_MAX = const(4 * 1024)
NOTES_MAX = const(4 * 1024)
NOTES_DAYS = const(3)
SKILLS_MAX = const(2 * 1024)

# Files
FILE_READ_MAX = const(32 * 1024)
SESSION_FILE_MAX = const(64 * 1024)

# WebSocket gateway (SPEC §7)
WS_PORT = const(18789)
WS_MAX_CLIENTS = const(4)
WS_FRAME_MAX = const(16 * 1024)

# Telegram (SPEC §8)
TG_POLL_TIMEOUT_S = const(30)
TG_MSG_MAX = const(4096)

# Cron / heartbeat
CRON_MAX_JOBS = const(16)
CRON_TICK_S = const(60)
HEARTBEAT_MIN_DEFAULT = const(30)

# Logging
LOG_RING = const(64)
LOG_LINE_MAX = const(240)

# Host simulator: exit code that asks tools/sim to boot again (machine.reset()).
SIM_RESET_EXIT = const(75)
