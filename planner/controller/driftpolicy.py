"""When a drift a watch event showed is corrected: the pure policy of the controller's event-driven
drift correction (`driftwatch`; docs/controller.md, "Drift correction"). Times are seconds on one
monotonic clock, passed in.

- **Debounce**: a reconcile is queued `debounce` seconds after the first drift it answers, so the
  events of one `kubectl edit` (or of several objects of a Plan changed together) make one reconcile.
- **Rate limit**: a Plan's drift reconciles start at least `min_gap` seconds apart.
- **Conflict**: a field corrected `conflict_after` times in a row, each correction within `window`
  seconds of the one before, is written back by someone after each correction — a second controller,
  a script, an autoscaler the plan does not know — and is in conflict. Its corrections then back off
  exponentially: the next one waits `backoff_base` seconds after the last, doubling with each further
  correction up to `backoff_cap`. A drift of a field not in conflict is still corrected at once. A
  field left alone for `window` seconds beyond its back-off starts afresh.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from planner.controller.driftfields import DriftedField

FieldKey = tuple[str, str]  # the object, the path (whoever writes it)


@dataclass(frozen=True, kw_only=True)
class DriftTimings:
    debounce: float = 0.2
    min_gap: float = 1.0
    window: float = 60.0
    conflict_after: int = 3
    backoff_base: float = 5.0
    backoff_cap: float = 300.0


@dataclass(frozen=True)
class Conflict:
    """A field in conflict: who writes it back, how many corrections the window saw, and how long its
    next correction waits after the last."""

    field: DriftedField
    corrections: int
    backoff: float

    def describe(self) -> str:
        return (
            f"{self.field.object} {self.field.path}: written back by {self.field.writer} after each "
            f"correction ({self.corrections} corrections within the window); the next correction waits "
            f"{self.backoff:g}s"
        )


@dataclass
class _FieldHistory:
    corrections: int = 0  # in a row, each within the window (and back-off) of the one before
    last: float = 0.0
    writer: str = ""


class DriftPolicy:
    def __init__(self, timings: DriftTimings | None = None) -> None:
        self.timings = timings or DriftTimings()
        self._fields: dict[str, dict[FieldKey, _FieldHistory]] = {}  # by plan key
        self._started: dict[str, float] = {}  # each plan's last drift reconcile

    def delay(self, key: str, drifted: Iterable[DriftedField], now: float) -> float:
        """How long from `now` the reconcile that corrects `drifted` waits: the debounce, the rest of
        the Plan's gap, and for fields that are all in conflict, their back-off."""
        timings = self.timings
        started = self._started.get(key)
        gap = 0.0 if started is None else started + timings.min_gap - now
        waits = [self._backoff_left(key, each, now) for each in drifted]
        conflict = min(waits) if waits else 0.0
        return max(timings.debounce, gap, conflict)

    def started(self, key: str, now: float) -> None:
        """A reconcile of the Plan started, answering the drift seen so far."""
        self._started[key] = now

    def corrected(self, key: str, drifted: Iterable[DriftedField], now: float) -> list[Conflict]:
        """A reconcile corrected `drifted`: count each correction; the fields now in conflict."""
        fields = self._fields.setdefault(key, {})
        for each in drifted:
            history = fields.setdefault((each.object, each.path), _FieldHistory())
            history.corrections = self._ongoing(history, now) + 1
            history.last, history.writer = now, each.writer
        return self.conflicts(key, now)

    def conflicts(self, key: str, now: float) -> list[Conflict]:
        """The Plan's fields in conflict at `now` (forgetting those left alone for a window)."""
        fields = self._fields.get(key, {})
        for field_key in [k for k, history in fields.items() if not self._ongoing(history, now)]:
            del fields[field_key]
        found = []
        for (obj, path), history in sorted(fields.items()):
            count = history.corrections
            if count >= self.timings.conflict_after:
                found.append(Conflict(DriftedField(obj, path, history.writer), count, self._backoff(count)))
        return found

    def forget(self, key: str) -> None:
        self._fields.pop(key, None)
        self._started.pop(key, None)

    def _ongoing(self, history: _FieldHistory, now: float) -> int:
        """The field's corrections in a row, 0 once it has been left alone for the window beyond its
        back-off."""
        quiet = now - history.last
        return history.corrections if quiet < self.timings.window + self._backoff(history.corrections) else 0

    def _backoff(self, corrections: int) -> float:
        """The wait after the last of `corrections`: none below the conflict threshold, then the base,
        doubling with each correction beyond it, capped."""
        beyond = corrections - self.timings.conflict_after
        if beyond < 0:
            return 0.0
        return float(min(self.timings.backoff_cap, self.timings.backoff_base * 2.0**beyond))

    def _backoff_left(self, key: str, drifted: DriftedField, now: float) -> float:
        history = self._fields.get(key, {}).get((drifted.object, drifted.path))
        if history is None:
            return 0.0
        return max(0.0, history.last + self._backoff(self._ongoing(history, now)) - now)
