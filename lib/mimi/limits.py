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
# LittleFS as the firmware mounts it (boot.py remounts the board's root, flashmount.py):
# reads of 128 bytes into a 512-byte cache, where MicroPython's defaults read 32 into
# 128, so a path look-up reads a folder's metadata log in a quarter of the flash reads
# (docs/benchmarks.md §13), for 0.8 KB more heap on the mount and 384 B per open file.
# The lookahead (bytes, 8 blocks each) finds free blocks 1024 at a time, not 256 per
# walk of the whole filesystem. None of it is stored on the flash, but files up to the
# cache's size are kept inline in their folder's metadata: mount what the firmware
# wrote with these, never with a smaller cache (docs/board.md).
FS_READ_SIZE = const(128)
FS_PROG_SIZE = const(32)
FS_LOOKAHEAD = const(128)
SPIFFS = "/spiffs"
CONFIG_PATH = "/config.json"
DEFAULTS_DIR = "/defaults"  # pristine copies of spiffs_data/, installed at boot
DEFAULTS_RECORD = "/spiffs/.defaults.json"
CA_BUNDLE = "/certs/roots.pem"

# Message bus
BUS_QUEUE_LEN = const(16)
BUS_CHAT_QUEUED = const(4)  # inbound messages one chat may have waiting (the others still get in)
AGENT_STACK = const(32 * 1024)
AGENT_IDLE_MS = const(50)
POLL_PREGROW = const(64)  # unix port: poll slots made before any ThreadSafeFlag (bus.prepare_loop)

# Agent / LLM (SPEC §9)
MAX_TOOL_ITER = const(10)
MAX_TOOL_CALLS = const(4)
TOOL_OUTPUT_MAX = const(8 * 1024)
TOOL_ARGS_MAX = const(16 * 1024)  # a call's arguments (they ride on every later call of the turn)
TURN_TOOL_BYTES = const(24 * 1024)  # tool output one turn may collect (it is re-sent every call)
TOOL_OUTPUT_MIN = const(256)  # less of that budget left: no more tools this turn
HISTORY_MAX = const(20)
SENDER_NAME_MAX = const(32)  # chars of a group sender's name starting its lines ("Ann: ...")
MAX_TOKENS_DEFAULT = const(4096)
LLM_TIMEOUT_S = const(120)
LLM_RETRIES = const(3)
LLM_BACKOFF_MAX_S = const(30)
LLM_BACKOFF_BASE_S = const(1)  # first retry wait; doubles each retry up to the max
LLM_ERROR_BODY_MAX = const(300)  # chars of an error body quoted in messages and logs
SSE_LINE_MAX = const(32 * 1024)  # one event of a streamed answer (a server may send a whole
# tool call in one: TOOL_ARGS_MAX, JSON-escaped, fits)
STREAM_PARTIAL_MS = const(250)  # the text so far of a streamed answer goes out at most this often
STREAM_PARTIAL_MAX = const(8 * 1024)  # ... while it is at most this long (each is a copy: the reply brings the rest)
STREAM_PARTIAL_SHORT = const(2 * 1024)  # ... when the heap is short (mimi.short())
STREAM_PIECE_SHORT = const(512)  # a streamed answer is kept in pieces this big on a short heap (else PROMPT_CHUNK)
READ_PIECE_SHORT = const(512)  # ... and read_file's text (else 1 KB): mid-turn a 1 KB block was what failed
HTTP_RESPONSE_MAX = const(256 * 1024)
HTTP_HEADER_MAX = const(8 * 1024)  # a whole response head (lines are read one by one)
HTTP_SINK_MAX = const(64 * 1024 * 1024)  # a body handed to a sink piece by piece (Telegram's updates)
HTTP_RECV_BUF = const(2048)  # per client: receive buffer (a longer header line is dropped)
TG_RECV_BUF = const(512)  # ... Telegram's: held the whole time by the long poll; JSON read piece by piece (its head lines are short)
HTTP_PIECES_COLLECT = const(16 * 1024)  # a chunked body's pieces: gc.collect() this often
HTTP_REDIRECTS = const(3)  # followed by OTA downloads (update/download.py)

