"""The same code on PostgreSQL and Redis, chosen by environment only (issue 10, DESIGN §8).

Each check runs Django in a subprocess with ``DATABASE_URL`` / ``REDIS_URL`` set, the way a
deployment would, against the private servers of ``tests/support/services.py``.
"""

import json
import subprocess
import sys
import uuid

import pytest

from tests.scale.django_procs import REPO_ROOT
from tests.scale.django_procs import django_env as _django_env

pytestmark = pytest.mark.scale


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(
        argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{argv[1:3]} failed:\n{done.stdout}\n{done.stderr}"
    return done


def _fresh_database(postgres_server) -> str:
    return postgres_server.create_database(f"scale_{uuid.uuid4().hex[:12]}")


def test_migrate_and_check_run_on_postgresql(postgres_server, tmp_path):
    env = _django_env(tmp_path, DATABASE_URL=_fresh_database(postgres_server))

    _run([sys.executable, "manage.py", "migrate", "--noinput"], env)
    _run([sys.executable, "manage.py", "check", "--database", "default"], env)
    # Nothing left unmigrated, and the connection really is PostgreSQL with our tables.
    plan = _run([sys.executable, "manage.py", "migrate", "--plan"], env).stdout
    assert "No planned migration operations." in plan
    probe = _run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "import json; from django.db import connection; "
            "tables = connection.introspection.table_names(); "
            "print(json.dumps({'vendor': connection.vendor, 'tables': tables}))",
        ],
        env,
    )
    facts = json.loads(probe.stdout.strip().splitlines()[-1])
    assert facts["vendor"] == "postgresql"
    for table in ("chat_conversation", "chat_message", "chat_contextsummary"):
        assert table in facts["tables"]
    assert "contextmgmt_modelconfig" in facts["tables"]


_LAYER_PROBE = """
import asyncio, json
import django
django.setup()
from channels.layers import get_channel_layer

async def roundtrip():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("scale-probe", channel)
    await layer.group_send("scale-probe", {"type": "probe.ping", "n": 7})
    message = await asyncio.wait_for(layer.receive(channel), timeout=10)
    await layer.group_discard("scale-probe", channel)
    return type(layer), message

cls, message = asyncio.run(roundtrip())
print(json.dumps({"backend": f"{cls.__module__}.{cls.__qualname__}", "message": message}))
"""


def test_redis_url_switches_the_channel_layer_to_channels_redis(redis_server, tmp_path):
    env = _django_env(tmp_path, REDIS_URL=redis_server.url)

    done = _run([sys.executable, "-c", _LAYER_PROBE], env)

    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["backend"] == "fimone.redis_layer.RedisChannelLayer"  # channels-redis inside
    assert facts["message"] == {"type": "probe.ping", "n": 7}


def test_without_redis_url_the_channel_layer_is_in_memory(tmp_path):
    done = _run([sys.executable, "-c", _LAYER_PROBE], _django_env(tmp_path))

    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["backend"] == "fimone.memory_layer.InMemoryChannelLayer"


_IDLE_PROBE = """
import asyncio, json, os
import django
django.setup()
import redis.asyncio
from channels.layers import get_channel_layer

async def idle_then_receive():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    server = redis.asyncio.from_url(os.environ["REDIS_URL"])

    async def bzpopmin_calls():
        stats = await server.info("commandstats")
        return stats.get("cmdstat_bzpopmin", {}).get("calls", 0)

    before = await bzpopmin_calls()

    async def late_send():
        # Once channels-redis's 5 s BZPOPMIN has come back empty and the receive has asked
        # again: the receive went idle at least once.
        async with asyncio.timeout(60):
            while await bzpopmin_calls() < before + 2:
                await asyncio.sleep(0.1)
        await layer.send(channel, {"type": "probe.late"})

    sender = asyncio.create_task(late_send())
    message = await layer.receive(channel)
    await sender
    return message

print(json.dumps(asyncio.run(idle_then_receive())))
"""


def test_an_idle_socket_survives_the_redis_read_timeout(redis_server, tmp_path):
    # redis-py 8 defaults to a 5 s socket timeout; without a longer one in settings, an
    # idle consumer's receive dies with "Timeout reading from …" (every websocket, every 5 s).
    env = _django_env(tmp_path, REDIS_URL=redis_server.url)

    done = _run([sys.executable, "-c", _IDLE_PROBE], env)

    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"type": "probe.late"}


_BURST_PROBE = """
import asyncio, json
import django
django.setup()
from channels.layers import get_channel_layer

async def burst():
    layer = get_channel_layer()
    channels = [await layer.new_channel() for _ in range(300)]
    # 300 sockets joining at once, as after a deploy: 300 commands in flight together.
    await asyncio.gather(*(layer.group_add("burst", c) for c in channels))
    await layer.group_send("burst", {"type": "burst.hello"})
    got = await asyncio.gather(*(layer.receive(c) for c in channels))
    return sum(1 for m in got if m == {"type": "burst.hello"})

print(json.dumps(asyncio.run(burst())))
"""


def test_a_burst_of_sockets_does_not_exhaust_the_redis_pool(redis_server, tmp_path):
    # redis-py 8 caps a connection pool at 100 and raises "Too many connections" beyond;
    # settings size channels-redis's pool for a process's sockets.
    env = _django_env(tmp_path, REDIS_URL=redis_server.url)

    done = _run([sys.executable, "-c", _BURST_PROBE], env)

    assert json.loads(done.stdout.strip().splitlines()[-1]) == 300


_DISCONNECT_PROBE = """
import asyncio, json, os, threading, time
import django
django.setup()
import redis.asyncio
from channels.layers import get_channel_layer
from django.conf import settings

def send_from_another_process(channel, message):
    # Another server process publishes (its own layer, its own event loop) while this
    # process's event loop is busy: the message is popped by Redis, not yet read here.
    async def go():
        from channels.layers import channel_layers
        other = channel_layers.make_backend("default")
        await other.send(channel, message)
        await other.close_pools()
    thread = threading.Thread(target=lambda: asyncio.run(go()))
    thread.start()
    thread.join()

async def bzpopmin_calls(server):
    stats = await server.info("commandstats")
    return stats.get("cmdstat_bzpopmin", {}).get("calls", 0)

async def trial(layer):
    closing, other_socket = await layer.new_channel(), await layer.new_channel()
    server = redis.asyncio.from_url(os.environ["REDIS_URL"])
    before = await bzpopmin_calls(server)
    closing_receive = asyncio.create_task(layer.receive(closing))  # holds the receive lock
    async with asyncio.timeout(30):  # and pops for the whole process, once Redis has it
        while await bzpopmin_calls(server) == before:
            await asyncio.sleep(0.01)
    await server.aclose()
    other_receive = asyncio.create_task(layer.receive(other_socket))
    await asyncio.sleep(0.05)
    send_from_another_process(other_socket, {"type": "chat.event"})
    time.sleep(0.1)
    closing_receive.cancel()  # that socket's websocket closed
    try:
        await asyncio.wait_for(other_receive, 10)
        return True
    except TimeoutError:
        return False

async def main():
    layer = get_channel_layer()
    return [await trial(layer) for _ in range(3)]

print(json.dumps(asyncio.run(main())))
"""


def test_a_closing_socket_does_not_drop_another_sockets_message(redis_server, tmp_path):
    # Stock channels-redis loses the message here every time (channels_redis issue 366):
    # the closing socket's receive was popping for the whole process when it was cancelled.
    env = _django_env(tmp_path, REDIS_URL=redis_server.url)

    done = _run([sys.executable, "-c", _DISCONNECT_PROBE], env)

    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True, True, True]
