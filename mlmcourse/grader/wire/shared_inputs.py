"""A call's arguments in memory that the trusted side and the student process both map.

The trusted side writes the encoded arguments (:func:`mlmcourse.grader.wire.codec.pack_tree`) into
an anonymous memory file and passes its descriptor with the ``call`` request; the student process
maps
it and builds the student's tensors as views of it (``unpack_tree(..., shared=True)``), so the bytes
the student's code receives are the bytes the trusted side keeps a view of. After the reply, the
trusted side compares each tensor storage in that memory with its own private copy of what it sent:
what the student's code wrote into its inputs is seen here, by the trusted side, not reported by the
student process (whose process the student's code owns). The changed bytes are written into the
caller's tensors, as a call in the student's own kernel would have changed them.
"""

from __future__ import annotations

import fcntl
import json
import mmap
import os
import struct

_HEAD = struct.Struct("!I")  # as codec.pack_tree starts its data


class SharedArguments:
    """The arguments of one call, shared with the student process (`fd` travels with the
    request)."""

    def __init__(self, blob: bytes):
        self.sent = bytes(blob)  # the trusted side's private copy
        self.size = max(1, len(self.sent))
        self.fd = os.memfd_create("mlm-call-arguments", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, self.size)
            # The student process may write into the memory but never change its size: a file cut
            # short under the trusted side's mapping would kill the trusted kernel when it reads it.
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS,
                        fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            self.map = mmap.mmap(self.fd, self.size)
        except BaseException:
            os.close(self.fd)
            raise
        self.map[:len(self.sent)] = self.sent
        (head_len,) = _HEAD.unpack_from(self.sent)
        self.body = _HEAD.size + head_len
        head = json.loads(self.sent[_HEAD.size:self.body])
        self.storages = head["storages"]  # [start, length] of each storage, after the body
        # leaf index -> storage index, for the tensors among the leaves
        self.leaf_storage = {i: meta[1] for i, meta in enumerate(head["leaves"])
                             if meta[0] == "t"}

    def changed(self) -> dict[int, bytes]:
        """{storage index: the bytes there now} for every storage the student's code wrote to."""
        found = {}
        for index, (start, length) in enumerate(self.storages):
            first = self.body + start
            now = self.map[first:first + length]
            if now != self.sent[first:first + length]:
                found[index] = now
        return found

    def write_back(self, leaves: list) -> None:
        """Copy what changed into the caller's tensors among `leaves` (the ones that were sent)."""
        import torch

        from mlmcourse.grader.wire.codec import byte_view, has_data

        changed = self.changed()
        done = set()
        for leaf, storage in self.leaf_storage.items():
            if storage not in changed or storage in done or leaf >= len(leaves):
                continue  # (the leaves after the arguments' are the trusted side's own)
            target = leaves[leaf]
            if not isinstance(target, torch.Tensor) or not has_data(target):
                continue
            view = byte_view(target)
            data = torch.frombuffer(bytearray(changed[storage]), dtype=torch.uint8)
            if data.numel() == view.numel():
                with torch.no_grad():
                    view.copy_(data.to(view.device))
                done.add(storage)

    def close(self) -> None:
        try:
            self.map.close()
        finally:
            os.close(self.fd)
