"""Heron's benchmarks: `heron bench engine` (`bench/engine.py`), and the GPU scripts beside it
(`kernels.py`, `gpu_smoke.py`, `attention_bench.py`). `NOTES.md` keeps what they measured."""
