"""GitHub for triagebot: the only package that imports PyGithub.

App JWT → installation tokens asking only for what their calls need (`auth`), reading
threads (`thread`), comparisons and commits read whole (`compare`), the sticky report
comment found by its hidden marker and the bot's login (`comments`, `markers`),
reactions, labels, permission and team checks, repo files (`client`). Every call retries
what is safe to retry, honours rate limits, and takes the installation's write turn where
one is given (`calls`). `models` holds the plain `Thread` the decisions read, and
`events` the webhook payloads normalised into the `ThreadEvent` that the ingress, the
decisions and the workers all read; both are pure. Nothing is imported here, so reading
them loads no PyGithub.
"""
