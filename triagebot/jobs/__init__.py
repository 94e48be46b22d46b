"""Jobs: `record` is the pure record and its states; `store` keeps records in Redis.

Nothing is imported here, so importing the record never loads Redis.
"""
