"""An experiment's proxy: the cheaper fidelity its search runs at, while the job's own decides.

```yaml
search_space:
  width: 2.0            # the job's width: what the winner is exported at
proxy:
  width: 0.25           # the search trains this narrow a model...
  target: 2.9           # ...to this target, where a small model cannot reach the job's
  horizon: 0.25         # horizon_samples searched at the proxy are this share of the job's
  share: 0.5            # of the time budget the proxy's search takes
  candidates: 2         # its best configurations run at full size
```

Any dimension the search space fixes at the job's fidelity may be named with its proxy value
(``width``, a model's ``depth``, ...); the study that runs it is tuner/study/run/proxy_study.py.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from typing import Any

from tuner.errors import ConfigError
from tuner.study.space.custom import Given
from tuner.study.space.space import Choice, Fixed, SearchSpace

# The keys of a proxy that are not dimensions.
SETTINGS = ("target", "horizon", "share", "candidates")
# A proxy study's candidates and the baseline are decided at full size unless this far apart.
CLEAR_MARGIN = 1.25


@dataclass(frozen=True)
class Proxy:
    """Where the search runs: dimension values (``dims``) over the job's, and the proxy's own target."""

    dims: dict[str, Any] = field(default_factory=dict, metadata={"allowed": "a number (another fidelity: a value of its type)"})
    target: float | None = field(default=None, metadata={"allowed": "a number, or null (the job's)"})
    horizon: float = field(default=1.0, metadata={"allowed": "a number in (0, 1]"})
    share: float = field(default=0.5, metadata={"allowed": "a number in (0, 1)"})
    candidates: int = field(default=2, metadata={"allowed": "an integer >= 1"})

    def mup_dims(self, space: SearchSpace) -> dict[str, Fixed]:
        """What a proxy study fixes where ``space`` names none: ``parametrization: mup``, so that a
        rate found at the proxy holds at the job's width, and muP's base at the proxy's width, so
        that the search trains as the standard parametrization does and muP only scales up from
        it (tuner/train/mup.py). The baseline keeps what the job trains with today."""
        dims = {"parametrization": Fixed("mup")}
        if "width" in self.dims:
            dims["mup_base"] = Fixed(float(self.dims["width"]))
        return {name: spec for name, spec in dims.items() if name not in space.dims}

    def to_dict(self) -> dict[str, Any]:
        return {**self.dims, "target": self.target, "horizon": self.horizon, "share": self.share, "candidates": self.candidates}


def parse_proxy(raw: Any, space: SearchSpace, source: str) -> Proxy | None:
    """The ``proxy:`` section (None when absent); each dimension it names must be one the space fixes."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(source, "proxy", "a mapping of fixed dimensions (width, ...) and target, horizon, share, candidates", raw)
    dims = {k: v for k, v in raw.items() if k not in SETTINGS}
    # A fidelity: the width, or a model hyperparameter of the task's own (depth), fixed at the job's value.
    fidelities = [k for k, s in space.dims.items() if isinstance(s, Fixed) and (k == "width" or k in space.custom)]
    for name, value in dims.items():
        spec = space.dims.get(name)
        if name not in fidelities and (name == "width" or name in space.custom) and spec is not None:
            # A fidelity the space searches: the proxy's value has no job's value to stand for.
            searched = f"choices {list(spec.choices)}" if isinstance(spec, Choice) else f"a range {spec.low:g} .. {spec.high:g}"
            allowed = f"a value fixed at the job's {name}, which proxy.{name} stands in for"
            raise ConfigError(source, f"search_space.{name}", allowed, searched)
        if name not in fidelities:
            allowed = "target, horizon, share, candidates, or a fidelity the search space fixes at the job's value"
            given: Any = name
            close = difflib.get_close_matches(str(name), [*SETTINGS, *fidelities], n=1)
            if close:
                given = Given(name)
                given.suggestion = close[0]
            raise ConfigError(source, f"proxy.{name}", f"{allowed} ({', '.join(fidelities) or 'none fixed'})", given)
        if type(value) is not type(spec.value) and not (isinstance(spec.value, float) and isinstance(value, int)):
            raise ConfigError(source, f"proxy.{name}", f"a value of the type of the job's ({spec.value!r})", value)
        if name == "width" and not value < spec.value:  # a proxy is cheaper than the job
            raise ConfigError(source, "proxy.width", f"a width below the job's ({spec.value:g}): a proxy is cheaper than the job", value)
    if not dims and raw.get("target") is None and raw.get("horizon", 1.0) == 1.0:
        raise ConfigError(source, "proxy", "at least one fidelity cheaper than the job's (a dimension, target or horizon)", raw)
    proxy = Proxy(dims=dims)
    checks = {
        "target": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number (the proxy's target)"),
        "horizon": (lambda v: isinstance(v, (int, float)) and 0 < v <= 1, "a number in (0, 1]"),
        "share": (lambda v: isinstance(v, (int, float)) and 0 < v < 1, "a number in (0, 1)"),
        "candidates": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, "an integer >= 1"),
    }
    for key, (ok, allowed) in checks.items():
        if key in raw:
            if not ok(raw[key]):
                raise ConfigError(source, f"proxy.{key}", allowed, raw[key])
            proxy = dataclasses.replace(proxy, **{key: float(raw[key]) if key != "candidates" else raw[key]})
    return proxy


def check_proxy_target(proxy: Proxy | None, target: float, direction: str | None, source: str) -> None:
    """A proxy's target no harder than the job's (``direction``: the objective's): a proxy is cheaper than the job."""
    if proxy is None or proxy.target is None or direction not in ("maximize", "minimize"):
        return
    harder = proxy.target > target if direction == "maximize" else proxy.target < target
    if harder:
        allowed = f"a target no harder than the job's ({target:g}, to {direction}): a proxy is cheaper than the job"
        raise ConfigError(source, "proxy.target", allowed, proxy.target)
