"""GitHub for triagebot: the only package that imports PyGithub.

App JWT → installation tokens (`auth`), reading threads (`thread`), the sticky report
comment found by its hidden marker and the bot's login (`comments`, `markers`),
reactions, labels, permission and team checks, repo files (`client`). Every call retries
what is safe to retry and honours rate limits (`calls`). `models` holds the plain
`Thread` the decisions read; nothing is imported here, so reading it loads no PyGithub.
"""