# Usage ledger (usage/ledger.py, usage/file.py) and its caps' defaults (SPEC §5)
USAGE_PATH = "/usage.jsonl"  # outside /spiffs: no file tool reaches it
USAGE_DAYS = const(31)  # days kept in it
USAGE_SAVE_MS = const(60 * 1000)  # written at most this often (and at a day's end, at shutdown)
USAGE_LINE_MAX = const(2048)  # bytes of one day's line read back (its models); longer: skipped
USAGE_MODELS_MAX = const(8)  # models counted apart in one day; more are added to "other"
MAX_CALLS_HOUR = const(100)
MAX_CALLS_DAY = const(1000)
STATUS_DETAIL_MAX = const(60)  # chars of a progress status's detail (a tool's query, path...)

# TLS (net/tls.py). What one more TLS connection needs in the C heap on the board:
# mbedTLS's 16 KB input + 4 KB output record buffers (sdkconfig ASYMMETRIC_CONTENT_LEN)
# and ~15 KB more at the handshake's peak (micropython#8940, #6065), plus an lwIP
# socket (4-7 KB). Below this largest free block a loop client (Telegram's long poll)
# closes its connection while the agent's LLM call runs; with PSRAM it never does.
TLS_CONN_ROOM = const(44 * 1024)
TLS_ROOT_ROOM = const(8 * 1024)  # below this, a root that fails to parse = out of memory
TLS_YIELD_WAIT_MS = const(2000)  # an LLM call waits at most this for the others to close
TLS_YIELD_POLL_MS = const(50)
TLS_RETRY_S = const(30)  # a context that could not be made is tried again after this (or a changed file)
# The `ca_file` setting's roots (net/tlsroots.py): what the file and one certificate in it
# may have (a root is 1-2 KB; the shipped bundle of 15 roots is 21 KB of PEM), the PEM
# text read this much at a time, and how many skipped certificates the log names one by one.
CA_FILE_MAX = const(32 * 1024)
CA_CERT_MAX = const(4 * 1024)
CA_LINE_MAX = const(128)
CA_SKIPPED_NAMED = const(4)

# System prompt (SPEC §11)
PROMPT_MAX = const(16 * 1024)
MEMORY_MAX = const(4 * 1024)
NOTES_MAX = const(4 * 1024)
NOTES_DAYS = const(3)
SKILLS_MAX = const(2 * 1024)
PROMPT_CHUNK = const(1024)  # the prompt (and a message's long text) is read and JSON-escaped in pieces this big
ESCAPE_STEP = const(256)  # ... each JSON-escaped this many characters at a time (not 0.5-1 KB blocks at once)
HEAP_SHORT = const(96 * 1024)  # less free: a turn drops code after use (mimi.short())
HEAP_SPARE = const(768)  # kept aside for telling a person that memory ran out (mimi.spare())
PROMPT_SPILL = "/prompt.tmp"  # and escapes the prompt into this file (outside /spiffs)
TURN_SPILL = "/turn.tmp"  # ... and the turn's tool calls and results into this one
TOOLS_SPILL = "/tools.tmp"  # ... and the request's tool table (llm/provider.py)
ANSWER_SPILL = "/answer.tmp"  # ... and a streamed answer's text while it comes (llm/stream.py)

SKILL_TITLE_MAX = const(64)
SKILL_DESC_MAX = const(256)
SKILL_HEAD_READ = const(1024)  # bytes of a skill file read for its title/description

# Files
FILE_READ_MAX = const(32 * 1024)
FILE_WRITE_MAX = const(64 * 1024)
PATH_MAX = const(192)  # bytes of a path the file tools accept
# Flash the file tools' files never take, beside room for an OTA copy of the code: the
# system's own files (settings, sessions, cron.json, offsets) always save.
FILES_RESERVE = const(256 * 1024)
FILES_QUOTA_MAX_KB = const(64 * 1024)  # highest files_quota_kb accepted
LIST_DIR_MAX = const(4096)  # bytes of list_dir output
SESSION_FILE_MAX = const(64 * 1024)
SESSION_KEEP = const(24 * 1024)  # tail kept when a session file is compacted
SESSION_LINE_MAX = const(16 * 1024)  # longest JSONL line written or loaded
HISTORY_BYTES_MAX = const(32 * 1024)  # loaded history budget; oldest pairs dropped
SESSION_READ_BLOCK = const(1024)  # tail reads go backwards in blocks this big
SESSION_PENDING_MAX = const(8 * 1024)  # buffered appends flushed at this size
SESSION_NAME_MAX = const(64)  # chars of a session key used in its file name


