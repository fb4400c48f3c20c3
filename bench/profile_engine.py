"""Where the engine's time goes: `python -m heron.bench.profile_engine [--arch] [--workload]`.

Builds the random-weight model of `heron bench engine` and runs, through `LocalEngine` in this
process, one warm-up and one timed call of the workload under the torch profiler: `filter`
(fresh documents of ~290 tokens, as workload (a)) or `join` (anchors of ~4,000 tokens, each asked
about every term, as workload (b), the anchors' KV computed in the warm-up so that the timed call
is the partners' part). Prints the wall time, the GPU's busy time, when the first chunk started
after the call (admission: the first part of the prompts tokenized and scheduled) and the top
device and host entries (GPU machines; the numbers go to bench/NOTES.md).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from heron.bench.engine import ARCHS, WORDS, Arch, build_model, text
from heron.engine.api import AnswerKind, Request
from heron.engine.config import EngineConfig
from heron.engine.local import LocalEngine
from heron.engine.prompts import Prompt, filter_prompt, join_prompt


def workload(name: str, arch: Arch, rng: random.Random, size: int
             ) -> tuple[list[Prompt], list[Prompt]]:
    """(warm-up prompts, timed prompts) of a workload; the join's anchors are `arch`'s reports."""
    if name == "filter":
        warm = [filter_prompt(text(rng, 230), "Is this a warm-up?") for _ in range(64)]
        return warm, [filter_prompt(text(rng, 230), "Is it about a river?") for _ in range(size)]
    reports = [text(rng, arch.report_words) for _ in range(arch.reports)]
    terms = [f"{' '.join(rng.sample(WORDS, 2))} {i}" for i in range(size)]
    question = "Report: DOCUMENT 0 Does the report mention DOCUMENT 1?"  # as the planner words it
    warm = [join_prompt(r, question, "warm-up") for r in reports]
    # One prefix string per anchor and one suffix per term, shared by the pairs as the
    # planner's are (equal strings made apart would be hashed once per pair).
    suffixes = [join_prompt("", question, t).suffix for t in terms]
    return warm, [Prompt(w.prefix, s) for w in warm for s in suffixes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="qwen3-0.6b", choices=sorted(ARCHS))
    parser.add_argument("--workload", default="filter", choices=["filter", "join"])
    parser.add_argument("--size", type=int, default=300, help="documents, or terms of the join")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp8"])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--attention", default="segments", choices=["segments", "fa3"])
    parser.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--trace", help="write a Chrome trace to this file")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp()) / "model"
    build_model(folder, ARCHS[args.arch], args.device)
    engine = LocalEngine(EngineConfig(model=str(folder), device=args.device, dtype=args.dtype,
                                      attention=args.attention,
                                      deterministic=args.deterministic))
    warm, prompts = workload(args.workload, ARCHS[args.arch], random.Random(1), args.size)
    engine.answer(Request(AnswerKind.BOOLEAN, tuple(warm)))
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else lambda: None
    sync()
    started = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        called = time.monotonic()  # the clock of `Metrics.first_chunk_at`
        answers = engine.answer(Request(AnswerKind.BOOLEAN, tuple(prompts)))
        sync()
    seconds = time.perf_counter() - started
    m = answers.metrics
    events = prof.key_averages()
    busy = sum(e.self_device_time_total for e in events) / 1e6
    print(f"{args.workload}: {m.prompts} prompts, {m.input_tokens:,} input and "
          f"{m.fresh_tokens:,} fresh tokens in {seconds:.2f} s ({m.input_tokens / seconds:,.0f} "
          f"input, {m.fresh_tokens / seconds:,.0f} fresh tok/s, profiled); GPU busy {busy:.2f} s; "
          f"first chunk {1e3 * (m.first_chunk_at - called):.0f} ms after the call, chunks "
          f"running {m.device_seconds:.2f} s")
    for key in ("self_cuda_time_total", "cpu_time_total"):
        print(events.table(sort_by=key, row_limit=25, max_name_column_width=70))
    if args.trace:
        prof.export_chrome_trace(args.trace)
    engine.close()


if __name__ == "__main__":
    main()
