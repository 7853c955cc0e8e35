"""Every conversation sample: detection picks its format, and ``show -o json`` output reads back equal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trajrun.sources import FORMATS, load_trajectory, read_trajectory

DATA = Path(__file__).parent / "data"

BEDROCK = "samples/bedrock_converse/pydantic_ai_cassette_tooluse_error_result.json"
RESPONSES = "samples/openai_responses/sdk_responses_model_dump.json"
OPENINFERENCE = "samples/openinference/otlp_trace_openinference_openai.json"

# (file under tests/data, select, the format detection must pick)
SAMPLES = [
    ("samples/agentevals/extracted_thread_trajectory_two_turns.json", "$.extracted", "graph"),
    ("samples/anthropic/sdk_message_model_dump.json", "$.message_model_dump", "anthropic"),
    ("samples/anthropic/sdk_message_model_dump.json", "$.message_model_dump_exclude_none", "anthropic"),
    ("samples/anthropic/sdk_message_model_dump.json", "$.typical_saved_history", "anthropic"),
    (BEDROCK, "$.interactions[0].request_body", "bedrock"),
    (BEDROCK, "$.interactions[1].request_body", "bedrock"),
    (BEDROCK, "$.interactions[0].response_body", "bedrock"),
    (BEDROCK, "$.interactions[1].response_body", "bedrock"),
    ("samples/elixir_langchain/trajectory_to_map_golden.json", None, "trajectory"),
    ("samples/gemini/pydantic_ai_cassette_gemini2_then_openai.json", "$.interactions[0].request_body", "gemini"),
    ("samples/gemini/pydantic_ai_cassette_gemini2_then_openai.json", "$.interactions[1].request_body", "gemini"),
    ("samples/gemini/pydantic_ai_cassette_gemini2_then_openai.json", "$.interactions[0].response_body", "gemini"),
    ("samples/gemini/pydantic_ai_cassette_gemini2_then_openai.json", "$.interactions[1].response_body", "gemini"),
    ("samples/gemini/pydantic_ai_cassette_gemini2_then_openai.json", "$.interactions[2].request_body", "openai"),
    ("samples/gemini/pydantic_ai_cassette_gemini2_then_openai.json", "$.interactions[3].request_body", "openai"),
    ("samples/gemini/pydantic_ai_cassette_gemini2_then_openai.json", "$.interactions[2].response_body", "openai"),
    ("samples/gemini/pydantic_ai_cassette_gemini2_then_openai.json", "$.interactions[3].response_body", "openai"),
    ("samples/gemini/sdk_google_genai_content_dump.json", "$.content_model_dump_json_mode_exclude_none", "gemini"),
    ("samples/gemini/sdk_google_genai_content_dump.json", "$.content_model_dump_by_alias", "gemini"),
    ("samples/google_adk/events_snake_case.json", None, "gemini"),
    ("samples/google_adk/session_by_alias_camelCase.json", "$.session", "gemini"),
    ("samples/google_adk/generated.evalset.json", "$.evalset", "gemini"),
    ("samples/langchain/dumpd_lc_serialization.json", None, "langchain"),
    ("samples/langchain/messages_to_dict.json", None, "langchain"),
    ("samples/langchain/model_dump.json", None, "langchain"),
    ("samples/langgraph/checkpoint_tuple_deserialized.json", None, "langgraph"),
    ("samples/langgraph/get_state_messages_to_dict.json", None, "langgraph"),
    ("samples/langgraph/legacy_json_checkpoint_langgraph_checkpoint_1.0.0.json", None, "langgraph"),
    ("samples/openai_chat/pydantic_ai_cassette_tool_retry.json", "$.interactions[2].request_body", "openai"),
    ("samples/openai_chat/pydantic_ai_cassette_tool_retry.json", "$.interactions[0].response_body", "openai"),
    ("samples/openai_chat/sdk_chat_completion_model_dump.json", "$.message_model_dump", "openai"),
    ("samples/openai_chat/sdk_chat_completion_model_dump.json", "$.message_model_dump_exclude_none", "openai"),
    ("samples/openai_chat/sdk_chat_completion_model_dump.json", "$.completion_model_dump_json", "openai"),
    ("samples/openai_chat/sdk_chat_completion_model_dump.json", "$.typical_saved_history", "openai"),
    ("samples/openai_responses/sdk_responses_model_dump.json", "$.typical_input_list", "openai-responses"),
    ("samples/openai_responses/sdk_responses_model_dump.json", "$.response_output_model_dump", "openai-responses"),
    (RESPONSES, "$.response_output_model_dump_exclude_none", "openai-responses"),
    ("samples/otel_genai/otlp_trace_genai_semconv.json", None, "otel"),
    ("samples/otel_genai/spans_flat_genai_semconv.json", None, "otel"),
    ("samples/openinference/spans_flat_openinference_openai.json", None, "otel"),
    (OPENINFERENCE, "$..spans[?(@.traceId == '1b4a6c01c2aa53583070582904b8d2c2')]", "otel"),
    ("sources/openai_legacy_function_call.json", None, "openai"),
    ("sources/openai_argument_encodings.json", None, "openai"),
    ("sources/openai_responses_response.json", None, "openai-responses"),
    ("sources/openai_responses_builtin_calls.json", None, "openai-responses"),
    ("sources/anthropic_server_tools.json", None, "anthropic"),
    ("sources/bedrock_server_tool_use_nova.json", None, "bedrock"),
    ("sources/adk_legacy_tool_uses.evalset.json", None, "gemini"),
    ("sources/langchain_content_blocks.json", None, "langchain"),
    ("sources/trajectory_own.yaml", None, "trajectory"),
]  # fmt: skip
IDS = [f"{name.split('/')[-1]}{select or ''}" for name, select, _ in SAMPLES]


def test_formats_are_in_detection_order() -> None:
    """FORMATS lists the formats in the contract's detection order (a format added later goes anywhere in it)."""
    contract = ("otel", "graph", "langgraph", "trajectory", "anthropic", "gemini", "bedrock", "openai-responses",
                "langchain", "openai")  # fmt: skip
    assert tuple(fmt for fmt in FORMATS if fmt in contract) == contract


@pytest.mark.parametrize(("name", "select", "expected"), SAMPLES, ids=IDS)
def test_detection_picks_the_format(name: str, select: str | None, expected: str) -> None:
    """Auto-detection names the sample's own format, and reading it explicitly gives the same run."""
    detected = load_trajectory(DATA / name, select=select)
    assert detected.format == expected
    assert load_trajectory(DATA / name, select=select, format=expected) == detected


@pytest.mark.parametrize(("name", "select", "expected"), SAMPLES, ids=IDS)
def test_show_json_reads_back_equal(name: str, select: str | None, expected: str) -> None:
    """``Trajectory.to_dict()`` through JSON text reads back as format trajectory, equal in every field."""
    original = load_trajectory(DATA / name, select=select)
    again = read_trajectory(json.loads(json.dumps(original.to_dict())), origin="show.json")
    assert again == original
    assert [c.has_result for c in again.calls] == [c.has_result for c in original.calls]
