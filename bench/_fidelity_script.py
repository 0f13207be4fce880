"""The conversation bench/fidelity.py replays (not a benchmark itself): 200 turns, 50 facts.

Each fact is stated once, by the user, in a sentence of its own turn: amounts and weights
with units, order and invoice ids, URLs, file paths, names, dates, times, versions, a few
Chinese values. Around them: questions and answers about an operations project, pasted
logs (up to 20,000 characters), and assistant replies that repeat the same phrases.
"""

from __future__ import annotations

import random

# (value that must survive, the user's sentence, a key word recall is asked with)
FACTS: list[tuple[str, str, str]] = [
    ("ORD-58213", "The pilot order is ORD-58213, please track it separately.", "pilot"),
    ("412.5 kg", "The pallet for the pilot weighs 412.5 kg including packaging.", "pallet"),
    ("INV-2024-0042", "Finance says invoice INV-2024-0042 covers the setup fee.", "setup"),
    ("3,450 EUR", "Our travel budget for the site visit is 3,450 EUR in total.", "travel"),
    ("2026-04-30", "The contract renewal deadline is 2026-04-30.", "renewal"),
    ("Amelia Novak", "The contract owner on their side is Amelia Novak.", "owner"),
    (
        "/srv/app/conf/stage-eu.yaml",
        "Staging reads its settings from /srv/app/conf/stage-eu.yaml.",
        "staging",
    ),
    (
        "https://grafana.example.com/d/x7/latency?orgId=2",
        "The latency dashboard lives at https://grafana.example.com/d/x7/latency?orgId=2.",
        "dashboard",
    ),
    ("4 attempts", "We agreed the retry budget must stay at 4 attempts per job.", "retry"),
    ("45 s", "The upstream timeout should be 45 s, not more.", "upstream"),
    ("v2.14.3", "Production still runs release v2.14.3 of the scheduler.", "scheduler"),
    ("10.42.7.19", "The database primary answers on 10.42.7.19.", "primary"),
    ("Jonas Berger", "Jonas Berger is on call for the migration weekend.", "call"),
    ("8000 元", "仓库的预算上限是每月 8000 元。", "仓库"),
    ("李明", "负责成都仓库的同事是李明。", "成都"),
    ("ZH-20931", "上海的报关单号是 ZH-20931。", "报关单号"),
    ("14:30 UTC", "The weekly sync moved to Thursdays at 14:30 UTC.", "sync"),
    ("PRJ-2048", "Internally the project code is PRJ-2048.", "code"),
    (
        "s3://acme-backups/nightly/",
        "Nightly backups go to s3://acme-backups/nightly/ now.",
        "backups",
    ),
    ("1.8 TB", "The archive bucket holds 1.8 TB at the moment.", "archive"),
    ("OPS-7781", "I opened ticket OPS-7781 for the flaky health check.", "flaky"),
    ("Priya Raman", "Priya Raman approved the firewall change.", "firewall"),
    ("8443", "The admin console listens on port 8443 only.", "console"),
    ("97.5%", "The SLA we promised is 97.5% monthly availability.", "SLA"),
    ("Osaka", "The second warehouse will be in Osaka.", "warehouse"),
    ("2026-06-15", "Go-live for the new site is planned for 2026-06-15.", "live"),
    (
        "C:\\deploy\\agent.ini",
        "On the Windows hosts the agent reads C:\\deploy\\agent.ini.",
        "Windows",
    ),
    ("ops-alerts@acme.example", "Alerts must go to ops-alerts@acme.example as well.", "alerts"),
    ("7 days", "Logs are kept for 7 days before rotation.", "rotation"),
    ("128 GB", "Each new worker node gets 128 GB of memory.", "memory"),
    ("gpt-4o-mini", "For the summaries we settled on gpt-4o-mini.", "summaries"),
    ("Carlos Ortega", "Carlos Ortega from legal reviews the data agreement.", "legal"),
    ("DPA-0917", "The data processing agreement is filed as DPA-0917.", "agreement"),
    ("€12,400", "The hardware quote came in at €12,400 for the pilot racks.", "quote"),
    ("Friday 18:00", "Never deploy after Friday 18:00, that is a hard rule.", "deploy"),
    (
        "https://status.acme.example/incidents/311",
        "The incident write-up is at https://status.acme.example/incidents/311.",
        "incident",
    ),
    (
        "max_connections=400",
        "Set max_connections=400 on the pooler before the load test.",
        "pooler",
    ),
    ("6 replicas", "The API deployment should run with 6 replicas during the sale.", "sale"),
    ("Mei Tanaka", "Mei Tanaka will run the onboarding there.", "onboarding"),
    ("22 pallets", "The first shipment to the new site is 22 pallets.", "shipment"),
    ("SKU-00731", "The best-selling item is SKU-00731, keep it in stock.", "stock"),
    ("3.2 ms", "Median cache latency was 3.2 ms in the last test.", "cache"),
    ("2025-11-27", "The last penetration test ended on 2025-11-27.", "penetration"),
    ("Nairobi", "Support for East Africa will be run from Nairobi.", "Africa"),
    ("+49 40 5550 1234", "The Hamburg office hotline is +49 40 5550 1234.", "hotline"),
    (
        "/var/log/fimone/worker.log",
        "Worker logs are written to /var/log/fimone/worker.log.",
        "worker",
    ),
    ("3f9c2e1", "The last good build is sha 3f9c2e1.", "build"),
    ("1,250 requests", "Rate limit per client is 1,250 requests per minute.", "limit"),
    ("上午九点", "周一的站会改到上午九点。", "站会"),
    ("Lisbon", "The offsite will be in Lisbon this year.", "offsite"),
]

