"""RT.2 on PostgreSQL: a whole tool result stored and indexed as a run's finish does it is
found by ``recall`` in the middle, and ``rebuild_search_index`` gives the same passages
(SQLite: tests/chat/search/test_index_tool_results.py), in a Django subprocess on a
database of its own on the private server."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.scale

_RUN = """
import io, json
from django.core.management import call_command
from django.db import connection
from django.contrib.auth import get_user_model
from chat import services
from chat.search import index as search_index
from chat.models import SearchDocument
from chat.recall.lookup import recall_passages
from fimone.agent.tools import KeptResult
assert connection.vendor == "postgresql", connection.vendor
fact = "The vault combination is 31-17-88."
lines = [f"Entry {i}: calm." for i in range(3000)]
lines.insert(1800, fact)
result = "\\n".join(lines)
owner = get_user_model().objects.create_user(username="pg", password="x")
conversation = services.conversation_create(owner=owner, title="ledger")
services.user_message_create(conversation=conversation, content="Open the ledger")
answer = services.assistant_message_start(conversation=conversation, run_id="r", mode="react")
steps = [{"kind": "tool_result", "name": "open_ledger", "result": result[:2000], "call_id": "c"}]
services.tool_results_store(message=answer, results=[KeptResult("c", "open_ledger", "{}", result)])
services.assistant_message_finish(
    message=answer, content="Open.", status="done", extra={"steps": steps}
)
search_index.index_tool_results(message=answer)
tools = SearchDocument.objects.filter(kind="tool")
before = sorted(tools.values_list("body", "terms", "offset", "tool_result_id"))
found = recall_passages(conversation_id=conversation.pk, query="vault combination")
call_command("rebuild_search_index", stdout=io.StringIO())
after = sorted(tools.values_list("body", "terms", "offset", "tool_result_id"))
print(json.dumps({"found": found[:1], "passages": len(before), "same": before == after,
                  "previews": tools.filter(tool_result__isnull=True).count()}))
"""


def test_rt2_a_whole_tool_result_is_recalled_on_postgresql(own_migrated_postgres, tmp_path):
    from tests.scale.django_procs import DjangoSubprocesses, django_env

    procs = DjangoSubprocesses(django_env(tmp_path, DATABASE_URL=own_migrated_postgres))
    out = json.loads(procs.run(_RUN, timeout=300).strip().splitlines()[-1])
    assert out["found"] and "31-17-88" in out["found"][0], out
    assert out["passages"] > 20 and out["same"] and out["previews"] == 0, out