# Sockets. lwIP on the board has LWIP_SOCKETS for everything at once (TCP, UDP,
# listeners); one more fails with ENFILE (errno 23), and a connection the gateway
# cannot accept is reset unseen. The worst case online adds up to that limit:
#   gateway listener 1 + WS_MAX_CONN + SOCK_TELEGRAM + SOCK_AGENT + SOCK_UDP
# and while onboarding (never online, so no Telegram, LLM or DNS):
#   gateway 1 + WS_MAX_CONN + portal listener 1 + PORTAL_CLIENTS + captive DNS 1
# (an ota_update() run by hand while the agent searches the web takes one more).
# A firmware built with more sockets: raise LWIP_SOCKETS, the gateway gets the rest.
LWIP_SOCKETS = const(10)  # CONFIG_LWIP_MAX_SOCKETS: ESP-IDF's default, MicroPython's esp32 builds keep it
SOCK_TELEGRAM = const(2)  # the long poll and the sender, each a keep-alive TLS connection
SOCK_AGENT = const(2)  # the LLM's keep-alive connection, and a tool's meanwhile (web search)
SOCK_UDP = const(1)  # the loop's DNS and NTP take turns (dns.exchange)

# WebSocket gateway (SPEC §7)
WS_PORT = const(18789)
WS_MAX_CLIENTS = const(4)
WS_FRAME_MAX = const(16 * 1024)  # one frame, and a whole fragmented message
WS_FRAGMENTS_MAX = const(64)  # frames of one fragmented message (gateway and client)
WS_BIG_MAX = const(1024 * 1024)  # the client: a frame over its limit, up to this, can be read in pieces ...
WS_BIG_PIECE = const(2048)  # ... this big (net/wsclient.py recv(big=...): Feishu's long events)
# open TCP connections (clients, handshakes, page loads): what the socket budget leaves
WS_MAX_CONN = const(LWIP_SOCKETS - 1 - SOCK_TELEGRAM - SOCK_AGENT - SOCK_UDP)
WS_HEADER_MAX = const(4096)  # HTTP request head
WS_HANDSHAKE_TIMEOUT_S = const(5)  # from accept to the upgrade (or the page): then the socket goes
WS_PEER_PENDING = const(2)  # connections one address has open before their upgrade; its oldest goes
WS_PEER_CONN = const(4)  # connections one address has open in all
# A server short of sockets (gateway, portal: net/httpserver.shed()) never sheds a client
# sending its request; one that began it this long ago and has not finished has stalled.
HTTP_HEAD_GRACE_MS = const(2000)
SHED_RECENT = const(32)  # addresses counted (connections opened, shed): the most counted goes first among equals
SHED_COUNT_MAX = const(64)  # ... and all counts halved when one reaches this
WS_TOKEN_MIN = const(12)  # characters of a ws_token (empty = auth off)
WS_AUTH_BACKOFF_S = const(1)  # a wrong token: that address is refused (429) this long, doubling
WS_AUTH_BACKOFF_MAX_S = const(300)  # ... up to this, until a right token
WS_AUTH_PEERS = const(16)  # addresses whose failed tokens are remembered; the others share one back-off
WS_AUTH_FORGET_S = const(300)  # an address's back-off ended this long ago: forgotten
WS_PING_S = const(60)  # a silent client is pinged; silent this long again, dropped
WS_FRAME_TIMEOUT_S = const(30)  # a started frame must be complete this soon
WS_WRITE_TIMEOUT_S = const(20)
WS_NO_ROOM_TRIES = const(4)  # a frame that found no room in the heap is tried again (after 50 ms, doubling)
WS_CLOSE_WAIT_S = const(3)  # wait for the peer's close frame after ours
WS_CLIENT_OUTBOX = const(32)  # frames queued for one client; a client this far behind is dropped
WS_CLIENT_OUTBOX_BYTES = const(64 * 1024)  # ... or this many bytes behind
WS_DRAIN_MAX = const(64 * 1024)  # bytes of a refused frame read and discarded to close cleanly
WS_CHAT_ID_MAX = const(31)
WS_CHAT_ID_RANDOM = const(8)  # random bytes of a default chat id (16 hex chars)
WS_PORT_TRIES = const(32)  # ws_port 0: random free ports tried
WS_PORT_ANY = (20000, 32000)  # ws_port 0 picks from here (below Linux's ephemeral range)
DISPATCH_LANE_MAX = const(32)  # outbound messages waiting for one channel
DISPATCH_LOST_MAX = const(4)  # chats a lane keeps to tell that a reply was dropped when it was full (more: only logged)
AGENT_STATUS_WAIT_MS = const(1000)  # outbound full: a "working" status waits at most this
AGENT_OUT_WARN_MS = const(10000)  # outbound full this long with a reply: warn (and keep trying)
AGENT_CLOCK_WAIT_MS = const(15000)  # a turn right after boot waits this long for NTP (TLS needs the date)

