"""Energy, measured: the GPU's counter through NVML, or RAPL counters on a CPU; else unavailable.

Nothing here estimates. A meter reads cumulative hardware counters at the boundaries of the
timed region (training starts, an evaluation pauses it, training resumes), never per step,
and adds up the joules spent while the train clock ran. Where no counter can be read (no
GPU management library, RAPL absent or readable by root only), the meter says so and a
trial records no energy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

RAPL_ROOT = Path("/sys/class/powercap")

try:  # NVIDIA's management library (nvidia-ml-py); absent on machines without NVIDIA's driver stack
    import pynvml

    _NVML_ERRORS: tuple[type[BaseException], ...] = (pynvml.NVMLError,)
except ImportError:
    pynvml = None
    _NVML_ERRORS = ()
COUNTER_ERRORS = (OSError, ValueError, *_NVML_ERRORS)


class Counter(Protocol):
    """A cumulative energy counter: raw units, the unit in joules, where it wraps (None: never)."""

    name: str
    joules_per_unit: float
    wraps_at: int | None

    def read(self) -> int: ...


@dataclass
class RaplZone:
    """One RAPL package zone (``intel-rapl:N/energy_uj``); AMD's kernels use the same files."""

    path: Path
    name: str
    wraps_at: int | None
    joules_per_unit: float = 1e-6

    def read(self) -> int:
        return int((self.path / "energy_uj").read_text().strip())


@dataclass
class NvmlDevice:
    """A GPU's total energy since the driver loaded, in millijoules (Volta and later)."""

    index: int
    name: str
    wraps_at: int | None = None  # a 64-bit counter
    joules_per_unit: float = 1e-3

    def read(self) -> int:
        return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(pynvml.nvmlDeviceGetHandleByIndex(self.index)))


def rapl_zones(root: Path | str = RAPL_ROOT) -> list[RaplZone]:
    """The readable top-level RAPL zones under ``root`` (packages; their subzones would count twice).

    A zone whose counter cannot be read (recent kernels make ``energy_uj`` root-only) is left
    out, so a machine where none can be read has no zones.
    """
    root = Path(root)
    zones = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    for entry in entries:
        # intel-rapl:0 is a package; intel-rapl:0:1 a subzone (core, dram) inside it.
        if not entry.name.startswith("intel-rapl:") or entry.name.count(":") != 1:
            continue
        try:
            name = (entry / "name").read_text().strip() if (entry / "name").exists() else entry.name
            wraps_at = int((entry / "max_energy_range_uj").read_text().strip()) if (entry / "max_energy_range_uj").exists() else None
            zone = RaplZone(entry, name, wraps_at)
            zone.read()
        except (OSError, ValueError):
            continue
        zones.append(zone)
    return zones


def nvml_devices(index: int) -> list[NvmlDevice]:
    """The GPU ``index`` if NVML can read its energy counter; else none."""
    if pynvml is None:
        return []
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        name = pynvml.nvmlDeviceGetName(handle)
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    except _NVML_ERRORS:  # no driver, no GPU, or a GPU without the counter
        return []
    return [NvmlDevice(index, name if isinstance(name, str) else name.decode())]


@dataclass
class EnergyMeter:
    """Joules spent while the timed region runs, from cumulative counters.

    ``resume()`` when the train clock starts or restarts, ``pause()`` when it stops; both
    read the counters, and ``joules`` is the sum over the timed intervals. A counter that
    went backwards wrapped once at ``wraps_at`` (reads are seconds apart, a wrap takes minutes).
    """

    counters: list[Counter]
    source: str
    joules: float = 0.0
    _last: list[int] | None = field(default=None, repr=False)

    @property
    def available(self) -> bool:
        return bool(self.counters)

    def _read(self) -> list[int] | None:
        try:
            return [c.read() for c in self.counters]
        except COUNTER_ERRORS:
            return None

    def resume(self) -> None:
        if self.available:
            self._last = self._read()

    def pause(self) -> None:
        if self._last is None:
            return
        now = self._read()
        if now is None:  # the counter vanished mid-trial: keep what was measured, read no more
            self.counters = []
        else:
            self.joules += sum(_delta(c, a, b) * c.joules_per_unit for c, a, b in zip(self.counters, self._last, now))
        self._last = None

    def measured(self) -> float | None:
        """Joules over the timed region so far, or None where energy is unavailable."""
        return self.joules if self.available or self.joules else None


def _delta(counter: Counter, before: int, after: int) -> int:
    if after >= before:
        return after - before
    if counter.wraps_at is None:
        return 0  # a counter reset (driver reload): nothing trustworthy to add
    return counter.wraps_at - before + after


UNAVAILABLE = "unavailable"


def energy_meter(device_type: str, device_index: int | None = None, rapl_root: Path | str = RAPL_ROOT) -> EnergyMeter:
    """The meter for a trial on this device: NVML on a GPU, RAPL on a CPU, else unavailable."""
    if device_type == "cuda":
        gpus = nvml_devices(device_index or 0)
        if gpus:
            return EnergyMeter(list(gpus), f"nvml ({gpus[0].name})")
        return EnergyMeter([], f"{UNAVAILABLE} (NVML cannot read this GPU's energy counter)")
    zones = rapl_zones(rapl_root)
    if zones:
        return EnergyMeter(list(zones), "rapl (" + ", ".join(z.name for z in zones) + ")")
    return EnergyMeter([], f"{UNAVAILABLE} (no readable RAPL counters under {rapl_root})")


def energy_source(device_type: str, device_index: int | None = None, rapl_root: Path | str = RAPL_ROOT) -> str:
    """Where this machine's energy figures come from, in words (for `tuner env` and reports)."""
    return energy_meter(device_type, device_index, rapl_root).source
