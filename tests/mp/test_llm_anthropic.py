# The anthropic provider, HTTP client and ReAct loop against the fake anthropic API
# (tests/fakes/llm.py), over loopback TLS. The scenarios live in llmcases.py.
import llmcases as c

FIXTURES = ("fake_anthropic",)
HEAP = {"test_big_turn": "256k"}
TIMEOUT = 90
K = "anthropic"


def test_plain_answer():
    c.plain_answer(K)


def test_three_tools_sequential_one_handshake():
    c.three_tools_sequential(K)


def test_three_tools_in_one_response():
    c.three_tools_one_response(K)


def test_429_retry_after_then_success():
    c.retry_429(K)


def test_5xx_then_success():
    c.retry_500(K)


def test_truncated_slow_and_chunked_replies():
    c.transport_failures_retried(K)


def test_401_message_surfaced():
    c.unauthorized(K)


def test_malformed_json():
    c.malformed_json(K)


def test_think_stripped():
    c.think_stripped(K)


def test_empty_content_with_tool_calls():
    c.empty_content_with_tool_calls(K)


def test_unknown_tool_and_bad_args_reach_model():
    c.unknown_tool_and_bad_args(K)


def test_too_many_calls_in_one_response():
    c.too_many_calls_in_one_response(K)


def test_iteration_cap_message():
    c.iteration_cap(K)


def test_plain_http_api_base():
    c.plain_http_base(K)


def test_validator_catches_mismatched_tool_result_id():
    c.validator_catches_mismatched_id(K)


def test_big_turn():
    c.big_turn(K)


def test_cache_survives_memory_change():
    c.cache_survives_memory_change(K)