# Sending a message on a chat channel (channels/sending.py: Telegram and Feishu)
SEND_RETRIES = const(3)  # rate limits / 5xx / connect failures per message part
SEND_RETRY_AFTER_MAX_S = const(300)  # a service's own wait (429 retry_after, Feishu's reset) up to this
SEND_HOLD_MIN_S = const(1)  # a reply held while the service is unreachable: tried again after
SEND_HOLD_MAX_S = const(60)  # ... 1, 2, 4 ... up to this, for as long as it takes

# Telegram (SPEC §8)
TG_POLL_TIMEOUT_S = const(30)
TG_MSG_MAX = const(4096)  # UTF-16 units of visible text (after entity parsing)
TG_MSG_SHORT = const(1024)  # ... a part that found no room in the heap goes again in pieces this long
TG_LINE_MAX = const(8 * 1024)  # a longer markdown line (a paragraph) is formatted in pieces this long, cut at
# a space (emphasis open across a cut shows its marks): no block of the work is bigger
TG_POLL_LIMIT = const(10)  # updates per getUpdates batch (fewer while the heap is short)
TG_UPDATE_MAX = const(64 * 1024)  # bytes of one update taken (a third of the free heap at most); bigger: skipped
TG_UPDATE_MIN = const(4096)  # ... unless the heap has no block this big: then just its size, or the batch waits
TG_UPDATE_HEAD = const(256)  # bytes of an update kept to name it (update_id, chat) when it cannot be taken
TG_STUCK_TRIES = const(5)  # polls an update finds no room before it is skipped and its sender told
TG_ERROR_MAX = const(1024)  # bytes of an error answer read
TG_ECHO_PEEK = const(128)  # ... of an answer to a message sent, looked at first for an ok and its message_id
TG_HTTP_SLACK_S = const(15)  # long poll deadline = poll timeout + this
TG_SEND_TIMEOUT_S = const(20)  # sendMessage / sendChatAction / getMe deadline
TG_BACKOFF_MIN_S = const(1)  # poll errors: 1, 2, 4 ... capped
TG_BACKOFF_MAX_S = const(60)
TG_CONFLICT_MIN_S = const(5)  # 409 (another instance or a webhook): retried slowly,
TG_CONFLICT_MAX_S = const(60)  # the wait doubling up to this
TG_BAD_TOKEN_S = const(300)  # 401/404: token refused; re-checked this often or on change
TG_RETRY_AFTER_MAX_S = const(300)  # a 429 retry_after is honoured up to this (every call for that chat waits it)
TG_TYPING_S = const(4)  # "typing" lasts ~5 s on Telegram: renewed this often
TG_PROGRESS_AFTER_S = const(10)  # a turn running this long shows a progress message (channels/telegram/status.py)
TG_EDIT_MIN_S = const(3)  # ... edited at most this often (Telegram's edit rate limits)
TG_STREAM_EDIT_S = const(1)  # a streamed answer's message: edited at most this often (in a group TG_EDIT_MIN_S: 20 a minute there)
TG_TYPING_MAX_S = const(300)  # typing stops after this even if no reply came (the progress message stays the turn's)
TG_STRANGER_S = const(3600)  # a chat outside tg_allow is told its id once per this
TG_STRANGERS_MAX = const(32)  # chats remembered for that
TG_DEDUP = const(64)  # recent (chat, message_id) pairs remembered
TG_OFFSET_SAVE_EVERY = const(50)  # ignored updates: offset saved after this many
TG_OFFSET_PATH = "/tg_offset.json"  # outside /spiffs: no file tool reaches it

