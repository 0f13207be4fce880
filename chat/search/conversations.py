"""Full-text search over a user's conversations: one selector, the database's own engine.

SQLite: the FTS5 table of the ``0004_search_documents`` migration, ranked by ``bm25()``.
PostgreSQL: ``to_tsvector('simple', terms)`` with its GIN index, ranked by ``ts_rank_cd``.
Both see the same words (``chat.search.text``). A hit's order: how many of the query's
terms it holds, then its rank, then the newest — so an old passage holding every term
beats newer ones holding one. The engines find the candidates; the rank is worked out here
(``rank_of``), the same on both: BM25 with a softer length normalisation, so that a long
answer or a passage of a paste (``chat.search.passages``) is not buried under short
messages that name the same word in passing. Answers the user retried (``superseded_by``) are never
returned, nor anything of another user's. A conversation of a project also searches the
project's files (their pages are the project's, not a conversation's: docs/projects.md);
the sidebar's search, scoped by owner, leaves them out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL

from chat.models import Message, SearchDocument
from chat.search.text import Term, query_terms

MAX_TERMS = 12
CANDIDATES = 200  # ranked by the engine; the final order is decided among these
FTS_TABLE = "chat_searchdocument_fts"


@dataclass(frozen=True)
class Hit:
    document: SearchDocument
    matched: int  # how many of the query's terms it holds
    rank: float  # ``rank_of``: higher is better

    @property
    def message(self) -> Message | None:
        return self.document.message


def search(
    *,
    query: str | list[Term],
    owner_id: int | None = None,
    conversation_id=None,
    project_id: int | None = None,
    kinds: tuple[str, ...] = (),
    before_message_id: int | None = None,
    match_all: bool = False,
    limit: int = 20,
) -> list[Hit]:
    """Documents matching ``query``, best first (sync: ORM).

    Scope by ``owner_id`` (the sidebar) or ``conversation_id`` (``recall``; the caller has
    checked ownership); with ``project_id`` (the conversation's project, checked by the
    caller too) the project's files as well, never its other conversations. ``match_all``
    keeps only documents holding every term (the search box); otherwise any term is enough
    and more terms rank higher (``recall``).
    ``before_message_id`` leaves out a run's own query and everything after it (a project's
    files have no message: they are there whenever the run is).
    """
    terms = query_terms(query) if isinstance(query, str) else list(query)
    terms = terms[:MAX_TERMS]
    if not terms or limit <= 0 or (owner_id is None and conversation_id is None):
        return []
    scope = SearchDocument.objects.filter(message__superseded_by__isnull=True)
    if owner_id is not None:
        scope = scope.filter(conversation__owner_id=owner_id)
    if conversation_id is not None:
        own = Q(conversation_id=conversation_id)
        if before_message_id is not None:
            own &= Q(message_id__lt=before_message_id)
        if project_id is not None:
            own |= Q(project_id=project_id, conversation__isnull=True)
        scope = scope.filter(own)
    elif before_message_id is not None:
        scope = scope.filter(message_id__lt=before_message_id)
    if kinds:
        scope = scope.filter(kind__in=kinds)
    ranked = _ranked_ids(scope, terms, match_all=match_all)
    documents = SearchDocument.objects.select_related("message", "conversation").in_bulk(
        [doc_id for doc_id, _ in ranked]
    )
    found = [documents[doc_id] for doc_id, _ in ranked if doc_id in documents]
    counts = [[term.count_in(document.terms) for term in terms] for document in found]
    # How rare each term is among the candidates (BM25's idf, over what the engine found).
    rarity = [
        math.log(1 + len(found) / (1 + sum(1 for c in counts if c[i]))) for i in range(len(terms))
    ]
    hits = []
    for document, tally in zip(found, counts, strict=True):
        matched = sum(1 for n in tally if n)
        if matched == 0 or (match_all and matched < len(terms)):
            continue
        rank = rank_of(tally, rarity, words=document.terms.count(" ") + 1)
        hits.append(Hit(document=document, matched=matched, rank=rank))
    hits.sort(key=lambda h: (h.matched, h.rank, _when(h), h.document.pk), reverse=True)
    return hits[:limit]


# BM25's saturation; the length normalisation is softer than its usual 0.75 and stops
# at LENGTH_CAP pivots: a passage of a paste is about 150 words, a question ten.
K1 = 1.2
B = 0.3
PIVOT_WORDS = 40
LENGTH_CAP = 3.0


def rank_of(counts: list[int], rarity: list[float], *, words: int) -> float:
    """A document's rank from how often it holds each term, how rare each is, its length."""
    norm = 1 - B + B * min(words / PIVOT_WORDS, LENGTH_CAP)
    return sum(
        weight * n * (K1 + 1) / (n + K1 * norm)
        for n, weight in zip(counts, rarity, strict=True)
        if n
    )


def _when(hit: Hit) -> datetime:
    return hit.document.created_at


def _ranked_ids(scope: QuerySet, terms: list[Term], *, match_all: bool) -> list[tuple[int, float]]:
    if connection.vendor == "postgresql":
        return _postgres_ranked(scope, terms, match_all=match_all)
    if connection.vendor == "sqlite":
        return _sqlite_ranked(scope, terms, match_all=match_all)
    raise NotImplementedError(f"full-text search is not set up for {connection.vendor}")


def _sqlite_ranked(scope, terms, *, match_all):
    def phrase(term: Term) -> str:
        # Terms hold letters and digits only, so double quotes cannot be unbalanced.
        words = f'"{" ".join(term.words)}"' + ("*" if term.prefix else "")
        part = term.part
        return f'({words} OR "{part}"*)' if part else words

    match = (" AND " if match_all else " OR ").join(phrase(t) for t in terms)
    # The scope, checked per full-text hit (a primary-key lookup each) rather than listed
    # whole: a rare word costs 1 ms instead of 57 over 22,000 texts (bench/search.py).
    in_scope = scope.filter(id=RawSQL("hits.id", ())).values("id")
    scope_sql, scope_params = in_scope.query.sql_with_params()
    # Plain SQL: the ORM has no FTS5 MATCH or bm25(). bm25() is lower for better matches.
    # The full-text matches are computed first, then kept if in scope: given both at once,
    # SQLite runs the MATCH once per row of the scope instead (seconds, not milliseconds,
    # for a user with 20,000 messages — bench/search.py).
    sql = (
        f"WITH hits AS MATERIALIZED (SELECT rowid AS id, bm25({FTS_TABLE}) AS score "  # noqa: S608
        f"FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s) "
        f"SELECT id, -score FROM hits WHERE EXISTS ({scope_sql}) ORDER BY score LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [match, *scope_params, CANDIDATES])
        return [(row[0], float(row[1])) for row in cursor.fetchall()]


def _postgres_ranked(scope, terms, *, match_all):
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    def lexemes(term: Term) -> str:
        words = [f"'{w}'" for w in term.words]
        if term.prefix:
            words[-1] += ":*"
        part = term.part
        return "(" + " <-> ".join(words) + (f" | '{part}':*" if part else "") + ")"

    raw = (" & " if match_all else " | ").join(lexemes(t) for t in terms)
    tsquery = SearchQuery(raw, search_type="raw", config="simple")
    # The expression of the migration's GIN index, so PostgreSQL can use it.
    vector = SearchVector("terms", config="simple")
    rows = (
        scope.annotate(vector=vector, score=SearchRank(vector, tsquery, cover_density=True))
        .filter(vector=tsquery)
        .order_by("-score")
        .values_list("id", "score")[:CANDIDATES]
    )
    return [(doc_id, float(score)) for doc_id, score in rows]
