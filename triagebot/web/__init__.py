"""The webhook ingress and the pages around it (FastAPI): `app.create_app` builds it.

`events` (webhook payloads normalised into one small event) is pure and read by the
workers and the decisions too, so nothing is imported here: importing it loads no FastAPI.
"""
