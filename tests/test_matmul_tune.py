"""The matmul autotuner: candidates per shape, shape classes, the default plan, and on the
device: one timing per shape class off the event loop, the winner kept in a file that a
second device reads without timing anything, a broken file ignored with a warning,
tuning off (option or environment) taking the default plan and touching no file."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.codegen.wgsl import matmul_plan
from asyncfusion.backends.wgpu.matmul_launch import MatmulLauncher
from asyncfusion.codegen.wgsl.matmul_plan import (WAVE, MatmulPlan, candidates, default_plan,
                                                   shape_class)
from asyncfusion.codegen.wgsl.matmul import MatmulTiles
from asyncfusion.codegen.wgsl.autotune import ENV_TUNE
from tests.conftest import assert_close

H200 = {"max-compute-invocations-per-workgroup": 512, "max-compute-workgroup-storage-size": 49152}
SMALL = {"max-compute-invocations-per-workgroup": 128, "max-compute-workgroup-storage-size": 16384}
FEW = (MatmulTiles(32, 32, 8, 4, 4), MatmulTiles(16, 64, 16, 4, 4))
RNG = np.random.default_rng(5)


def names(plans):
    return {p.name for p in plans}


def test_candidates_hold_the_probe_shapes_and_fit_the_adapter():
    big = names(candidates(1, 4096, 4096, 4096, H200))
    assert {"128x128x8/8x8", "128x128x16/8x8", "128x64x16/8x4", "64x64x16/8x8"} <= big
    assert not any("/k" in n for n in big)  # a wave of tiles: no split
    assert "32x32x8/4x4" not in big  # 64x64 tiles make a wave: nothing smaller is timed
    small = candidates(1, 4096, 4096, 4096, SMALL)
    assert small and all(p.tiles.threads <= 128 and p.tiles.shared_bytes <= 16384
                         for p in small)
    tiny = candidates(1, 1, 512, 784, H200)  # one row: short tiles only, K too short to split
    assert tiny and all(p.tiles.tm <= 32 and p.split == 1 for p in tiny)
    wide = names(candidates(1, 4, 1_000_000, 256, H200))  # 4 rows, a wave of any tile:
    assert "16x64x16/4x4" in wide and all(int(n.split("x")[0]) <= 32 for n in wide)


def test_a_long_k_over_few_tiles_adds_split_plans_of_about_a_wave():
    plans = candidates(1, 256, 256, 65536, H200)
    split = [p for p in plans if p.split > 1]
    assert split and all(p.split <= 65536 // 512 for p in split)
    for p in split:
        tiles = (256 // p.tiles.tm) * (256 // p.tiles.tn)
        assert tiles < WAVE <= 2 * tiles * p.split  # at least about one wave of workgroups


def test_the_default_plan_splits_only_on_a_gpu_and_only_a_long_k():
    assert default_plan(1, 256, 256, 65536, H200, gpu=True).split > 1
    assert default_plan(1, 256, 256, 65536, H200, gpu=False).split == 1
    assert default_plan(1, 4096, 4096, 4096, H200, gpu=True) == MatmulPlan(
        matmul_plan.TILES[0])
    assert default_plan(1, 256, 512, 784, H200, gpu=True).split == 1  # the MLP layer


def test_shape_classes_round_sizes_and_keep_dtype_and_layout_apart():
    row, t = MatmulTiles(64, 64, 16, 4, 4, True, False, True, True), af.float32
    one = shape_class(t, 1, 1, 512, 784, row)
    assert one == shape_class(t, 1, 16, 300, 1000, row)  # M up to 16 share a class
    assert one != shape_class(t, 1, 17, 512, 784, row)
    assert one != shape_class(af.float16, 1, 1, 512, 784, row)
    assert one != shape_class(t, 1, 1, 512, 784, MatmulTiles(64, 64, 16, 4, 4, False))


def test_plans_round_trip_through_json_and_refuse_what_is_not_one():
    plan = MatmulPlan(MatmulTiles(128, 64, 16, 8, 4), 4)
    assert MatmulPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    for bad in (None, [], {"tm": 3}, {**plan.to_json(), "rm": 3}, {**plan.to_json(), "split": 0},
                {**plan.to_json(), "tk": True}):
        assert MatmulPlan.from_json(bad) is None


@pytest.fixture
def few(monkeypatch):
    """Two small candidates (lavapipe compiles them fast); the measurements' threads."""
    monkeypatch.setattr(matmul_plan, "CANDIDATE_TILES", FEW)
    threads: list[int] = []
    measure = MatmulLauncher.measure

    def spy(self, *args, **kwargs):
        threads.append(threading.get_ident())
        return measure(self, *args, **kwargs)
    monkeypatch.setattr(MatmulLauncher, "measure", spy)
    return threads


async def _product(dev, m, k, n):
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    got = await (af.tensor(a, device=dev) @ af.tensor(b, device=dev)).to_data()
    assert_close(got, a @ b, rtol=1e-4, atol=1e-4)


@pytest.fixture
def laid_out(monkeypatch):
    """The plans of every matmul launch laid out (``MatmulLauncher.lay_out``), in order."""
    plans: list[MatmulPlan] = []
    lay_out = MatmulLauncher.lay_out

    def spy(self, kernel, args, plan):
        plans.append(plan)
        return lay_out(self, kernel, args, plan)
    monkeypatch.setattr(MatmulLauncher, "lay_out", spy)
    return plans


