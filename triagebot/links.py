"""Links to job pages, and who may open one.

The access rule, decided once and used by the triage side (which writes links) and the
web side (which checks them):

- A job id is an HMAC of where the job came from under the deployment's link key, so it
  cannot be computed from a thread's public facts; it still shows up in logs and queue
  messages, so it is an identifier, not a secret.
- A public repository's job page opens with the id alone: the thread it reports on is
  public too.
- A private repository's job page (HTML and JSON) needs `?key=` with the page token, a
  second HMAC of the id. Only the job's own comment on the private thread carries that
  link, so exactly the people who can read the thread can open the page. Without it, or
  with a wrong one, the answer is the same 404 as for a job that does not exist, so the
  page does not even confirm that the job exists.
"""

from __future__ import annotations

import hmac

from triagebot.jobs.record import JobRecord, page_token
from triagebot.settings import Settings


def job_url(settings: Settings, job: JobRecord) -> str:
    url = f"{settings.public_url.rstrip('/')}/jobs/{job.id}"
    return f"{url}?key={page_token(settings.link_key, job.id)}" if job.private else url


def may_view(settings: Settings, job: JobRecord, key: str | None) -> bool:
    if not job.private:
        return True
    expected = page_token(settings.link_key, job.id)
    return key is not None and hmac.compare_digest(key.encode(), expected.encode())
