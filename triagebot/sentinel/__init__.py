"""Sentinel: measure every standing case at each new release and flag what changed.

`models` holds the shared data; `cases` builds the matrix from `[sentinel]`; `flags`
turns one release's figures into flags; `history` stores figures per release
(SQLAlchemy: SQLite by default, PostgreSQL by URL). Running a case is
`triagebot/run/sentinel_steps.py`.
"""
