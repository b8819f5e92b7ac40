"""The codec of values that cross the boundary: ``pack_tree`` / ``unpack_tree``.

A JSON description of a tree (tuples, lists, dicts, numbers, strings, dtypes, devices) and the raw
bytes of each tensor storage once, so that views keep their storage sharing. Only the trusted side
may send pickles (its arguments may hold other objects, e.g. a ``torch.Generator``); what a student
process sends back is never unpickled, and every tensor is checked against the bytes it came with.

A request's storages may live in memory both sides map (`unpack_tree(..., shared=True)`): the
student process's tensors are then views of that memory, and what the student's code writes into
them is seen by the trusted side itself (:mod:`mlmcourse.grader.wire.shared_inputs`), not reported.
"""

from __future__ import annotations

import json
import struct
from typing import Any

MAX_DEPTH = 64

def flatten(obj: Any, leaves: list, depth: int = 0) -> Any:
    """A JSON-able spec of `obj` with its leaves appended to `leaves`."""
    import torch

    if depth > MAX_DEPTH:
        raise ValueError("the value is nested too deeply")
    if isinstance(obj, torch.Size):
        return ["S", [int(x) for x in obj]]
    if isinstance(obj, tuple):
        return ["T", [flatten(x, leaves, depth + 1) for x in obj]]
    if isinstance(obj, list):
        return ["L", [flatten(x, leaves, depth + 1) for x in obj]]
    if isinstance(obj, dict) and all(isinstance(k, str | int) for k in obj):
        return ["D", list(obj), [flatten(v, leaves, depth + 1) for v in obj.values()]]
    leaves.append(obj)
    return ["X", len(leaves) - 1]


def unflatten(spec: Any, leaves: list, depth: int = 0) -> Any:
    """Rebuild a tree; `spec` may come from the untrusted side, so it is checked as it is read."""
    import torch

    if depth > MAX_DEPTH or not isinstance(spec, list) or not spec:
        raise ValueError("malformed reply")
    kind = spec[0]
    if kind == "X" and len(spec) == 2 and type(spec[1]) is int and 0 <= spec[1] < len(leaves):
        return leaves[spec[1]]
    if kind == "S" and len(spec) == 2 and all(type(x) is int for x in spec[1]):
        return torch.Size(spec[1])
    if kind in ("T", "L") and len(spec) == 2 and isinstance(spec[1], list):
        items = [unflatten(x, leaves, depth + 1) for x in spec[1]]
        return tuple(items) if kind == "T" else items
    if kind == "D" and len(spec) == 3 and isinstance(spec[1], list) and isinstance(spec[2], list):
        if len(spec[1]) != len(spec[2]) or not all(type(k) in (str, int) for k in spec[1]):
            raise ValueError("malformed reply")
        pairs = zip(spec[1], spec[2], strict=True)
        return {k: unflatten(v, leaves, depth + 1) for k, v in pairs}
    raise ValueError("malformed reply")


_HEAD = struct.Struct("!I")
DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8",
           "int8", "int16", "int32", "int64", "bool", "uint16", "uint32", "uint64")
MAX_DIMS = 64


