"""Layer 5 arithmetic (SPEC R5.1, R5.4); resolution from DB/env lives in contextmgmt.budget."""

SYSTEM_PROMPT_RESERVE = 4000
MIN_INPUT_BUDGET = 4000
DEFAULT_CONTEXT_SIZE = 128_000
DEFAULT_MAX_OUTPUT_TOKENS = 64_000


def usable_input_tokens(context_size: int, max_output_tokens: int) -> int:
    """context − output − reserve, never below the 4,000-token floor (R5.1, R5.4)."""
    return max(MIN_INPUT_BUDGET, context_size - max_output_tokens - SYSTEM_PROMPT_RESERVE)
