"""Token budget arithmetic; where the inputs come from (database, environment) is
``contextmgmt.budget``'s business."""

SYSTEM_PROMPT_RESERVE = 4000
MIN_INPUT_BUDGET = 4000
DEFAULT_CONTEXT_SIZE = 128_000
DEFAULT_MAX_OUTPUT_TOKENS = 64_000
# No model has a context window this large; a bigger number is a typo (an extra 0 or three)
# or an endpoint's nonsense.
MAX_CONTEXT_SIZE = 10_000_000


def usable_input_tokens(context_size: int, max_output_tokens: int) -> int:
    """context − output − reserve, never below the 4,000-token floor."""
    return max(MIN_INPUT_BUDGET, context_size - max_output_tokens - SYSTEM_PROMPT_RESERVE)


def effective_input_tokens(usable: int, ratio: float) -> int:
    """The budget in fimone-estimated tokens for a model whose tokenizer counts ``ratio``
    times the estimate: shrunk when the provider counts more, never below the floor.

    A ratio below 1 (the provider counts fewer) never enlarges the budget: the heuristic's
    error margin is the only safety we have.
    """
    if ratio <= 1.0:
        return usable
    return max(MIN_INPUT_BUDGET, int(usable / ratio))
