"""An ``EventQuery`` as SQL, shared by every store backend.

The backends keep one ``events`` table with the same routing columns (``conversation_id``,
``seq``, ``kind``, ``source``, ``timestamp``, ``subagent_id``, ``parent_tool_use_id``,
``json``, and ``body``, the folded text ``body=`` searches: ``taskwire.events.body_text``); what
differs (placeholders, how a root id selects the tree's rows, how a folded term is looked for
in ``body``, a text index that drives a search) is a ``SqlDialect``.

Every search is keyset-paginated on ``seq``, so with an index that starts with the tree and
the equality filters and ends with ``seq``, a page costs its own rows. A filter on several
streams or kinds would make the database gather every match and sort it; instead each value
gets its own ordered, limited branch and the branches are merged (``UNION ALL``), so the page
still costs at most ``branches x limit`` rows.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Sequence

from ..events.body_text import MIN_INDEXED, fold
from .base import EventQuery, SortOrder
from .rows import timestamp_text

MAX_BRANCHES = 16
"""Past this many (stream, kind) combinations, a search filters with ``IN`` instead of merging."""


@dataclass(frozen=True, slots=True)
class SqlDialect:
    """What differs between backends when a query becomes SQL."""

    placeholder: Callable[[int], str]
    """The n-th (1-based) parameter: ``?`` for SQLite, ``$n`` for PostgreSQL."""
    tree_match: str
    """A condition selecting one tree's rows, with ``{}`` for the root id parameter."""
    body_match: Callable[[Callable[[Any], str], str], str]
    """The condition that the row's ``body`` holds a folded term, given the parameter maker
    and the term (a substring test, on the row)."""
    timestamp: Callable[[datetime], Any] = timestamp_text
    """How a datetime bound is passed to compare with the ``timestamp`` column."""
    text_branches: TextBranches | None = None
    """The backend's text index (SQLite's FTS5 table, PostgreSQL's trigram-indexed copy) as
    parts that find a term's events in ``seq`` order, used for terms of ``MIN_INDEXED``
    characters or more; ``None``: ``body_match`` on every row read."""


TextBranch = tuple[str, Callable[[], str], str]
"""One part of an indexed text search: its ``FROM`` clause (``events``, or the index joined
to it), a function making the conditions that find the term there (called in the order the
SQL is written: parameters are positional), and the column to order by (one that follows
``seq``). The parts' ``seq`` ranges do not overlap."""
TextBranches = Callable[["_Params", EventQuery, str, tuple[int | None, int | None]], list[TextBranch]]
"""Given the parameters, the query, the folded term and the ``seq`` bounds: the parts."""


class _Params:
    """Collects parameter values, handing out the dialect's placeholder for each."""

    def __init__(self, dialect: SqlDialect) -> None:
        self.dialect = dialect
        self.values: list[Any] = []

    def __call__(self, value: Any) -> str:
        self.values.append(value)
        return self.dialect.placeholder(len(self.values))

    def one_of(self, column: str, values: Sequence[str]) -> str:
        if not values:
            return "1 = 0"
        if len(values) == 1:
            return f"{column} = {self(values[0])}"
        return f"{column} IN ({', '.join(self(value) for value in values)})"


Window = tuple[int, int]
"""A ``seq`` range (exclusive lower, inclusive upper) known to hold every match; a backend
that summarizes its log may pass one to narrow a time-range search (see ``sqlite_writer.py``)."""


def time_window_sql(query: EventQuery, *, dialect: SqlDialect) -> tuple[str, list[Any]] | None:
    """For a backend that summarizes its log in ``time_blocks`` (``counted_seq`` marking the
    end of the summarized part): one row of the first and last ``seq`` of the blocks that
    overlap ``query``'s time range, and of the matching events past the mark. ``None``
    without a time range. ``window_from_row`` turns the row into a ``Window``."""
    if query.timestamp_gte is None and query.timestamp_lt is None:
        return None
    p = _Params(dialect)

    def tree() -> str:
        return f"(SELECT id FROM trees WHERE root_id = {p(query.root_id)})"

    def blocks() -> str:
        where = [f"tree = {tree()}"]
        if query.timestamp_gte is not None:
            where.append(f"max_ts >= {p(dialect.timestamp(query.timestamp_gte))}")
        if query.timestamp_lt is not None:
            where.append(f"min_ts < {p(dialect.timestamp(query.timestamp_lt))}")
        return " AND ".join(where)

    def tail() -> str:
        where = [f"tree = {tree()}", f"seq > (SELECT counted_seq FROM trees WHERE root_id = {p(query.root_id)})"]
        if query.timestamp_gte is not None:
            where.append(f"timestamp >= {p(dialect.timestamp(query.timestamp_gte))}")
        if query.timestamp_lt is not None:
            where.append(f"timestamp < {p(dialect.timestamp(query.timestamp_lt))}")
        return " AND ".join(where)

    # Every use of a value is its own parameter, taken in the order they appear: SQLite's are
    # positional.
    sql = (
        f"SELECT (SELECT min(first_seq) FROM time_blocks WHERE {blocks()}), "
        f"(SELECT max(last_seq) FROM time_blocks WHERE {blocks()}), "
        f"(SELECT min(seq) FROM events WHERE {tail()}), "
        f"(SELECT max(seq) FROM events WHERE {tail()})"
    )
    return sql, p.values


