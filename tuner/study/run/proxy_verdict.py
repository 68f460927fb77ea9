"""What a proxy study says of its full-size study (tuner/study/run/proxy_study.py): whether the
proxy's choices held at full size, and what the whole study cost in full-size trial-lengths."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import optuna

from tuner.study.record import COMPLETE, TrialRecord, records
from tuner.study.scoring.units import study_unit, with_unit


@dataclasses.dataclass(frozen=True)
class TransferVerdict:
    held: bool
    line: str
    fastest_s: float | None = None  # the wall seconds of the fastest candidate's full-size run, where it held
    judged: bool = True  # False while the baseline has no finished full-size run to judge the candidates by


def transfer_verdict(study: optuna.Study, picks: list[tuple[int, dict[str, Any]]]) -> TransferVerdict:
    """Whether the proxy's choices held at full size: one reached the target there and beat the baseline."""
    done = [r for r in records(study, COMPLETE) if r.value is not None]
    candidates = [r for r in done if r.proxy_of is not None and r.reached]
    baseline = [r for r in done if r.is_baseline]
    unit = study_unit(study)
    if not candidates and not any(r.proxy_of is not None for r in done):  # no candidate's run finished (the budget, a signal)
        line = "proxy: not judged yet: no candidate's full-size run finished; `tuner run` again finishes the decision"
        return TransferVerdict(False, line, judged=False)
    if not candidates:
        line = f"proxy: transfer not confirmed: none of the proxy's {len(picks)} best reached the target at full size"
        return TransferVerdict(False, line)
    best = min(candidates, key=lambda r: (r.value, r.number))
    if not baseline:  # the budget ended the baseline's run (or it never started): nothing to judge by yet
        line = (
            f"proxy: not judged yet: trial {best.number} (proxy trial {best.proxy_of}) reached at full size in "
            f"{with_unit(best.value, unit)}, but the baseline's full-size run did not finish (the budget ended first); "
            "`tuner run` again finishes the decision"
        )
        return TransferVerdict(False, line, judged=False)
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


def cost_line(study: optuna.Study, spent_s: float, total: tuple[float, int] | None = None) -> str:
    """What the study cost in full-size trial-lengths: its wall seconds over the baseline's full-size run
    (a capped run is shorter than the baseline's whole run, so the count is then an upper bound);
    ``total``: (seconds, runs) of every run so far, said where the study ran more than once."""
    runs = [r for r in records(study, COMPLETE) if r.is_baseline and r.result is not None and r.result.wall_s > 0]
    earlier = total is not None and total[1] > 1
    if not runs:
        over = f"; {total[0]:.0f} s over its {total[1]} runs" if earlier else ""
        return f"proxy: cost {spent_s:.0f} s{over}; the baseline has no full-size run to count it in"
    first = runs[0]
    lengths = spent_s / first.result.wall_s
    bound = "" if first.reached else "at most "
    over = f"; {total[0]:.0f} s over its {total[1]} runs, {bound}{total[0] / first.result.wall_s:.2f} in all" if earlier else ""
    if first.reached:
        took = f"the baseline's full-size run took {first.result.wall_s:.3g} s"
        return f"proxy: cost {spent_s:.0f} s, {lengths:.2f} full-size trial-lengths{over} ({took})"
    return (
        f"proxy: cost {spent_s:.0f} s, at most {lengths:.2f} full-size trial-lengths{over} "
        f"(the baseline's full-size run, capped once it had lost clearly, took {first.result.wall_s:.3g} s)"
    )


SAVES_LITTLE = 2.0  # a proxy trial less than this many times cheaper than a full-size one is not worth the transfer's risk


def saving_line(proxy_study: optuna.Study, study: optuna.Study) -> str:
    """How much cheaper a proxy trial was than a full-size one, on the objective's clock: the
    baseline's first run at each where both reached, else the best candidate's own proxy trial
    against its full-size run; said plainly when the proxy barely saves anything."""
    small = {r.number: r for r in records(proxy_study, COMPLETE) if r.reached and r.value is not None}
    large = [r for r in records(study, COMPLETE) if r.reached and r.value is not None]
    pairs = [(_first_baseline(small.values()), _first_baseline(large), "the baseline")]
    candidates = sorted((r for r in large if r.proxy_of in small), key=lambda r: (r.value, r.number))
    if candidates:
        pairs.append((small[candidates[0].proxy_of], candidates[0], "the best candidate"))
    for at_proxy, at_full, who in pairs:
        if at_proxy is not None and at_full is not None and at_proxy.value > 0:
            unit, ratio = study_unit(study), at_full.value / at_proxy.value
            cheaper = f"{ratio:.1f}x cheaper" if ratio >= 1 else f"{1 / ratio:.1f}x dearer"
            line = (
                f"proxy: a proxy trial was {cheaper} than a full-size one ({who} reached its target in "
                f"{with_unit(at_proxy.value, unit)} at the proxy, {with_unit(at_full.value, unit)} at full size)"
            )
            if ratio < SAVES_LITTLE:
                line += "; a proxy this close to the job's cost saves little: without proxy: the study searches the job itself"
            return line
    return "proxy: no configuration reached at both sizes, so a proxy trial's saving is not known"


def _first_baseline(runs: Iterable[TrialRecord]) -> TrialRecord | None:
    return min((r for r in runs if r.is_baseline), key=lambda r: r.number, default=None)
