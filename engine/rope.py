"""Rotary position embeddings (RoPE) for packed rows, in the Hugging Face "rotate half" layout.

``inverse_frequencies(spec.rope, head_dim)`` gives the per-pair frequencies (default, or Llama 3.x
frequency-band scaling); ``rotary_tables(inv_freq, positions)`` turns explicit positions into the
cos/sin tables once per forward, shared by all layers (the rotation itself is
``kernels.qk_norm_rope``, fused with the per-head norm). Positions
are explicit per token, so a suffix row simply continues after its prefix's length.
"""

from __future__ import annotations

import math

import torch

from heron.engine.spec import RopeSpec


def inverse_frequencies(rope: RopeSpec, head_dim: int) -> torch.Tensor:
    """float32 [head_dim // 2] rotation frequencies."""
    exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
    inv_freq = 1.0 / (rope.theta**exponents)
    if rope.kind == "llama3":
        inv_freq = _llama3_scaled(inv_freq, rope)
    return inv_freq


def _llama3_scaled(inv_freq: torch.Tensor, rope: RopeSpec) -> torch.Tensor:
    # Llama 3.1 context extension: wavelengths longer than the original context / low_freq_factor
    # are slowed down by `factor`; shorter than context / high_freq_factor are kept; the band in
    # between interpolates linearly in (context / wavelength).
    context = rope.original_max_position
    long_wavelength = context / rope.low_freq_factor
    short_wavelength = context / rope.high_freq_factor
    wavelength = 2 * math.pi / inv_freq
    slowed = torch.where(wavelength > long_wavelength, inv_freq / rope.factor, inv_freq)
    blend = (context / wavelength - rope.low_freq_factor) / (
        rope.high_freq_factor - rope.low_freq_factor
    )
    blended = (1 - blend) * slowed / rope.factor + blend * slowed
    in_band = (wavelength >= short_wavelength) & (wavelength <= long_wavelength)
    return torch.where(in_band, blended, slowed)


def rotary_tables(
    inv_freq: torch.Tensor, positions: torch.Tensor, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of shape [T, head_dim] for int64 ``positions`` [T] (computed in float32)."""
    angles = positions.float()[:, None] * inv_freq[None, :]
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)