def window_from_row(row: Sequence[Any] | None) -> Window:
    """The ``Window`` of ``time_window_sql``'s row: from the first overlapping block (or the
    first match past the mark) to the last match past the mark (or the last block); ``(0, 0)``
    when nothing can match."""
    first_block, last_block, first_tail, last_tail = row or (None, None, None, None)
    first = first_block if first_block is not None else first_tail
    last = last_tail if last_tail is not None else last_block
    if first is None or last is None:
        return 0, 0
    return first - 1, last


def seq_bounds(
    query: EventQuery, order: SortOrder, cursor: int | None, window: Window | None = None
) -> tuple[int | None, int | None]:
    """The ``seq`` range as (exclusive lower, inclusive upper), folding the page cursor and
    the window in so the database gets one bound per side to seek with."""
    lowers = [query.after_seq, window[0] if window else None]
    uppers = [query.until_seq, window[1] if window else None]
    if cursor is not None and order == "TIMESTAMP":
        lowers.append(cursor)
    elif cursor is not None:
        uppers.append(cursor - 1)
    known_lowers = [bound for bound in lowers if bound is not None]
    known_uppers = [bound for bound in uppers if bound is not None]
    return (max(known_lowers) if known_lowers else None, min(known_uppers) if known_uppers else None)


def indexed_term(query: EventQuery, dialect: SqlDialect) -> str | None:
    """The folded term when ``dialect``'s text index serves ``query``'s body filter."""
    if not query.body or dialect.text_branches is None:
        return None
    term = fold(query.body)
    return term if len(term) >= MIN_INDEXED else None


