"""Money and device hours: what a run to the target costs, and what the winner saves.

A trial's cost to the target is its time to the target (on the objective's clock) times
the devices it trained on times the price of one device hour. Where no price is set, the
same figures are given in device hours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

RUNS_PER_SAVING = 100  # savings are quoted per this many training runs


def _positive_or_none(value: Any) -> bool:
    return value is None or value > 0


@dataclass(frozen=True)
class Cost:
    """The experiment's ``cost:`` section: the price of one device hour, and its currency."""

    per_device_hour: float | None = field(
        default=None, metadata={"check": _positive_or_none, "allowed": "a price > 0, or null (device hours only)"}
    )
    currency: str = field(default="USD", metadata={"check": lambda v: bool(v.strip()), "allowed": "a currency name such as USD or EUR"})

    def device_hours(self, seconds: float, devices: int = 1) -> float:
        return seconds * devices / 3600.0

    def price(self, seconds: float, devices: int = 1) -> float | None:
        """The cost of ``seconds`` on ``devices``; None without a price."""
        if self.per_device_hour is None:
            return None
        return self.device_hours(seconds, devices) * self.per_device_hour

    def format(self, amount: float | None) -> str:
        if amount is None:
            return "no price set (cost.per_device_hour)"
        return f"{amount:.4g} {self.currency}" if abs(amount) < 1 else f"{amount:,.2f} {self.currency}"


@dataclass(frozen=True)
class Saving:
    """What running the winner instead of the baseline saves over ``RUNS_PER_SAVING`` runs."""

    device_hours: float
    amount: float | None
    currency: str

    def sentence(self) -> str:
        hours = f"{self.device_hours:.3g} device hours"
        money = f" ({self.amount:,.2f} {self.currency})" if self.amount is not None else ""
        return f"saves {hours}{money} per {RUNS_PER_SAVING} training runs against the baseline"

    def as_dict(self) -> dict[str, Any]:
        return {"runs": RUNS_PER_SAVING, "device_hours": self.device_hours, "amount": self.amount, "currency": self.currency}


def saving(cost: Cost, winner_s: float, winner_devices: int, baseline_s: float, baseline_devices: int) -> Saving:
    """The saving of ``RUNS_PER_SAVING`` winner runs against as many baseline runs (negative: a loss)."""
    hours = (cost.device_hours(baseline_s, baseline_devices) - cost.device_hours(winner_s, winner_devices)) * RUNS_PER_SAVING
    amount = hours * cost.per_device_hour if cost.per_device_hour is not None else None
    return Saving(hours, amount, cost.currency)
