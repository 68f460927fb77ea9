"""Energy meters on made-up RAPL counter folders: reading, wrap-around, none readable."""

from __future__ import annotations

from pathlib import Path

from tuner.train.energy import EnergyMeter, energy_meter, rapl_zones


def make_zone(root: Path, name: str, label: str, energy_uj: int, max_uj: int = 262_143_328_850) -> Path:
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "name").write_text(label + "\n")
    (zone / "energy_uj").write_text(f"{energy_uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return zone


def set_counter(zone: Path, energy_uj: int) -> None:
    (zone / "energy_uj").write_text(f"{energy_uj}\n")


def test_rapl_reads_packages_not_subzones(tmp_path: Path) -> None:
    make_zone(tmp_path, "intel-rapl:0", "package-0", 1_000_000)
    make_zone(tmp_path, "intel-rapl:1", "package-1", 5_000_000)
    make_zone(tmp_path, "intel-rapl:0:0", "core", 123)  # inside package-0: counting it would count twice
    (tmp_path / "intel-rapl-mmio:0").mkdir()
    zones = rapl_zones(tmp_path)
    assert [z.name for z in zones] == ["package-0", "package-1"]


def test_meter_sums_timed_intervals_only(tmp_path: Path) -> None:
    p0 = make_zone(tmp_path, "intel-rapl:0", "package-0", 1_000_000)
    p1 = make_zone(tmp_path, "intel-rapl:1", "package-1", 0)
    meter = energy_meter("cpu", rapl_root=tmp_path)
    assert meter.available and meter.source == "rapl (package-0, package-1)"
    meter.resume()
    set_counter(p0, 3_000_000)  # +2 J
    set_counter(p1, 500_000)  # +0.5 J
    meter.pause()
    set_counter(p0, 10_000_000)  # an evaluation: untimed, not counted
    meter.resume()
    set_counter(p0, 11_000_000)  # +1 J
    meter.pause()
    assert abs(meter.measured() - 3.5) < 1e-9


def test_wrap_around_uses_max_energy_range(tmp_path: Path) -> None:
    zone = make_zone(tmp_path, "intel-rapl:0", "package-0", 990_000, max_uj=1_000_000)
    meter = energy_meter("cpu", rapl_root=tmp_path)
    meter.resume()
    set_counter(zone, 20_000)  # wrapped: 10_000 to the top, then 20_000 more
    meter.pause()
    assert abs(meter.measured() - 0.03) < 1e-9


def test_no_rapl_folder_is_unavailable(tmp_path: Path) -> None:
    meter = energy_meter("cpu", rapl_root=tmp_path / "absent")
    assert not meter.available
    assert meter.source.startswith("unavailable")
    meter.resume()
    meter.pause()
    assert meter.measured() is None


def test_unreadable_counter_is_unavailable(tmp_path: Path) -> None:
    zone = make_zone(tmp_path, "intel-rapl:0", "package-0", 1)
    (zone / "energy_uj").unlink()
    (zone / "energy_uj").mkdir()  # reading a folder fails as a root-only file would for a user
    assert rapl_zones(tmp_path) == []
    assert not energy_meter("cpu", rapl_root=tmp_path).available


def test_counter_vanishing_mid_trial_keeps_what_was_measured(tmp_path: Path) -> None:
    zone = make_zone(tmp_path, "intel-rapl:0", "package-0", 0)
    meter: EnergyMeter = energy_meter("cpu", rapl_root=tmp_path)
    meter.resume()
    set_counter(zone, 2_000_000)
    meter.pause()
    meter.resume()
    (zone / "energy_uj").unlink()
    meter.pause()
    assert meter.measured() == 2.0