def like_pattern(text: str) -> str:
    """A ``LIKE ... ESCAPE '\\'`` pattern matching ``text`` anywhere."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _conditions(
    query: EventQuery,
    p: _Params,
    bounds: tuple[int | None, int | None],
    *,
    split: dict[str, str] | None = None,
    body: bool = True,
) -> str:
    """The WHERE clause; ``split`` pins columns to one value (a merge branch); ``body=False``
    leaves the body filter out (a text index applies it)."""
    split = split or {}
    where = [p.dialect.tree_match.format(p(query.root_id))]
    for column, values in (("conversation_id", query.conversation_ids), ("kind", query.kinds)):
        if column in split:
            where.append(f"{column} = {p(split[column])}")
        elif values is not None:
            where.append(p.one_of(column, list(values)))
    for column, value in (
        ("source", query.source),
        ("parent_tool_use_id", query.parent_tool_use_id),
        ("subagent_id", query.subagent_id),
    ):
        if value is not None:
            where.append(f"{column} = {p(value)}")
    if query.timestamp_gte is not None:
        where.append(f"timestamp >= {p(p.dialect.timestamp(query.timestamp_gte))}")
    if query.timestamp_lt is not None:
        where.append(f"timestamp < {p(p.dialect.timestamp(query.timestamp_lt))}")
    if query.body and body:
        where.append(p.dialect.body_match(p, fold(query.body)))
    lower, upper = bounds
    if lower is not None:
        where.append(f"seq > {p(lower)}")
    if upper is not None:
        where.append(f"seq <= {p(upper)}")
    return " AND ".join(where)


def _branches(query: EventQuery) -> list[dict[str, str]] | None:
    """The merge branches for multi-valued filters, or ``None`` for one plain query."""
    axes = {
        column: list(dict.fromkeys(values))
        for column, values in (("conversation_id", query.conversation_ids), ("kind", query.kinds))
        if values is not None and len(set(values)) > 1
    }
    while axes:
        combinations = 1
        for values in axes.values():
            combinations *= len(values)
        if combinations <= MAX_BRANCHES:
            columns = list(axes)
            return [dict(zip(columns, combo)) for combo in itertools.product(*axes.values())]
        # Too many combinations: keep merging over the axis that fits, filter the other.
        axes.pop(max(axes, key=lambda column: len(axes[column])))
    return None


def search_sql(
    query: EventQuery,
    *,
    dialect: SqlDialect,
    columns: str,
    order: SortOrder,
    cursor: int | None,
    limit: int,
    window: Window | None = None,
) -> tuple[str, list[Any]]:
    """SQL and parameters for up to ``limit`` rows of ``columns`` after ``cursor``."""
    p = _Params(dialect)
    bounds = seq_bounds(query, order, cursor, window)
    direction = "ASC" if order == "TIMESTAMP" else "DESC"
    term = indexed_term(query, dialect)
    if term is not None:
        # The index yields the term's events in seq order: only its own parts to merge.
        parts = [
            f"SELECT * FROM (SELECT {columns} FROM {source} WHERE {ties()} AND "
            f"{_conditions(query, p, bounds, body=False)} ORDER BY {key} {direction} LIMIT {p(limit)}) AS part{n}"
            for n, (source, ties, key) in enumerate(dialect.text_branches(p, query, term, bounds))  # type: ignore[misc]
        ]
        return " UNION ALL ".join(parts) + f" ORDER BY seq {direction} LIMIT {p(limit)}", p.values
    branches = _branches(query)
    if branches is None:
        where = _conditions(query, p, bounds)
        sql = f"SELECT {columns} FROM events WHERE {where} ORDER BY seq {direction} LIMIT {p(limit)}"
        return sql, p.values
    parts = []
    for number, split in enumerate(branches):
        where = _conditions(query, p, bounds, split=split)
        parts.append(
            f"SELECT * FROM (SELECT {columns} FROM events WHERE {where} "
            f"ORDER BY seq {direction} LIMIT {p(limit)}) AS branch{number}"
        )
    sql = " UNION ALL ".join(parts) + f" ORDER BY seq {direction} LIMIT {p(limit)}"
    return sql, p.values


def count_sql(query: EventQuery, *, dialect: SqlDialect, window: Window | None = None) -> tuple[str, list[Any]]:
    """SQL and parameters counting the events ``query`` matches."""
    p = _Params(dialect)
    bounds = seq_bounds(query, "TIMESTAMP", None, window)
    term = indexed_term(query, dialect)
    if term is not None:
        counts = [
            f"(SELECT count(*) FROM {source} WHERE {ties()} AND {_conditions(query, p, bounds, body=False)})"
            for source, ties, _ in dialect.text_branches(p, query, term, bounds)  # type: ignore[misc]
        ]
        return "SELECT " + " + ".join(counts), p.values
    where = _conditions(query, p, bounds)
    return f"SELECT count(*) FROM events WHERE {where}", p.values


def counted_sql(query: EventQuery, *, dialect: SqlDialect) -> tuple[str, list[Any]] | None:
    """SQL counting ``query`` from running counts, or ``None`` if it filters on more than
    streams and kinds (then ``count_sql`` counts the rows).

    For backends that keep ``event_counts (tree, conversation_id, kind, n)`` covering a tree's
    events up to ``trees.counted_seq``: the count is their sum plus the events after that
    mark, which the index counts quickly as long as the mark is kept close to the end.
    """
    if (
        query.source is not None
        or query.body
        or query.timestamp_gte is not None
        or query.timestamp_lt is not None
        or query.after_seq is not None
        or query.until_seq is not None
        or query.parent_tool_use_id is not None
        or query.subagent_id is not None
    ):
        return None
    p = _Params(dialect)

    def where() -> str:
        parts = [dialect.tree_match.format(p(query.root_id))]
        if query.conversation_ids is not None:
            parts.append(p.one_of("conversation_id", list(query.conversation_ids)))
        if query.kinds is not None:
            parts.append(p.one_of("kind", list(query.kinds)))
        return " AND ".join(parts)

    counted = f"SELECT coalesce(sum(n), 0) FROM event_counts WHERE {where()}"
    after = f"SELECT count(*) FROM events WHERE {where()} AND seq > (SELECT counted_seq FROM trees WHERE root_id = {p(query.root_id)})"
    return f"SELECT ({counted}) + ({after})", p.values
