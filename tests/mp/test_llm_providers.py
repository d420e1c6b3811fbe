# Both providers, the HTTP client and the ReAct loop against the fake Anthropic and
# OpenAI APIs (tests/fakes/llm.py) over loopback TLS: every test runs once per
# provider (PARAMS). The scenarios live in llmcases.py.
import llmcases as c

PARAMS = {"anthropic": ("fake_anthropic",), "openai": ("fake_openai",)}
TIMEOUT = 90


def test_plain_answer(kind):
    c.plain_answer(kind)


def test_three_tools_sequential_one_handshake(kind):
    c.three_tools_sequential(kind)


def test_three_tools_in_one_response(kind):
    c.three_tools_one_response(kind)


def test_429_retry_after_then_success(kind):
    c.retry_429(kind)


def test_5xx_then_success(kind):
    c.retry_500(kind)


def test_truncated_slow_and_chunked_replies(kind):
    c.transport_failures_retried(kind)


def test_401_message_surfaced(kind):
    c.unauthorized(kind)


def test_malformed_json(kind):
    c.malformed_json(kind)


def test_think_stripped(kind):
    c.think_stripped(kind)


def test_empty_content_with_tool_calls(kind):
    c.empty_content_with_tool_calls(kind)


def test_unknown_tool_and_bad_args_reach_model(kind):
    c.unknown_tool_and_bad_args(kind)


def test_too_many_calls_in_one_response(kind):
    c.too_many_calls_in_one_response(kind)


def test_iteration_cap_message(kind):
    c.iteration_cap(kind)


def test_plain_http_api_base(kind):
    c.plain_http_base(kind)


def test_validator_catches_mismatched_tool_result_id(kind):
    c.validator_catches_mismatched_id(kind)


def test_tool_results_spilled_on_a_short_heap(kind):
    c.tool_results_spilled_on_a_short_heap(kind)


def test_tool_table_spilled_on_a_short_heap(kind):
    c.tool_table_spilled_on_a_short_heap(kind)


def test_connection_kept_past_the_provider(kind):
    c.connection_kept_past_the_provider(kind)
