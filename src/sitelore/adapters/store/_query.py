"""Turn a question into weighted search terms: OR semantics, stop words, phrases, identifiers.

A question ("how do I read a file line by line") rarely has every word on the page
that answers it, so both stores rank sections by the terms they hold (BM25 in
SQLite, an IDF-weighted ``ts_rank`` in PostgreSQL) instead of requiring them all:

* words are split and folded as the index does (:mod:`._pg_text`), English stop words
  are dropped (unless the query is nothing else);
* a chunk that splits into several words is an identifier or a dotted name
  (``os.path.exists``, ``HashMap::entry``, ``jsonb_set``): it counts as the phrase
  of its parts, which ranks text that writes it out, and as each part, which finds
  text that names a part;
* ``"double quoted words"`` are a phrase.

Every term reaches the database as folded letters and digits only, so nothing a user
types is ever query syntax. Pure: no I/O.
"""

from __future__ import annotations

import re

from sitelore.adapters.store._pg_text import query_phrases

__all__ = [
    "COMMON_SHARE",
    "MIN_COMMON",
    "STOP_WORDS",
    "fts5_query",
    "search_terms",
    "tsquery_terms",
]

#: A term found in more than this share of the sections is common: it ranks a section
#: but never, alone, finds one (computing scores for most of a store costs too much for
#: a term that adds little to them)...
COMMON_SHARE = 0.05
#: ... and never in stores so small that this many sections hold it.
MIN_COMMON = 1000

_STOP_TEXT = """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his
    how i if in into is it its itself just me more most my myself no nor not of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will
    with would you your yours yourself yourselves get use using way want need e g"""

#: Words too common to tell sections apart (English function words and question words).
STOP_WORDS = frozenset(_STOP_TEXT.split())

_QUOTED = re.compile(r'"([^"]*)"')


def search_terms(query: str) -> list[tuple[str, ...]]:
    """The distinct terms of ``query``: each a tuple of folded words (several: a phrase).

    >>> search_terms("how do I call os.path.exists")
    [('call',), ('os', 'path', 'exists'), ('os',), ('path',), ('exists',)]
    >>> search_terms("the who")
    [('the',), ('who',)]
    >>> search_terms('"full jitter" backoff')
    [('full', 'jitter'), ('backoff',)]
    """
    terms: list[tuple[str, ...]] = []
    for quoted in _QUOTED.findall(query):
        words = [word for chunk in query_phrases(quoted) for word in chunk]
        if words:
            terms.append(tuple(words))  # a quoted phrase counts as a phrase only
    for phrase in query_phrases(_QUOTED.sub(" ", query)):
        terms.append(tuple(phrase))
        if len(phrase) > 1:
            terms += [(word,) for word in phrase]
    kept = [term for term in terms if len(term) > 1 or term[0] not in STOP_WORDS]
    return list(dict.fromkeys(kept or terms))


def fts5_query(terms: list[tuple[str, ...]]) -> str:
    """An FTS5 expression matching any of ``terms``, each a quoted phrase; "" for none.

    >>> fts5_query([("os", "path"), ("os",)])
    '"os path" OR "os"'
    """
    return " OR ".join('"' + " ".join(term) + '"' for term in terms)


def tsquery_terms(terms: list[tuple[str, ...]]) -> list[str]:
    """One ``to_tsquery`` expression per term (words in sequence for a phrase).

    >>> tsquery_terms([("os", "path"), ("os",)])
    ["'os' <-> 'path'", "'os'"]
    """
    return [" <-> ".join(f"'{word}'" for word in term) for term in terms]
