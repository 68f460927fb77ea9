"""Figures of one configuration over several seeds: the median and the range, written once
for confirmation, racing and the baseline."""

from __future__ import annotations

import statistics


class OverSeeds:
    """Mixed into a dataclass whose ``values`` holds one figure per seed (lower is better)."""

    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.values), max(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)
