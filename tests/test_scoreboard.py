"""bench/scoreboard.py's row building, targets, schema check and writers (no timings are
judged), and one queued timing on a real device at a tiny size."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import numpy as np

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import board as B  # noqa: E402
import floors  # noqa: E402
import kernel_rows as K  # noqa: E402
import scoreboard  # noqa: E402

import asyncfusion as af  # noqa: E402


def _payload(rows: list[dict]) -> dict:
    return {"commit": "abc1234", "date": "2026-01-01T00:00:00+00:00", "device": "test",
            "rows": rows}


def _all_rows() -> list[dict]:
    return [B.row(w, 1.0, "peer", 2.0, B.ratio_at_most(1.3)) for w in B.WORKLOADS]


def test_a_row_has_the_schema_keys_first_and_its_ratio_and_verdict():
    r = B.row("softmax", 1.2, "torch eager", 1.0, B.ratio_at_most(1.2), gpu_ms=0.9,
              sm_clock_mhz=1980, shape=[4, 256])
    assert list(r)[:len(B.ROW_KEYS)] == list(B.ROW_KEYS)
    assert r["ratio"] == 1.2 and r["met"] is True and r["shape"] == [4, 256]
    assert B.row("softmax", 1.3, "t", 1.0, B.ratio_at_most(1.2))["met"] is False
    missing = B.row("softmax", 1.0, "torch (not installed)", None, B.ratio_at_most(1.2))
    assert missing["ratio"] is None and missing["met"] is None
    nan = B.row("softmax", float("nan"), "t", 1.0, B.ratio_at_most(1.2))
    assert nan["af_ms"] is None and nan["met"] is None


def test_compound_and_lower_bound_targets():
    both = B.Target("<= 50 ms and <= 2 launches",
                    (B.Cond("af_ms", "<=", 50.0), B.Cond("launches", "<=", 2)))
    assert B.row("tasks_1000", 40.0, "t", 100.0, both, launches=1)["met"] is True
    assert B.row("tasks_1000", 40.0, "t", 100.0, both, launches=3)["met"] is False
    assert B.row("tasks_1000", 60.0, "t", 100.0, both)["met"] is False  # no launches: still no
    assert B.row("tasks_1000", 40.0, "t", 100.0, both)["met"] is None
    frac = B.row("reduce_sum_bandwidth", 2.0, "copy", 1.5, B.ratio_at_least(0.7), ratio=0.75)
    assert frac["ratio"] == 0.75 and frac["met"] is True


def test_the_schema_check_names_what_is_wrong():
    assert B.schema_errors(_payload(_all_rows())) == []
    rows = _all_rows()
    rows[0] = B.error_row(rows[0]["workload"], "RuntimeError: boom")
    del rows[1]["gpu_ms"]
    rows[2]["af_ms"] = "fast"
    errs = B.schema_errors(_payload(rows[:-1]))
    assert any("crashed: RuntimeError: boom" in e for e in errs)
    assert any(f"{B.WORKLOADS[1]}: missing key 'gpu_ms'" in e for e in errs)
    assert any(f"{B.WORKLOADS[2]}: af_ms is str" in e for e in errs)
    assert f"{B.WORKLOADS[-1]}: row missing" in errs
    assert B.schema_errors({"rows": []}, ()) == [
        "missing top-level key 'commit'", "missing top-level key 'date'",
        "missing top-level key 'device'"]


def test_every_workload_is_made_by_exactly_one_step_in_order():
    names = [n for ns, _ in scoreboard.steps(B.Plan.for_smoke(), None, None, "cpu")
             for n in ns]
    assert tuple(names) == B.WORKLOADS
    picked = scoreboard.selected(scoreboard.steps(B.Plan(), None, None, "cpu"),
                                 "matmul,tasks_100")
    assert [n for ns, _ in picked for n in ns] == [
        "tasks_100", "matmul_2048", "matmul_4096", "matmul_8192", "matmul_mlp"]


def test_the_writers_round_trip_the_json_and_tabulate_every_row(tmp_path):
    rows = _all_rows()
    rows[0]["unit"] = "us"
    rows[1] = B.error_row(rows[1]["workload"], "ValueError: no")
    payload = _payload(rows)
    js, md = B.write(payload, "test-host", tmp_path)
    assert js.name == "scoreboard-test-host.json" and md.name == "scoreboard-test-host.md"
    assert json.loads(js.read_text()) == payload
    text = md.read_text()
    assert text == B.markdown(payload)
    for w in B.WORKLOADS:
        assert f"| {w} |" in text
    assert "| 1,000 us | peer | 2,000 us | 0.500x |" in text  # the row's unit: µs
    assert f"* `{B.WORKLOADS[1]}`: ValueError: no" in text


async def test_a_queued_timing_counts_launches_per_evaluation(dev):
    x = af.tensor(np.linspace(-1, 1, 4096, dtype=np.float32), device=dev)
    xs = K._variants(x, 3)
    await dev.sync()
    t = await K.af_queued(dev, lambda i: (xs[i] * 2.0 + 1.0).exp(), 3, B.Plan.for_smoke())
    assert t.k == 3 and t.reps >= 1 and t.ms > 0
    assert t.launches is not None and 0 < t.launches <= 1
    if "timestamp-query" in dev.backend.rt.features:
        assert t.gpu_ms is not None and t.gpu_ms > 0
    del xs, x


def test_the_raw_floors_run_and_check_their_round_trip():
    raw = floors.RawGpu()
    try:
        trips = floors.roundtrip_floor(raw, 0.0, 3)
        full = ("persistent_nosync", "persistent_nosync_poll", "persistent_native_map")
        assert set(trips) == {*full, "persistent_map_sync", "new_staging_map_sync",
                              "dispatch_submit", "empty_submit"}
        name, us = floors.best_trip_us(trips)
        assert us == min(trips[k]["median_us"] for k in full) == trips[name]["median_us"]
        assert all(v["n"] == 3 and v["median_us"] > 0 for v in trips.values())
        copy = floors.copy_bandwidth(raw, 1 << 16, 2, 0.0, 2)
        assert copy["bytes"] == 1 << 16 and copy["GBps"] > 0
        assert (copy["gpu_ms"] is not None) == raw.timestamps
    finally:
        raw.close()


def test_a_thread_hop_is_measured_from_asyncio():
    hop = anyio.run(floors.thread_hop, 0.0, 3, backend="asyncio")  # call_soon_threadsafe
    assert {"worker_hop", "anyio_to_thread", "asyncio_sleep0"} == set(hop)
    assert all(v["n"] == 3 for v in hop.values())


def test_a_step_that_raises_becomes_error_rows_and_fails_the_check(monkeypatch, tmp_path):
    seen: list[list[str]] = []  # the rows in the partial file when each step starts

    def partial() -> list[str]:
        found = list(tmp_path.glob("scoreboard-*-partial.json"))
        return [r["workload"] for r in json.loads(found[0].read_text())["rows"]] if found \
            else []

    async def fine() -> list[dict]:
        seen.append(partial())
        return [B.row("first", 1.0, "peer", 1.0, B.ratio_at_most(1.3))]

    async def broken() -> list[dict]:
        seen.append(partial())
        raise RuntimeError("kernel exploded")

    monkeypatch.setattr(scoreboard, "steps", lambda *args: [
        (("first",), fine), (("second", "third"), broken)])
    payload, expected = anyio.run(scoreboard.run, B.Plan.for_smoke(), None, tmp_path,
                                  backend="asyncio")
    assert seen == [[], ["first"]]  # a run cut short keeps the rows it made
    assert not list(tmp_path.glob("*partial*"))  # a finished run leaves the whole only
    assert expected == ("first", "second", "third")
    assert [r["workload"] for r in payload["rows"]] == ["first", "second", "third"]
    assert payload["rows"][1]["error"] == "RuntimeError: kernel exploded"
    assert "kernel exploded" in payload["rows"][2]["traceback"]
    errs = B.schema_errors(payload, expected)
    assert errs == ["second: crashed: RuntimeError: kernel exploded",
                    "third: crashed: RuntimeError: kernel exploded"]
