"""Where a fresh filter's time goes in the engine: `python bench/profile_filter.py [--arch]`.

Builds the random-weight model of `heron bench engine`, runs one warm-up and one timed filter
over fresh documents through `LocalEngine` in this process under the torch profiler, and prints
the top device and host entries (GPU machines; the numbers go to bench/NOTES.md).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from heron.bench.engine import ARCHS, build_model, text
from heron.engine.api import AnswerKind, Request
from heron.engine.config import EngineConfig
from heron.engine.local import LocalEngine
from heron.engine.prompts import filter_prompt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="qwen3-0.6b", choices=sorted(ARCHS))
    parser.add_argument("--docs", type=int, default=300)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp()) / "model"
    build_model(folder, ARCHS[args.arch], "cuda")
    engine = LocalEngine(EngineConfig(model=str(folder), device="cuda"))
    rng = random.Random(1)
    warm = [filter_prompt(text(rng, 230), "Is this a warm-up?") for _ in range(64)]
    engine.answer(Request(AnswerKind.BOOLEAN, tuple(warm)))
    prompts = tuple(filter_prompt(text(rng, 230), "Is it about a river?")
                    for _ in range(args.docs))
    torch.cuda.synchronize()
    started = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        answers = engine.answer(Request(AnswerKind.BOOLEAN, prompts))
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    m = answers.metrics
    print(f"{m.prompts} prompts, {m.fresh_tokens} fresh tokens in {seconds:.2f} s "
          f"({m.fresh_tokens / seconds:,.0f} tok/s, profiled)")
    for key in ("cuda_time_total", "cpu_time_total"):
        print(prof.key_averages().table(sort_by=key, row_limit=22, max_name_column_width=60))
    engine.close()


if __name__ == "__main__":
    main()