def _file(tmp_path):
    files = list(tmp_path.glob("matmul-*.json"))
    assert len(files) == 1
    return files[0]


async def test_a_class_is_timed_once_off_the_loop_and_a_second_device_reads_the_file(
        tmp_path, few):
    async with af.open_device(matmul_tune=True, tune_dir=tmp_path) as dev:
        await _product(dev, 40, 24, 40)
        assert dev.backend.tuner.runs == 2  # each candidate once (the default is one)
        assert few and threading.get_ident() not in few  # the executor thread timed them
        await _product(dev, 36, 20, 44)  # the same class: nothing timed
        assert dev.backend.tuner.runs == 2
        records = dict(dev.backend.tuner.records)
    data = json.loads(_file(tmp_path).read_text())
    assert data["classes"] == records
    (record,) = records.values()
    assert set(record["us"]) == {t.name for t in FEW} and all(v > 0 for v in record["us"].values())
    assert record["shape"] == [1, 40, 40, 24]
    async with af.open_device(matmul_tune=True, tune_dir=tmp_path) as dev:
        before = len(few)
        await dev.sync()
        start = dev.stats().launches
        await _product(dev, 36, 20, 44)
        assert dev.backend.tuner.runs == 0 and len(few) == before  # read, not timed
        assert dev.stats().launches - start == 1
        assert dev.backend.tuner.records == records


async def test_wall_time_times_plans_where_timestamps_are_not_used(tmp_path, few, monkeypatch):
    measure = MatmulLauncher.measure
    monkeypatch.setattr(MatmulLauncher, "measure",
                        lambda self, *a: measure(self, *a, timestamps=False))
    async with af.open_device(matmul_tune=True, tune_dir=tmp_path) as dev:
        await _product(dev, 20, 12, 28)
        (record,) = dev.backend.tuner.records.values()
    assert all(v > 0 for v in record["us"].values())


async def test_a_broken_tuning_file_is_ignored_with_a_warning_and_rewritten(tmp_path, few):
    async with af.open_device(matmul_tune=True, tune_dir=tmp_path) as dev:
        await _product(dev, 40, 24, 40)
    path = _file(tmp_path)
    good = json.loads(path.read_text())
    path.write_text("{not json")
    with pytest.warns(RuntimeWarning, match=r"ignoring the matmul tuning file .*not JSON"):
        async with af.open_device(matmul_tune=True, tune_dir=tmp_path) as dev:
            await _product(dev, 40, 24, 40)
            assert dev.backend.tuner.runs == 2
    assert json.loads(path.read_text())["classes"].keys() == good["classes"].keys()
    (cls,) = good["classes"]
    path.write_text(json.dumps({**good, "classes": {cls: {"plan": {"tm": 3}}}}))
    with pytest.warns(RuntimeWarning, match="holds no usable plan"):
        async with af.open_device(matmul_tune=True, tune_dir=tmp_path) as dev:
            await _product(dev, 40, 24, 40)
            assert dev.backend.tuner.runs == 2


async def test_tuning_off_takes_the_default_plan_and_touches_no_file(tmp_path, few, laid_out,
                                                                     monkeypatch):
    plans = laid_out
    async with af.open_device(matmul_tune=False, tune_dir=tmp_path) as dev:
        await _product(dev, 40, 24, 40)
        assert not dev.backend.tuner.enabled and dev.backend.tuner.runs == 0
        assert plans == [default_plan(1, 40, 40, 24, dev.backend.limits, gpu=False)]
    assert not list(tmp_path.iterdir()) and not few
    for env, option, on in (("1", None, True), ("0", None, False), ("0", True, True),
                            ("", None, False)):  # lavapipe is a CPU adapter: off
        monkeypatch.setenv(ENV_TUNE, env)
        async with af.open_device(matmul_tune=option, tune_dir=tmp_path) as dev:
            assert dev.backend.tuner.enabled is on


@pytest.mark.parametrize("options, text", [({"matmul_tune": 1}, "matmul_tune must be"),
                                           ({"tune_dir": 3}, "tune_dir must be")])
def test_bad_tuning_options_are_refused_naming_them(options, text):
    with pytest.raises(TypeError, match=text):
        af.DeviceOptions(**options)


def test_tune_matmul_tunes_shapes_ahead_and_then_reads_them(tmp_path, few, capsys):
    from asyncfusion.__main__ import main

    assert main(["tune-matmul", "--shapes", "40x24x40,16x100x64", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("(timed now)") == 2 and "16x64x16/4x4" in out
    assert main(["tune-matmul", "--shapes", "40x24x40", "--dir", str(tmp_path)]) == 0
    assert "(kept)" in capsys.readouterr().out
    assert len(json.loads(_file(tmp_path).read_text())["classes"]) == 2


async def test_a_repeated_launch_is_laid_out_once(laid_out):
    """Plan, tiles, uniform words and WGSL are made on a launch's first run only: later
    launches of the same kernel and arguments reuse them (the executor's hot path)."""
    calls = laid_out
    async with af.open_device(matmul_tune=False) as dev:
        for _ in range(3):
            await _product(dev, 12, 8, 20)
        assert len(calls) == 1
        await _product(dev, 12, 8, 24)  # other arguments: laid out anew
        assert len(calls) == 2
