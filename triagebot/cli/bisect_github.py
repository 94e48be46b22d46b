"""What `triagebot bisect` reads from GitHub: the commits of the final bracket (for the
commit level and the ranked candidates) and the repo's `[bisect] commit_index`.

GitHub is optional here: without a repo, a token or an answer, the bisect stops at
releases and nightlies and says plainly why it shows no candidates.
"""

from __future__ import annotations

from collections.abc import Callable

from triagebot.bisect import deeper as below
from triagebot.bisect import shas
from triagebot.bisect.ranges import BisectError, Direction
from triagebot.bisect.rank import RankedCommit
from triagebot.bisect.runner import BisectRun, CommitPlan
from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError
from triagebot.repo_config import CONFIG_PATH, RepoConfigError, parse_repo_config
from triagebot.request_model import ReproRequest
from triagebot.settings import SettingsError, load_settings

Log = Callable[[str], None]


class GitHubSide:
    """The CLI's GitHub client for one repo, or the reason there is none."""

    def __init__(self, repo: str | None, api_url: str | None, template: str | None,
                 log: Log) -> None:
        self.repo, self.template, self.log = repo, template, log
        self.reader: below.CompareReader | None = None
        self.why = ""
        if repo is None:
            self.why = ("no GitHub repo to read commits from: pass --repo OWNER/NAME or an "
                        "issue URL")
            return
        try:
            settings = load_settings(**({"github_api_url": api_url} if api_url else {}))
        except SettingsError as exc:
            self.why = f"GitHub settings unusable: {exc}"
            return
        token = settings.github_token.get_secret_value() if settings.github_token else None
        self.reader = below.CompareReader(GitHubClient.with_token(settings, token), repo)
        if template is None:
            self.template = self._repo_template()

    def _repo_template(self) -> str | None:
        assert self.reader is not None and self.repo is not None
        try:
            text = self.reader.gh.file_text(self.repo, CONFIG_PATH)
            return parse_repo_config(text).bisect.commit_index if text else None
        except GitHubError as exc:
            self.log(f"cannot read {self.repo}'s {CONFIG_PATH}: {exc}")
        except RepoConfigError as exc:
            self.log(f"{self.repo}'s {exc}; per-commit bisect is off")
        return None

    def commits(self, run: BisectRun) -> CommitPlan | str:
        if self.reader is None or self.repo is None:
            return self.why
        if not self.template:
            return below.commit_plan(run, [], self.repo, None)
        try:
            items = self.reader.items(run)
        except GitHubError as exc:
            return f"no commit level: GitHub did not answer ({exc})"
        return below.commit_plan(run, items, self.repo, self.template)

    def sha_plan(self, good: str, bad: str, direction: Direction) -> CommitPlan:
        """The commit level between two ends of which one at least is a SHA, its index
        the repo's template ("" where it names none); a BisectError saying what is
        missing or wrong."""
        if self.reader is None or self.repo is None:
            raise BisectError(f"a commit SHA end needs GitHub's compare API to list the "
                              f"commits between: {self.why}")
        try:
            plan = self.reader.between_ends(good, bad, direction)
        except (GitHubError, ValueError) as exc:
            if isinstance(exc, BisectError):
                raise
            raise BisectError(f"GitHub did not compare the two ends in {self.repo}: "
                              f"{exc}") from None
        return plan.model_copy(update={"index": self.template or ""})

    def candidates(self, run: BisectRun, request: ReproRequest) -> tuple[
            list[RankedCommit], str]:
        """The top-5 commits of the final bracket, or a sentence saying why none."""
        if run.range.level == "commit" and not run.earlier:
            found = shas.ranked_between(run, request)
            return found, "" if found else "no candidates: no commit lies in the final bracket"
        if self.reader is None or self.repo is None:
            return [], f"no candidates: {self.why}"
        if below.release_tags(run) is None and run.range.level == "nightly" and not run.earlier:
            return [], ("no candidates or commit level: nightlies carry no tag to compare; "
                        "give the commits around the first bad nightly as good=SHA bad=SHA")
        if below.release_tags(run) is None:
            return [], "no candidates: the release level did not finish"
        try:
            items = self.reader.items(run)
        except GitHubError as exc:
            return [], f"no candidates: GitHub did not answer ({exc})"
        if items is None:
            tags = below.release_tags(run) or ("", "")
            return [], f"no candidates: {self.repo} has no comparable tags {tags[0]} and {tags[1]}"
        found = below.ranked(run, items, self.repo, request)
        return found, "" if found else "no candidates: no commit lies in the final bracket"