_TOPICS = [
    "the rollout plan",
    "the alerting rules",
    "the on-call rotation",
    "the cost report",
    "the schema migration",
    "the load test",
    "the backup restore drill",
    "the API gateway",
    "the dashboard layout",
    "the capacity forecast",
    "the vendor contract",
    "the runbook",
]
_QUESTIONS = [
    "Can you summarise where we are with {t}?",
    "What are the risks with {t}?",
    "Could you draft three bullet points about {t} for the weekly update?",
    "Is there anything we forgot regarding {t}?",
    "How would you explain {t} to a new team member?",
]
_ANSWERS = [
    "Here is my take on {t}: the plan is on track, the main risk is coordination between "
    "teams, and the next step is to confirm owners and dates in the weekly sync.",
    "For {t}, I would keep the scope small, write down the decision and its reason, and "
    "review it again after the first week of real traffic.",
    "Regarding {t}: nothing is blocking right now. I would still double-check the monitoring "
    "and make sure the runbook reflects the latest changes.",
]
_LOG_LEVELS = ["INFO", "INFO", "INFO", "WARN", "DEBUG"]


def pasted_log(rng: random.Random, chars: int) -> str:
    lines, size, i = [], 0, 0
    while size < chars:
        line = (
            f"2026-03-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
            f"{rng.randint(0, 59):02d}Z {rng.choice(_LOG_LEVELS)} worker-{rng.randint(1, 9)} "
            f"req={rng.randint(1000, 99999)} from 10.{rng.randint(0, 255)}.{rng.randint(0, 255)}."
            f"{rng.randint(1, 254)} took {rng.randint(1, 900)}ms status="
            f"{rng.choice([200, 200, 204, 404, 500])}"
        )
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)


def turns(count: int = 200, *, seed: int = 11) -> list[tuple[str, str, bool]]:
    """``count`` turns of (user text, assistant reply, whether the model calls a tool)."""
    rng = random.Random(seed)
    fact_turns = {4 * i + 1: fact for i, fact in enumerate(FACTS)}  # turns 1, 5, …, 197
    log_turns = {
        12: 20_000,
        37: 6_000,
        63: 12_000,
        90: 3_000,
        118: 16_000,
        150: 8_000,
        171: 20_000,
        190: 4_000,
    }
    out = []
    for turn in range(count):
        topic = rng.choice(_TOPICS)
        if turn in fact_turns:
            user = fact_turns[turn][1]
            reply = rng.choice(["Noted.", "Got it, I will keep that in mind.", "Thanks, noted."])
        elif turn in log_turns:
            user = "Here is the worker log from last night:\n" + pasted_log(rng, log_turns[turn])
            reply = "The log shows mostly successful requests with a few 500 responses."
        else:
            user = rng.choice(_QUESTIONS).format(t=topic)
            reply = rng.choice(_ANSWERS).format(t=topic)
        out.append((user, reply, turn % 10 == 3))
    return out
