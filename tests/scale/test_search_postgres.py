"""Full-text search on PostgreSQL (RF.4, RJ.3): the SQLite scenarios of
tests/chat/search/test_conversations.py — a project's files recalled from its own
conversations among them — run in a Django subprocess against the private PostgreSQL
server, plus the GIN index."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.scale.django_procs import REPO_ROOT
from tests.support import search_scenarios

pytestmark = pytest.mark.scale

_SCENARIOS = """
import sys
from django.db import connection
from tests.support import search_scenarios
assert connection.vendor == "postgresql", connection.vendor
for name in sys.argv[1:]:
    getattr(search_scenarios, name)()
    print("passed", name)
"""

_PLAN = """
import json
from django.db import connection
from chat.search.conversations import search
from tests.support.search_scenarios import make_user, new_conversation, say

owner = make_user()
say(new_conversation(owner), "The plover nests on shingle.")
with connection.cursor() as cursor:
    cursor.execute("SET enable_seqscan = off")
    from chat.models import SearchDocument
    from django.contrib.postgres.search import SearchQuery, SearchVector
    query = SearchDocument.objects.annotate(
        vector=SearchVector("terms", config="simple")
    ).filter(vector=SearchQuery("'plover'", search_type="raw", config="simple"))
    plan = query.explain()
hits = search(query="plover", owner_id=owner.pk)
print(json.dumps({"plan": plan, "hits": [h.document.body for h in hits]}))
"""


def test_search_scenarios_on_postgresql(on_postgres):
    names = [scenario.__name__ for scenario in search_scenarios.ALL]
    out = on_postgres.run(_SCENARIOS, *names)
    assert out.split() == [word for name in names for word in ("passed", name)]


def test_the_gin_index_serves_the_query(on_postgres):
    facts = json.loads(on_postgres.run(_PLAN).strip().splitlines()[-1])
    assert "searchdoc_terms_gin" in facts["plan"], facts["plan"]
    assert facts["hits"] == ["The plover nests on shingle.", "The plover nests on shingle."]


def test_rebuild_command_on_postgresql(on_postgres):
    on_postgres.run(
        "from tests.support.search_scenarios import new_conversation, say\n"
        "say(new_conversation(title='Avocet'), 'The avocet sweeps its bill.')\n"
        "from chat.models import SearchDocument\n"
        "SearchDocument.objects.all().delete()\n"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "rebuild_search_index"],
        cwd=REPO_ROOT,
        env=on_postgres.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    count = on_postgres.run(
        "from chat.models import SearchDocument\n"
        "print(SearchDocument.objects.filter(body__contains='vocet').count())"
    )
    assert count.strip() == "2"
