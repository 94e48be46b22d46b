"""Watch: re-measure a reproduced report on each new release and say when it changes.

The pure core: what a watch step runs (`steps`: the comparison that decided the thread's
report, at the last release measured and at the new one, side by side in one job, plus
the A/A pair), what it read (`reading`) and the state it puts the thread in (`states`:
still reproduced, fixed, worse, back, broken, config no longer valid, inconclusive, each
with a one-line reason). Running a step is `triagebot/run/watch_steps.py`; the table is
`triagebot/report/watch.py`.
"""
