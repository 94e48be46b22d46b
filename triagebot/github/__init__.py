"""GitHub for triagebot: the only package that imports PyGithub.

App JWT → installation tokens asking only for what their calls need (`auth`), reading
threads (`thread`), comparisons and commits read whole (`compare`), the sticky report
comment found by its hidden marker and the bot's login (`comments`, `markers`),
reactions, labels, permission and team checks, repo files (`client`). Every call retries
what is safe to retry, honours rate limits, and takes the installation's write turn where
one is given (`calls`). `models` holds the plain
`Thread` the decisions read; nothing is imported here, so reading it loads no PyGithub.
"""
