"""Bookkeeping that several server processes share stays right on PostgreSQL (issue 10).

Each test starts a few Django processes on one database that hammer the same rows at the
same moment (each waits until all of them are ready), then checks the invariant.
"""

import json

import pytest

pytestmark = pytest.mark.scale

PROCESSES = 4

# Every process notes in a common folder that it is ready (Django set up) and waits until
# all have, so their writes really overlap however long a start takes on a busy machine.
_BARRIER = f"""
import os, sys, time
ready = sys.argv[1]
open(os.path.join(ready, str(os.getpid())), "w").close()
while len(os.listdir(ready)) < {PROCESSES}:
    time.sleep(0.005)
"""


def _ready_folder(tmp_path) -> str:
    folder = tmp_path / "ready"
    folder.mkdir()
    return str(folder)


def test_calibration_loses_no_sample_under_concurrent_processes(on_postgres, tmp_path):
    config_id = on_postgres.run(
        "from contextmgmt.models import ModelConfig\n"
        "print(ModelConfig.objects.create(name='calib', model='m', role='fast').pk)"
    ).strip()
    per_process = 50
    record = _BARRIER + (
        "from contextmgmt.calibration import record_usage\n"
        "from contextmgmt.core.tokens import BASE_WEIGHTS, CLASSES\n"
        "counts = [0] * len(CLASSES); counts[0] = 1000  # 1,000 lower-case letters\n"
        "fixed = 1000 - round(BASE_WEIGHTS[0] * 1000)  # a base estimate of 1,000 tokens\n"
        "for _ in range(int(sys.argv[3])):\n"
        "    assert record_usage(model_config_id=int(sys.argv[2]), counts=counts,\n"
        "                        fixed_tokens=fixed, reported_tokens=1200)\n"
    )
    ready = _ready_folder(tmp_path)

    on_postgres.run_parallel(
        record, [[ready, config_id, str(per_process)] for _ in range(PROCESSES)]
    )

    facts = json.loads(
        on_postgres.run(
            "import json; from contextmgmt.models import ModelConfig\n"
            f"c = ModelConfig.objects.get(pk={config_id})\n"
            "print(json.dumps([c.token_ratio_samples, c.token_ratio]))"
        )
    )
    assert facts[0] == PROCESSES * per_process  # no lost update
    assert facts[1] == pytest.approx(1.2, rel=1e-3)  # every sample said 1200 / 1000


def test_summaries_only_move_forward_under_concurrent_processes(on_postgres, tmp_path):
    # One conversation with 40 messages; every process saves summaries covering them in the
    # same ascending order, so all processes race to store "through message i" at once.
    # Stored summaries must cover strictly more, in the order they were stored: no
    # duplicates, nothing backwards (chat.compaction.summaries.summary_save locks the conversation).
    setup = (
        "import json; from django.contrib.auth import get_user_model\n"
        "from chat.models import Conversation, Message\n"
        "import uuid\n"
        "u = get_user_model().objects.create_user(username='s-' + uuid.uuid4().hex[:8])\n"
        "c = Conversation.objects.create(owner=u)\n"
        "ids = [Message.objects.create(conversation=c, role='user' if i % 2 == 0 else "
        "'assistant', content=f'm{i}').pk for i in range(40)]\n"
        "print(json.dumps({'conversation': str(c.pk), 'ids': ids}))"
    )
    created = json.loads(on_postgres.run(setup).strip().splitlines()[-1])
    save = _BARRIER + (
        "import json\n"
        "from chat.compaction.summaries import summary_save\n"
        "for i in json.loads(sys.argv[3]):\n"
        "    summary_save(conversation_id=sys.argv[2], summary=f'through {i}',\n"
        "                 covers_through_id=i, covered_count=1)\n"
    )
    ready = _ready_folder(tmp_path)
    argv = [ready, created["conversation"], json.dumps(created["ids"])]

    on_postgres.run_parallel(save, [argv for _ in range(PROCESSES)])

    stored = json.loads(
        on_postgres.run(
            "import json; from chat.models import ContextSummary\n"
            "from chat.compaction.summaries import summary_latest\n"
            f"rows = ContextSummary.objects.filter(conversation_id='{created['conversation']}')"
            ".order_by('id').values_list('covers_through_id', flat=True)\n"
            f"latest = summary_latest(conversation_id='{created['conversation']}')\n"
            "print(json.dumps({'covers': list(rows), 'latest': latest.covers_through_id}))"
        )
    )
    covers = stored["covers"]
    assert covers == sorted(set(covers))  # each stored summary covers more than the last
    assert stored["latest"] == max(created["ids"])