# Feishu / Lark (SPEC §8a)
FEISHU_MSG_MAX = const(8 * 1024)  # UTF-8 bytes of one reply part
FEISHU_RICH_MAX = const(30 * 1024)  # Feishu's cap on a post/card request body; a bigger part goes as text
FEISHU_FRAME_MAX = const(16 * 1024)  # one WebSocket message of the long connection
FEISHU_PAYLOAD_MAX = const(32 * 1024)  # an event joined from several frames (header sum > 1)
# An event over those (a message of 9,000 CJK characters is 27 KB) is read in pieces and
# its sender told it was too long (channels/feishu/big.py): its JSON kept without the strings
FEISHU_LONG_STRING = const(512)  # ... longer than this (the text; ids and types are short),
FEISHU_LONG_KEPT = const(8 * 1024)  # ... at most this much of it,
FEISHU_HEADERS_MAX = const(1024)  # ... and each other field of its frame up to this
FEISHU_PARTS = const(8)  # frames one event may be split into
FEISHU_PARTS_WAIT_S = const(5)  # the frames of one event arrive within this, or are dropped
FEISHU_DEDUP = const(64)  # recent message ids remembered: a redelivered event is dropped
FEISHU_PING_S = const(120)  # ping interval until the server sends its own (PingInterval)
FEISHU_PING_MIN_S = const(5)  # the server's PingInterval is kept within these
FEISHU_PING_MAX_S = const(600)
FEISHU_TIMEOUT_S = const(20)  # one API call, the endpoint request, the WebSocket upgrade
FEISHU_BACKOFF_MIN_S = const(1)  # reconnects: 1, 2, 4 ... capped; never given up
FEISHU_BACKOFF_MAX_S = const(60)
FEISHU_JITTER_MAX_S = const(5)  # the server's ReconnectNonce (a random wait before reconnecting), capped
FEISHU_REFUSED_S = const(300)  # credentials or long connection refused: retried this often or on change
FEISHU_TOKEN_MARGIN_S = const(300)  # the tenant token is renewed this long before it expires
FEISHU_STRANGER_S = const(3600)  # an id outside feishu_allow is told its id once per this
FEISHU_STRANGERS_MAX = const(32)  # ids remembered for that
FEISHU_NAMES_MAX = const(32)  # group members' display names remembered

# Devices (SPEC §13: mimi/devices/)
DEVICES_PATH = "/devices.json"  # outside /spiffs: changed only by the device tools and the REPL
DEVICES_BAD = "/devices.bad.json"  # where a corrupt device file is moved aside
DEVICES_MAX = const(16)
DEVICE_NAME_MAX = const(24)
DEVICES_FILE_MAX = const(8 * 1024)  # a bigger device file is treated as corrupt
DEVICES_FILE_NODES = const(4 * DEVICES_MAX)  # lists and objects in it: more is corrupt (16 devices: 18)
DEVICES_PROMPT_MAX = const(1024)  # the system prompt's `## Devices`
READING_ITEMS = const(6)  # quantities a /drivers/ reading keeps (its answer is cut there)
READING_TEXT = const(64)  # characters of a /drivers/ reading's text
DRIVERS_DIR = "/drivers"  # a user's own part types (outside /spiffs: mpremote only)
DRIVER_FILE_MAX = const(16 * 1024)
I2C_FREQ = const(100000)  # the S3's ~45 kOhm internal pull-ups are too weak for 400 kHz
I2C_TIMEOUT_US = const(10000)  # a stuck bus holds the caller (the loop too) at most this
I2C_RAW_MAX = const(32)  # bytes one i2c_io call reads or writes
RGB_LED_MAX = const(150)  # LEDs of one rgb_led strip (60 mA each at full white: its own supply)
HCSR04_TIMEOUT_US = const(18000)  # an echo waited for at most this (~3 m; time_pulse_us holds its caller)
HCSR04_LAG_US = const(3000)  # trigger to echo's end, past the echo's width, beyond which a reading may have
# started late (a thread switch): measured again (the part's own delay: 0.2-2.3 ms by the modules measured)
ADC_SAMPLES = const(16)  # read_uv() samples averaged per reading
BUZZER_MAX_MS = const(5000)  # the longest tone
DEVICE_STACK = const(8 * 1024)  # the short thread a slow read (DHT, HC-SR04) runs on for the loop

