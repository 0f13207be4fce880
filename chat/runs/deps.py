"""What a run is built with: the models, budgets, memory, engine and tools.

One ``RunDeps`` value holds them. The entry points read the installed one once per run and
hand it down, so a run never looks a collaborator up behind its own back. Tests install
their own (``tests/support/runs.py``: the ``run_deps`` fixture) instead of patching
module functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from chat.documents.context import document_reader_for
from chat.recall.lookup import recall_search_for
from chat.recall.tool_results import tool_result_for
from chat.tool_servers import pool as tool_servers
from chat.tools.fetch import fetch_config
from contextmgmt.budget import Budget, BudgetRole, budget_for_config, builtin_budget
from contextmgmt.budget import resolve_budget as resolve_configured_budget
from contextmgmt.core.llm import LLM
from contextmgmt.db_memory import DbMemory
from fimone.agent import (
    AgentContext,
    AgentOutcome,
    Tool,
    ToolRegistry,
    default_tools,
    run_dag,
    run_react,
)
from fimone.agent.tools import read_document_tool
from fimone.agent.tools.web import fetch_url_tool
from fimone.llm import get_llm as registry_llm
from fimone.llm.registry import Role, get_builtin_llm, get_llm_for_config

Engine = Callable[[AgentContext], Awaitable[AgentOutcome]]


def make_tools(
    conversation_id: Any,
    *,
    before_id: int,
    vision: bool = False,
    documents: bool = False,
    disabled_sources: Collection[str] = (),
    owner_key: str = "",
    project_id: int | None = None,
) -> ToolRegistry:
    """The default tools, with ``recall`` searching this conversation's older messages (and
    images, sent again as pixels when the model can see them: ``vision``), ``fetch_url``
    unless the operator switched it off, ``read_document`` when the conversation has
    documents (``documents``), then the operator's extra tools, but none the user switched
    off for the conversation (``disabled_sources``: a source, or one tool as
    ``tool:<name>`` — the built-in tools are switched one by one). ``owner_key`` (the
    user's id) is whose share of the extraction workers ``fetch_url``'s pages take.
    ``project_id``: the conversation's project, whose files ``recall`` searches and
    ``read_document`` reads too (docs/projects.md)."""
    tools = default_tools(
        recall_search=recall_search_for(
            conversation_id, before_id=before_id, vision=vision, project_id=project_id
        ),
        fetch_result=tool_result_for(conversation_id),
        recall_scope=(
            "this conversation and its project's files"
            if project_id is not None
            else "this conversation"
        ),
    )
    config = fetch_config()
    if config is not None:
        tools.register(fetch_url_tool(dataclasses.replace(config, owner_key=owner_key)))
    if documents:
        tools.register(
            read_document_tool(
                document_reader_for(conversation_id, before_id=before_id, project_id=project_id)
            )
        )
    for tool in extra_tools():
        tools.register(tool)
    return tools.without_switched_off(disabled_sources) if disabled_sources else tools


def extra_tools() -> list[Tool]:
    """The tools of ``FIMONE_EXTRA_TOOLS``: each entry names a callable ("package.module:
    function" or "package.module.function") that returns a list of tools."""
    tools: list[Tool] = []
    for path in settings.FIMONE_EXTRA_TOOLS:
        tools += import_string(path.replace(":", "."))()
    return tools


def engine_for(mode: str) -> Engine:
    return run_dag if mode == "dag" else run_react


@dataclass(frozen=True)
class RunDeps:
    """A run's collaborators. ``get_llm`` / ``resolve_budget`` take a role (``main``,
    ``fast``), ``get_model_llm`` / ``resolve_model_budget`` the ModelConfig id a
    conversation picked as its main model; ``get_builtin_llm`` / ``resolve_builtin_budget``
    are the built-in offline model's, for a conversation that picked it (for both roles);
    ``make_memory`` takes DbMemory's keyword arguments."""

    get_llm: Callable[[Role], LLM] = registry_llm
    resolve_budget: Callable[[BudgetRole], Budget] = resolve_configured_budget
    get_model_llm: Callable[[int], LLM] = get_llm_for_config
    resolve_model_budget: Callable[[int], Budget] = budget_for_config
    get_builtin_llm: Callable[[], LLM] = get_builtin_llm
    resolve_builtin_budget: Callable[[BudgetRole], Budget] = builtin_budget
    make_memory: Callable[..., DbMemory] = DbMemory
    engine_for: Callable[[str], Engine] = engine_for
    make_tools: Callable[..., ToolRegistry] = make_tools
    # The tool servers' tools and the servers left out (``McpToolset``), per run.
    server_tools: Callable[..., Awaitable[Any]] = tool_servers.server_tools

    def replace(self, **changes: Any) -> RunDeps:
        return dataclasses.replace(self, **changes)


_installed = RunDeps()


def current() -> RunDeps:
    """The collaborators new runs are built with."""
    return _installed


def install(deps: RunDeps) -> RunDeps:
    """Build new runs with ``deps``; returns the ones installed before (to restore them)."""
    global _installed
    previous, _installed = _installed, deps
    return previous