def pack_tree(obj: Any, allow_pickle: bool = False) -> bytes:
    """Encode a tree of tensors and plain values: JSON for the structure, raw bytes for storages.

    Tensors keep their storage sharing (one copy of each storage; views keep offset and strides).
    Only the trusted side may set `allow_pickle` (its arguments may hold other objects: the
    student process unpickles them); the student process's replies are never unpickled.
    """
    import pickle

    import torch

    leaves: list = []
    spec = flatten(obj, leaves)
    chunks: list[bytes] = []
    storages: list[list[int]] = []
    seen: dict[tuple, int] = {}
    size = 0

    def add_bytes(data: bytes) -> list[int]:
        nonlocal size
        chunks.append(data)
        size += len(data)
        return [size - len(data), len(data)]

    def tensor_meta(t) -> list:
        t = t.detach()
        if type(t) is not torch.Tensor:
            t = t.as_subclass(torch.Tensor)
        if t.layout != torch.strided or t.is_quantized:
            t = t.to_dense() if t.layout != torch.strided else t.dequantize()
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        dtype = str(t.dtype).replace("torch.", "")
        if dtype not in DTYPES:
            raise TypeError(f"tensors of dtype {t.dtype} cannot be passed")
        shape, stride = list(t.shape), list(t.stride())
        if t.device.type == "meta":
            return ["meta", dtype, shape, stride]
        key = (str(t.device), t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        if key not in seen or key[1] == 0:
            data = byte_view(t).cpu().numpy().tobytes() if key[2] else b""
            seen[key] = len(storages)
            storages.append(add_bytes(data))
        return ["t", seen[key], dtype, t.storage_offset(), shape, stride]

    metas = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            metas.append(tensor_meta(leaf))
        elif leaf is None or isinstance(leaf, bool | str) or type(leaf) in (int, float):
            metas.append(["n", leaf])
        elif isinstance(leaf, int | float):  # int / float subclasses (numpy scalars are not)
            metas.append(["n", int(leaf) if isinstance(leaf, int) else float(leaf)])
        elif isinstance(leaf, complex):
            metas.append(["c", leaf.real, leaf.imag])
        elif isinstance(leaf, torch.dtype):
            metas.append(["dt", str(leaf).replace("torch.", "")])
        elif isinstance(leaf, torch.device):
            metas.append(["dv", str(leaf)])
        elif allow_pickle:
            metas.append(["p", *add_bytes(pickle.dumps(leaf, protocol=pickle.HIGHEST_PROTOCOL))])
        else:
            raise TypeError(f"a {type(leaf).__name__} cannot be sent back")
    head = json.dumps({"spec": spec, "leaves": metas, "storages": storages}).encode()
    return _HEAD.pack(len(head)) + head + b"".join(chunks)


def unpack_tree(blob, allow_pickle: bool = False, shared: bool = False) -> Any:
    """Decode `pack_tree`. Without `allow_pickle` (the trusted side) nothing but tensors and plain
    values can come out, and every tensor is checked against the bytes it was given. `shared`
    (the student process, on a request in shared memory): tensors are views of `blob`'s memory (a
    writable buffer), not copies."""
    import pickle

    import torch

    view = memoryview(blob)
    if len(view) < _HEAD.size:
        raise ValueError("malformed data")
    (head_len,) = _HEAD.unpack(view[:_HEAD.size])
    body = _HEAD.size + head_len
    if body > len(view):
        raise ValueError("malformed data")
    head = json.loads(bytes(view[_HEAD.size:body]))
    data = view[body:]
    if not isinstance(head, dict):
        raise ValueError("malformed data")
    storages = head.get("storages")
    if not isinstance(storages, list):
        raise ValueError("malformed data")
    made: dict[int, Any] = {}

    def storage(index) -> Any:
        if type(index) is not int or not 0 <= index < len(storages):
            raise ValueError("malformed data")
        if index not in made:
            entry = storages[index]
            if not (isinstance(entry, list) and len(entry) == 2
                    and all(type(x) is int and x >= 0 for x in entry)
                    and entry[0] + entry[1] <= len(data)):
                raise ValueError("malformed data")
            start, length = entry
            if shared and length:
                owned = torch.frombuffer(data[start:start + length], dtype=torch.uint8)
            else:
                owned = torch.empty(length, dtype=torch.uint8)
                if length:
                    owned.copy_(torch.frombuffer(bytearray(data[start:start + length]),
                                                 dtype=torch.uint8))
            made[index] = owned.untyped_storage()
        return made[index]

    def ints(values) -> tuple[int, ...]:
        if not (isinstance(values, list) and len(values) <= MAX_DIMS
                and all(type(x) is int and x >= 0 for x in values)):
            raise ValueError("malformed data")
        return tuple(values)

    def dtype(name) -> Any:
        if name not in DTYPES:
            raise ValueError("malformed data")
        return getattr(torch, name)

    leaves = []
    for meta in head.get("leaves", []):
        if not (isinstance(meta, list) and meta and isinstance(meta[0], str)):
            raise ValueError("malformed data")
        kind = meta[0]
        if kind == "t" and len(meta) == 6:
            dt, offset = dtype(meta[2]), meta[3]
            if type(offset) is not int or offset < 0:
                raise ValueError("malformed data")
            shape, stride = ints(meta[4]), ints(meta[5])
            if len(shape) != len(stride):
                raise ValueError("malformed data")
            store = storage(meta[1])
            item = torch.empty(0, dtype=dt).element_size()
            last = offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) \
                if all(shape) else -1
            if (last + 1) * item > store.nbytes():
                raise ValueError("malformed data")
            leaves.append(torch.empty(0, dtype=dt).set_(store, offset, shape, stride))
        elif kind == "meta" and len(meta) == 4:
            leaves.append(torch.empty_strided(ints(meta[2]), ints(meta[3]), dtype=dtype(meta[1]),
                                              device="meta"))
        elif kind == "n" and len(meta) == 2 and (meta[1] is None or type(meta[1]) in (
                int, float, str, bool)):
            leaves.append(meta[1])
        elif kind == "c" and len(meta) == 3 and all(type(x) in (int, float) for x in meta[1:]):
            leaves.append(complex(meta[1], meta[2]))
        elif kind == "dt" and len(meta) == 2:
            leaves.append(dtype(meta[1]))
        elif kind == "dv" and len(meta) == 2 and isinstance(meta[1], str):
            leaves.append(torch.device(meta[1]))
        elif kind == "p" and allow_pickle and len(meta) == 3:
            start, length = meta[1], meta[2]
            leaves.append(pickle.loads(bytes(data[start:start + length])))  # noqa: S301
        else:
            raise ValueError("malformed data")
    return unflatten(head.get("spec"), leaves)


def unpack_reply(blob: bytes) -> Any:
    """Load what the student process sent: tensors and plain data only, never code."""
    return unpack_tree(blob, allow_pickle=False)


def unpack_request(blob, shared: bool = False) -> Any:
    """Load what the trusted kernel sent (student process side); `shared`: see `unpack_tree`."""
    return unpack_tree(blob, allow_pickle=True, shared=shared)


def has_data(tensor) -> bool:
    """A tensor with real bytes behind it (not meta, not empty)."""
    try:
        storage = tensor.untyped_storage()
        return tensor.device.type != "meta" and storage.nbytes() > 0 and storage.data_ptr() != 0
    except (RuntimeError, NotImplementedError):
        return False


def valid_indices(values, size: int) -> list[int]:
    """The valid, distinct indices in an untrusted list."""
    if not isinstance(values, list):
        return []
    return list(dict.fromkeys(k for k in values if type(k) is int and 0 <= k < size))


def byte_view(tensor):
    """A uint8 tensor over the whole storage of `tensor`."""
    import torch

    storage = tensor.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(
        storage, 0, (storage.nbytes(),), (1,))