# Sensor history (services/history/: the store's format and rules are at the top of store.py)
HISTORY_DIR = "/history"  # outside /spiffs: the system's own space, not the file tools' quota
HISTORY_STEP_S = const(300)  # the long tier's resolution: readings more often are averaged per slot
HISTORY_SEGMENTS = const(8)  # long-tier segment files kept per device (7 full: >= 8.2 days at 5 min)
HISTORY_FINE_SEGMENTS = const(5)  # ... and of the short tier, kept only when log_min < 5 (>= 22 h at 1 min)
# A tier's readings wait in RAM until this many (30 minutes' at log_min 1) ...
HISTORY_BATCH = const(30)
HISTORY_FLUSH_S = const(3600)  # ... or the oldest is this old (at the next reading): each flush
# rewrites a file's last block, so at 5 minutes it is an hour's 12 (24 flushes a day)
HISTORY_PENDING_MAX = const(60)  # readings kept per tier while the flash refuses them; then the oldest go
HISTORY_BACK_S = const(300)  # a reading up to this much older than the last kept one (the clock
# stepped back) is kept at that time; an older one is dropped
_HISTORY_DEVICES = const(DEVICES_MAX)  # devices whose history the cap below makes room for (all of them)
# Its own cap: every device's segments (each file one flash block) at most
HISTORY_CAP = const(_HISTORY_DEVICES * (HISTORY_SEGMENTS + HISTORY_FINE_SEGMENTS) * BLOCK_SIZE)
HISTORY_READ_CHUNK = const(512)  # bytes read per open while a range is streamed
HISTORY_POINTS = const(12)  # points in time a summary gives (device_history)
CHART_W = const(480)  # the PNG chart's size in pixels
CHART_H = const(240)
CHART_SPILL = "/chart_%s.tmp"  # a chart's PNG waits here to be sent (outside /spiffs; a few random hex digits)
CHART_COLUMNS = const(160)  # columns of a chart's JSON form (the chat page draws the SVG)
LOG_MIN_MAX = const(1440)  # a device's log_min (minutes between logged readings; 0: not logged)

# Rules (SPEC §14: services/rules/): the body acting on its own, no LLM call unless "ask"
RULES_PATH = "/rules.json"  # outside /spiffs: changed only by the rule tools and the REPL
RULES_BAD = "/rules.bad.json"  # where a corrupt rule file is moved aside
RULES_MAX = const(16)
RULES_FILE_MAX = const(16 * 1024)  # a bigger rule file is treated as corrupt
RULE_NAME_MAX = const(32)
RULE_TEXT_MAX = const(200)  # a notice's text, an ask's prompt
RULE_EVERY_S = const(10)  # how often a rule reads its device when not told
RULE_EVERY_MAX_S = const(86400)
RULE_COOLDOWN_S = const(60)  # a notify or ask rule fires at most this often (unless told)
RULE_COOLDOWN_MIN_S = const(10)  # ... and never more often than this
RULE_NOTICES_HOUR = const(20)  # notices and asks of all rules in one hour; the rest summed up
RULE_HELD_MAX = const(8)  # notices kept while offline (the rest counted and summed up)
RULE_BACKOFF_MAX_S = const(300)  # a device that fails to read is retried at most this far apart
RULE_PASS_ROOM = const(32 * 1024)  # less free (a turn at its peak on a short heap): a pass (~14-16 KB) waits...
RULE_HOLD_MS = const(5000)  # ... at most this long (services/rules/__init__.py run())

# Cron / heartbeat
CRON_MAX_JOBS = const(16)
CRON_TICK_S = const(60)  # longest sleep of the scheduler between checks
CRON_BUSY_RETRY_S = const(2)  # inbound queue full: try the due job again this soon
CRON_FILE_MAX = const(16 * 1024)  # a bigger cron.json is treated as corrupt
CRON_NAME_MAX = const(31)
CRON_MESSAGE_MAX = const(255)
CRON_CHAT_ID_MAX = const(95)
CRON_MIN_INTERVAL_S = const(60)  # an "every" job runs at most once a minute (16 jobs at 1 s made 304 LLM calls in 20 s)
CRON_MAX_INTERVAL_S = const(366 * 86400)
CRON_AT_MAX = 4102444800  # 2100-01-01: the latest at_epoch (2**63 was accepted)
HEARTBEAT_MIN_DEFAULT = const(30)
HEARTBEAT_FILE_MAX = const(4 * 1024)  # read this much of HEARTBEAT.md for the check
HEARTBEAT_POLL_S = const(60)  # how often the loop re-reads heartbeat_min

