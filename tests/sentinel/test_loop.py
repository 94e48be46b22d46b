"""The sentinel loop's bookkeeping where no engine has to start: a release that cannot be
installed is a crash of every case there, named; the next release is measured against
the last one a case ran on, never against a broken one."""

from __future__ import annotations

from pathlib import Path

from triagebot.run.sentinel_steps import SentinelContext, sentinel_releases
from triagebot.run.watch_steps import WatchSettings
from triagebot.sentinel.cases import default_cases


def test_an_uninstallable_release_crashes_every_case_and_is_never_a_previous(
        tmp_path: Path) -> None:
    cases = [c for c in default_cases("vllm", "cpu") if c.method in ("mtp", "draft_model")]
    ctx = SentinelContext(settings=WatchSettings(out_dir=tmp_path), extra=["tp=2"])

    def before(release: str) -> None:
        if release == "0.27.0":
            raise OSError("no wheel for this platform")

    heard: list[str] = []
    rounds = sentinel_releases(ctx, cases, ["0.17.1", "0.27.0", "0.29.0"], log=heard.append,
                               before=before)
    assert [r.release for r in rounds] == ["0.17.1", "0.27.0", "0.29.0"]
    assert set(rounds[0].skipped) == {c.case_id for c in cases}
    crashed = rounds[1].figures
    assert [f.status for f in crashed] == ["crashed", "crashed"]
    assert all(f.error_line == "not installable: no wheel for this platform" for f in crashed)
    assert [f.kind for f in rounds[1].flags] == ["crashed", "crashed"]
    # tp=2 is refused at plan time on the cpu runner: 0.29.0 has no previous to face
    assert [(f.status, f.previous) for f in rounds[2].figures] == [("refused", None)] * 2
    assert any("0.27.0: crashed, 1 flag(s)" in line for line in heard)
