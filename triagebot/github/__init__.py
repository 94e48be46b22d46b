"""GitHub for triagebot: the only package that imports PyGithub.

App JWT → installation tokens, reading threads, the sticky report comment found by its
hidden marker and the bot's login, reactions, labels, permission and team checks, repo
files. Every call retries what is safe to retry and honours rate limits (`calls`).
"""

from triagebot.github.calls import RetryPolicy
from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError
from triagebot.github.markers import has_marker, marker, with_marker
from triagebot.github.models import Thread, ThreadComment

__all__ = ["GitHubClient", "GitHubError", "RetryPolicy", "Thread", "ThreadComment",
           "has_marker", "marker", "with_marker"]