# Clock (SNTP)
NTP_TIMEOUT_S = const(2)  # one query; the loop is never blocked longer than DNS + this
NTP_RESYNC_S = const(6 * 3600)
NTP_RETRY_MIN_S = const(15)
NTP_RETRY_MAX_S = const(600)

# Web search
SEARCH_RESULTS = const(5)
SEARCH_TIMEOUT_S = const(15)
SEARCH_QUERY_MAX = const(255)  # URL-encoded query, bytes (Brave)
SEARCH_SNIPPET_MAX = const(400)
SEARCH_TITLE_MAX = const(160)

# heap_info(): the largest free block is probed up to this, in steps this fine
HEAP_PROBE_MAX = const(64 * 1024)
HEAP_PROBE_STEP = const(256)
HOST_MODULES_ROOM = const(64)  # unix port: room made in sys.modules before the agent thread starts,
HOST_PACKAGE_ROOM = const(24)  # ... and in each package of the firmware (board.before_threads)
# A heap this small (no PSRAM) is collected every GC_THRESHOLD bytes allocated (app.py)
GC_SMALL_HEAP = const(512 * 1024)
GC_THRESHOLD = const(8 * 1024)

# Logging
LOG_RING = const(64)  # lines recent() gives at most
LOG_LINE_MAX = const(240)
LOG_RING_BYTES = const(2048)  # the ring of recent lines (log_tail): about 25 of them

# Onboarding portal (access point + captive DNS + settings page)
AP_IP = "192.168.4.1"  # the ESP32 AP's default address; the captive DNS answers it
AP_CHANNEL = const(1)
AP_MAX_CLIENTS = const(4)
AP_PASS_LEN = const(12)
PORTAL_PORT = const(80)
PORTAL_BODY_MAX = const(2048)
PORTAL_DRAIN_MAX = const(16 * 1024)  # a larger refused body is not read away
PORTAL_HEADER_MAX = const(2048)
PORTAL_CLIENTS = const(LWIP_SOCKETS - 1 - WS_MAX_CONN - 2)  # the socket budget's rest while onboarding
PORTAL_READ_TIMEOUT_S = const(10)
PORTAL_PEER_PENDING = const(2)  # requests one address may have unfinished; its oldest goes
PORTAL_AUTH_BACKOFF_S = const(1)  # a wrong current secret: none looked at for this long, doubling
PORTAL_AUTH_BACKOFF_MAX_S = const(300)  # ... up to this, until a right one
PORTAL_SCAN_MAX = const(20)
PORTAL_SCAN_TTL_S = const(30)
PORTAL_SCAN_POLL_MS = const(50)  # the loop looks this often whether the scan thread is done
SCAN_STACK = const(8 * 1024)  # the short-lived WiFi scan thread (wlan.scan() blocks 2-3 s)
PORTAL_CHECK_S = const(5)  # how often the portal looks at the WiFi state
PORTAL_AFTER_FAILS = const(1)  # failed WiFi attempts (never online since boot) before the AP opens
PORTAL_PORT_ANY = (32000, 40000)  # port 0 (tests) picks from here
PORTAL_PORT_TRIES = const(32)
AP_AUTH_WPA2 = const(3)  # network.AUTH_WPA2_PSK
DNS_PORT = const(53)
DNS_TTL_S = const(60)  # what the captive DNS tells phones
DNS_PACKET_MAX = const(512)
DNS_TIMEOUT_MS = const(2000)  # the resolver (net/dns.py): one wait for the answer ...
DNS_TRIES = const(2)  # ... and how many times the question is sent
DNS_CACHE_MAX = const(8)  # names remembered
DNS_CACHE_MIN_S = const(60)  # an answer is reused at least this long ...
DNS_CACHE_MAX_S = const(3600)  # ... and at most this long (its TTL in between)

