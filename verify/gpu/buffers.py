"""numpy arrays <-> GPU buffer bytes, with poison for everything a kernel should not read.

Outputs and scratch start as NaN (floats) or a sentinel pattern (integers), and every
writable buffer carries a guard region (a canary pattern) past its end: a missing write shows
up as NaN, an out-of-bounds write as a changed guard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

#: Bytes of canary appended to every writable buffer to catch writes past the end.
GUARD_BYTES = 256
#: The canary is a finite pattern, not NaN: a write past the end computed from the canary's
#: own value (x*0.5 - 0.25*x of NaN is NaN again, bit for bit) must still change it.
GUARD_WORD = 0x7B5A7B5A
#: Poison pattern for integer buffers (as a little-endian u32).
INT_SENTINEL = 0xDEADBEEF
_NAN_BITS = {np.dtype(np.float16): 0x7E00, np.dtype(np.float32): 0x7FC00000}


@dataclass(frozen=True)
class Output:
    """A buffer the kernel writes: read back as `dtype` with `shape`, pre-filled with poison."""

    dtype: DTypeLike
    shape: tuple

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class InOut:
    """A buffer the kernel reads and updates in place (e.g. merge_state's v and s)."""

    array: np.ndarray


def _aligned(nbytes: int) -> int:
    return max(4, (nbytes + 3) // 4 * 4)


def poison_bytes(dtype, nbytes: int) -> bytes:
    """`nbytes` of NaN (for float dtypes) or INT_SENTINEL (anything else)."""
    dtype = np.dtype(dtype)
    if dtype in _NAN_BITS and dtype.itemsize == 2:
        word = np.uint32(_NAN_BITS[dtype] | (_NAN_BITS[dtype] << 16))
    elif dtype in _NAN_BITS:
        word = np.uint32(_NAN_BITS[dtype])
    else:
        word = np.uint32(INT_SENTINEL)
    return np.full(_aligned(nbytes) // 4, word, dtype="<u4").tobytes()[:nbytes]


def array_bytes(array: np.ndarray, min_bytes: int = 4) -> bytes | memoryview:
    """Little-endian C-order bytes, poison-padded to a multiple of 4 as WebGPU requires, and to
    at least `min_bytes`: a view of the array's own memory where it needs no padding (a nightly
    case uploads tens of megabytes, and a copy here would only be copied again into the
    buffer), else one copy."""
    data = np.ascontiguousarray(array)
    if data.dtype.byteorder == ">":
        data = data.byteswap().view(data.dtype.newbyteorder("<"))
    raw = data.reshape(-1).view(np.uint8).data
    size = max(min_bytes, _aligned(raw.nbytes))
    if size == raw.nbytes:
        return raw
    return b"".join((raw, poison_bytes(data.dtype, size - raw.nbytes)))


def output_bytes(dtype, nbytes: int) -> bytes | memoryview:
    """A writable buffer's initial bytes: `nbytes` of poison, poison up to the next multiple of 4,
    the guard; with_guard(poison_bytes(dtype, nbytes), dtype), byte for byte, built in one array
    where nbytes is a multiple of 4 (an output of a long prefill is tens of megabytes)."""
    if nbytes % 4:
        return with_guard(poison_bytes(dtype, nbytes), dtype)
    aligned = _aligned(nbytes)  # at least one word, as with_guard pads
    words = np.full((aligned + GUARD_BYTES) // 4, np.frombuffer(poison_bytes(dtype, 4), "<u4")[0], dtype="<u4")
    words[aligned // 4:] = GUARD_WORD
    return words.view(np.uint8).data


def guard_bytes() -> bytes:
    return np.full(GUARD_BYTES // 4, GUARD_WORD, dtype="<u4").tobytes()


def with_guard(payload: bytes | memoryview, dtype) -> bytes:
    """payload, poison up to the next multiple of 4 bytes (where split_guard expects the guard), the guard."""
    padding = poison_bytes(dtype, _aligned(len(payload)) - len(payload))
    return b"".join((payload, padding, guard_bytes()))


def split_guard(raw: bytes | memoryview, nbytes: int, dtype) -> tuple[bytes | memoryview, bool]:
    """(payload, guard_intact) of a writable buffer read back from the GPU (a view of `raw` where
    it is a memoryview)."""
    guard_start = _aligned(nbytes)
    intact = raw[guard_start : guard_start + GUARD_BYTES] == guard_bytes()
    return raw[:nbytes], intact


def to_array(payload: bytes | memoryview, dtype, shape) -> np.ndarray:
    """The payload as a writable array: a view of it where it is writable memory (a readback's
    own copy), else a copy."""
    array = np.frombuffer(payload, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)
    return array if array.flags.writeable else array.copy()
