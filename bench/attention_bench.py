"""Micro-benchmark of the engine's attention on AI-SQL shapes: batched `packed_attention`
against its float32 per-row twin `packed_attention_reference`, on random inputs.

    python bench/attention_bench.py            # on CUDA (bf16); --device cpu for a dry run
    python bench/attention_bench.py --fp32-operands   # batched path with float32 matmul operands

Prints, per shape, the max |error| against the reference and milliseconds per layer call.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heron.engine import attention  # noqa: E402
from heron.engine.attention.reference import packed_attention_reference  # noqa: E402

Q_HEADS, KV_HEADS, HEAD_DIM = 16, 8, 128  # Qwen3-0.6B's attention shape
Case = tuple[list[tuple[int, int | None]], list[int]]  # (row length, prefix slot), prefix lengths


def shapes(gen: torch.Generator) -> Iterator[tuple[str, Case]]:
    def n(lo: int, hi: int) -> int:
        return int(torch.randint(lo, hi + 1, (1,), generator=gen))

    anchors = [n(280, 320) for _ in range(40)]
    yield "join 40 anchors x 24 partners", ([(n(15, 25), g) for g in range(40) for _ in range(24)],
                                            anchors)
    anchors = [n(280, 300) for _ in range(300)]
    yield "second question, 300 cached docs", ([(n(20, 30), g) for g in range(300)], anchors)
    yield "2 anchors of 4096 x 2000 partners of 11", ([(11, g % 2) for g in range(2000)],
                                                      [4096, 4096])
    yield "filter chunk, 113 rows ~290, no prefix", ([(n(280, 300), None) for _ in range(113)], [])


def build(case: Case, device: str, dtype: torch.dtype) -> tuple:
    specs, prefix_lengths = case
    total = sum(length for length, _ in specs)

    def rand(tokens: int, heads: int) -> torch.Tensor:
        return torch.randn(tokens, heads, HEAD_DIM, device=device, dtype=dtype)

    rows, start = [], 0
    for length, _ in specs:
        rows.append(attention.RowSpan(start, start + length))
        start += length
    # The prefixes' KV as the engine keeps it: in one store (the KV arena), read by slot.
    bounds = np.cumsum([0, *prefix_lengths])
    slots = [np.arange(a, b, dtype=np.int64) for a, b in zip(bounds, bounds[1:], strict=False)]
    store = (rand(int(bounds[-1]), KV_HEADS), rand(int(bounds[-1]), KV_HEADS))
    return (rand(total, Q_HEADS), rand(total, KV_HEADS), rand(total, KV_HEADS), rows,
            [slot for _, slot in specs], slots, store, HEAD_DIM**-0.5)


def milliseconds(fn: Callable[..., object], inputs: tuple, iterations: int,
                 sync: Callable[[], None]) -> float:
    fn(*inputs)
    sync()
    started = time.perf_counter()
    for _ in range(iterations):
        fn(*inputs)
    sync()
    return (time.perf_counter() - started) / iterations * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--fp32-operands", action="store_true",
                        help="upcast 16-bit matmul operands to float32 (low_precision=False)")
    args = parser.parse_args()
    batched_attention = functools.partial(attention.packed_attention,
                                          low_precision=not args.fp32_operands)
    cuda = args.device.startswith("cuda")
    dtype = torch.bfloat16 if cuda else torch.float32
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    with torch.inference_mode():
        for name, case in shapes(torch.Generator().manual_seed(0)):
            inputs = build(case, args.device, dtype)
            reference = packed_attention_reference(*inputs).float()
            error = (batched_attention(*inputs).float() - reference).abs().max().item()
            batched = milliseconds(batched_attention, inputs, 10, sync)
            per_row = milliseconds(packed_attention_reference, inputs, 2, sync)
            print(f"{name}: {inputs[0].shape[0]} tokens; batched {batched:.2f} ms, per-row "
                  f"reference {per_row:.2f} ms ({per_row / batched:.0f}x); max|err| {error:.1e}",
                  flush=True)


if __name__ == "__main__":
    main()