# Over-the-air updates
OTA_DIR = "/ota"  # staging (new/), previous version (prev/), state.json
OTA_TOPS = ("lib/mimi", "defaults", "certs", "boot.py", "main.py")  # swapped whole; other /lib packages (mip) stay
OTA_MANIFEST_MAX = const(32 * 1024)
OTA_FILE_MAX = const(1024 * 1024)
OTA_BUNDLE_MAX = const(4 * 1024 * 1024)
OTA_CHUNK = const(4096)
OTA_TRIAL_BOOTS = const(2)  # a new version that fails to come up this often is rolled back
OTA_DEADLINE_S = const(900)  # a whole download (bundle or image), redirects included
OTA_IDLE_S = const(30)  # nothing received this long: the download ends (the server stalled)
OTA_RATE_WINDOW_S = const(30)  # a download's pace is judged over this long:
OTA_RATE_MIN = const(512)  # ... fewer bytes/s, or a pace that cannot end within OTA_DEADLINE_S, ends it
OTA_PACE_MS = const(250)  # how often a download's pace is looked at
OTA_STATE = "/ota/state.json"  # the update state (update/boot.py)
OTA_CONFIRM = "/ota/confirm.json"  # a trial boot's state as confirmed: confirming renames it in (no big allocation)
OTA_CHECK_TRIES = const(3)  # a version on trial whose check finds no room in the heap is checked this often,
OTA_CHECK_RETRY_S = const(20)  # ... this far apart, then confirmed on what it showed (never rolled back for it)
OTA_CHECK_AGENT_S = const(300)  # the agent thread does its part of the check within this (a turn may run first)

# Watchdog and safe mode
WDT_TIMEOUT_MS = const(60000)  # hardware watchdog: no feed this long resets the board
WDT_FEED_S = const(5)
WDT_AGENT_IDLE_S = const(30)  # an idle agent thread shows life every second
WDT_AGENT_STALL_S = const(180)  # agent thread busy with no progress and no declared deadline
WDT_BLOCK_MARGIN_S = const(30)  # grace after a blocking call's own deadline
SAFE_MODE_BOOTS = const(3)  # crash-boots in a row before safe mode
HEALTHY_AFTER_S = const(60)  # up this long = the boot counts as good
HEALTHY_RETRY_S = const(10)  # ... marked so again this often while the heap has no room for it

# Stall detector (services/loopwatch.py)
LOOP_STALL_MS = const(200)  # a loop step (or a late wake-up) this long is logged
LOOP_TICK_MS = const(250)  # the heartbeat's sleep

# Serial console (mimi.console) while the firmware runs
CONSOLE_LINE_MAX = const(1024)
CONSOLE_RAW_POLL_MS = const(50)  # loop held this long after each mpremote byte
CONSOLE_RAW_IDLE_MS = const(60000)  # raw REPL without Ctrl-B for this long -> friendly again
CONSOLE_RAW_MAX = const(8 * 1024)  # one raw-REPL command (mpremote sends 1-2 KB; `run` a whole file)
CONSOLE_PASTE_WINDOW = const(128)  # raw-paste flow control: 2 windows fit the UART's 260-byte ring

# WiFi supervisor (services/wifi.py)
WIFI_CONNECT_TIMEOUT_S = const(20)  # one association + DHCP attempt
WIFI_BACKOFF_MIN_S = const(1)
WIFI_BACKOFF_MAX_S = const(60)  # capped; retries never stop (MimiClaw gave up after 10)
WIFI_CHECK_S = const(5)  # link/IP check while online
WIFI_RENEW_S = const(600)  # re-check the AP and lease this often (#169: new router, same SSID)
WIFI_POLL_MS = const(250)  # while waiting for a connection attempt
WIFI_FAIL_GRACE_MS = const(8000)  # a failure code equal to the previous attempt's is stale until then
WIFI_SUSPECT_MAX = const(3)  # network failures reported while online before a forced reconnect

# Host simulator: exit code that asks tools/sim to boot again (machine.reset()).
SIM_RESET_EXIT = const(75)

# Each name here is an entry of this module's table, held by every boot: MicroPython
# sizes a table by primes (..., 293, 389, 521): up to 388 names take 389 slots (3.1 KB
# on the board), one more takes 521 (+1 KB). Numbers read only in this file are
# underscored (folded away by the compiler, no entry).
del const
