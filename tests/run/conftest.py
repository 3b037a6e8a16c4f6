"""Fixtures of the run tests."""

import pytest

from nht_jax.engine.executor import GridRun


class Advances:
    """Wraps GridRun.advance: counts the logs trained, and raises KeyboardInterrupt on call number `die_on`."""

    def __init__(self, monkeypatch, die_on=None):
        self.logs, self.calls, self.die_on = 0, 0, die_on
        real = GridRun.advance

        def advance(grid_run, states, n):
            self.calls += 1
            if self.calls == self.die_on:
                raise KeyboardInterrupt
            self.logs += n
            return real(grid_run, states, n)

        monkeypatch.setattr(GridRun, "advance", advance)


@pytest.fixture
def advances(monkeypatch):
    """`advances(die_on=None)` → an `Advances` counter (and killer) of GridRun.advance for this test."""
    return lambda die_on=None: Advances(monkeypatch, die_on)
