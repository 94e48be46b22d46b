"""The Celery workers: the app factory (`app`), thin tasks (`tasks`) over the triage
executor (`triage`) and the GPU job runner (`runner`), the reaper (`reaper`) and the
`triagebot worker` entry (`serve`).

A `triage` queue parses, plans and reports, and is the only one that talks to GitHub; one
`gpu-<kind>` queue per GPU kind runs cells, and its workers hold no GitHub credentials.
`task_queues` names the tasks and queues and is pure, so the web ingress sends tasks by
name without loading Celery; nothing is imported here for the same reason.
"""
