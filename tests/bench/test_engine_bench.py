"""`heron bench engine` runs end to end on the CPU with a tiny model and reports every number."""

from __future__ import annotations

import json

import pytest

from heron.bench import engine as bench_engine


@pytest.mark.timeout(300)
def test_bench_engine_tiny_cpu(tmp_path) -> None:
    out = tmp_path / "bench.json"
    assert bench_engine.main(["--arch", "tiny", "--device", "cpu", "--docs", "12", "--terms", "6",
                              "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    names = [w["name"] for w in report["workloads"]]
    assert [n[:3] for n in names] == ["(a)", "(b)", "(c)", "(d)", "(d)", "(e)", "(f)"]
    for workload in report["workloads"][:-1]:
        assert workload["seconds"] > 0 and workload["prompts"] > 0
        assert 0 < workload["fresh_tokens"] <= workload["input_tokens"]
        # The engine's first chunk came during the statement; its chunks ran part of its time.
        assert 0 <= workload["first_chunk_s"] < workload["seconds"]
        assert 0 < workload["device_seconds"] <= workload["seconds"]
    nested = report["workloads"][5]
    assert report["trie_minimum"] <= nested["fresh_tokens"] < nested["input_tokens"]
    same, _, total = report["workloads"][6]["note"].split()[:3]
    assert same == total  # float32 CPU, row-invariant: every score kept its bits
    join = report["workloads"][1]
    assert join["fresh_tokens"] < join["input_tokens"] / 2  # the reports' KV served every term
    assert report["gemm_tflops"] > 0 and report["speed_of_light_tok_s"] > 0
    assert report["gemm_sustained_tflops"] == report["gemm_tflops"]  # one measurement on CPU
    assert report["transformers_tok_s"] > 0
