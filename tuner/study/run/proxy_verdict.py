"""What a proxy study says of its full-size study (tuner/study/run/proxy_study.py): whether the
proxy's choices held at full size, and what the whole study cost in full-size trial-lengths."""

from __future__ import annotations

import dataclasses
from typing import Any

import optuna

from tuner.study.record import COMPLETE, records
from tuner.study.scoring.units import study_unit, with_unit


@dataclasses.dataclass(frozen=True)
class TransferVerdict:
    held: bool
    line: str
    fastest_s: float | None = None  # the wall seconds of the fastest candidate's full-size run, where it held


def transfer_verdict(study: optuna.Study, picks: list[tuple[int, dict[str, Any]]]) -> TransferVerdict:
    """Whether the proxy's choices held at full size: one reached the target there and beat the baseline."""
    done = [r for r in records(study, COMPLETE) if r.value is not None]
    candidates = [r for r in done if r.proxy_of is not None and r.reached]
    baseline = [r for r in done if r.is_baseline]
    unit = study_unit(study)
    if not candidates:
        line = f"proxy: transfer not confirmed: none of the proxy's {len(picks)} best reached the target at full size"
        return TransferVerdict(False, line)
    best = min(candidates, key=lambda r: (r.value, r.number))
    beaten = [r for r in baseline if r.reached and r.value <= best.value]
    if beaten:
        return TransferVerdict(
            False,
            f"proxy: transfer not confirmed: the baseline ({with_unit(beaten[0].value, unit)}) was as fast as the proxy's best "
            f"at full size (trial {best.number}, {with_unit(best.value, unit)})",
        )
    proxy_trial = best.proxy_of
    line = f"proxy: transfer held: trial {best.number} (proxy trial {proxy_trial}) reached at full size in {with_unit(best.value, unit)}"
    return TransferVerdict(True, line, best.result.wall_s if best.result is not None else None)


def cost_line(study: optuna.Study, spent_s: float) -> str:
    """What the study cost in full-size trial-lengths: its wall seconds over the baseline's full-size run
    (a capped run is shorter than the baseline's whole run, so the count is then an upper bound)."""
    runs = [r for r in records(study, COMPLETE) if r.is_baseline and r.result is not None and r.result.wall_s > 0]
    if not runs:
        return f"proxy: cost {spent_s:.0f} s; the baseline has no full-size run to count it in"
    first = runs[0]
    lengths = spent_s / first.result.wall_s
    if first.reached:
        took = f"the baseline's full-size run took {first.result.wall_s:.3g} s"
        return f"proxy: cost {spent_s:.0f} s, {lengths:.2f} full-size trial-lengths ({took})"
    return (
        f"proxy: cost {spent_s:.0f} s, at most {lengths:.2f} full-size trial-lengths "
        f"(the baseline's full-size run, capped once it had lost clearly, took {first.result.wall_s:.3g} s)"
    )
