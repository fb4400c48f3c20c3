"""Host arrays onto the device without holding up the host.

Contract: ``to_device(array, device)`` returns ``array`` (numpy) as a tensor on ``device``. On a
CUDA device the copy is staged through pinned memory and queued on the current stream: it
returns at once, and kernels queued after it see the data. A copy from pageable memory would
instead wait for the work already queued on the device — the step loop builds the next chunk's
inputs while the device runs the current one, so such a wait leaves the device idle afterwards.

``has_tma(device)``: whether the device has the tensor-memory accelerator (Hopper or newer);
``tma_allocator()`` gives Triton the scratch memory that tensor descriptors made inside kernels
need, once per launching thread.
"""

from __future__ import annotations

import functools
import threading

import numpy as np
import torch


def to_device(array: np.ndarray, device: torch.device | str) -> torch.Tensor:
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if torch.device(device).type == "cuda":
        tensor = tensor.pin_memory()  # kept alive by torch's host allocator until copied
    return tensor.to(device, non_blocking=True)


@functools.cache
def has_tma(device: torch.device) -> bool:
    """A CUDA device with the tensor-memory accelerator (Hopper or newer)."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9


_allocator_set = threading.local()


def tma_allocator() -> None:
    """Device tensor descriptors need scratch memory from torch's allocator. Triton keeps the
    allocator in a context variable, which every thread has its own of: set in each thread
    that launches (the engine warms up in one thread, then steps in another)."""
    if getattr(_allocator_set, "done", False):
        return
    import triton  # noqa: PLC0415

    def alloc(size: int, alignment: int, stream: int | None) -> torch.Tensor:
        return torch.empty(size, device="cuda", dtype=torch.int8)

    triton.set_allocator(alloc)
    _allocator_set.done = True
