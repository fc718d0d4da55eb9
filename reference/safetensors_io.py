"""Minimal safetensors reader/writer (no `safetensors` package needed).

File layout: 8-byte little-endian header length N, N bytes of JSON header
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
then the raw little-endian tensor bytes (offsets are relative to the end of the header).
Values are returned as raw NumPy arrays of the *storage* type (bf16 -> uint16,
F8_* -> uint8); reference/formats.py decodes them.
"""
import json
import os
import struct

import numpy as np

# storage dtype of each safetensors dtype tag
_NP = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
    "BOOL": np.bool_, "F8_E4M3": np.uint8, "F8_E5M2": np.uint8, "F8_E8M0": np.uint8,
}


class SafetensorsFile:
    """One .safetensors file, memory-mapped; get(name) -> (dtype_tag, np.ndarray)."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            self.header = json.loads(f.read(n))
        self.metadata = self.header.pop("__metadata__", None)
        self.base = 8 + n
        self.mm = np.memmap(path, dtype=np.uint8, mode="r")

    def names(self):
        return list(self.header)

    def get(self, name):
        h = self.header[name]
        b, e = h["data_offsets"]
        raw = self.mm[self.base + b:self.base + e]
        arr = raw.view(_NP[h["dtype"]]).reshape(h["shape"])
        return h["dtype"], arr


class Checkpoint:
    """A checkpoint directory: model.safetensors.index.json + shards, or any *.safetensors files."""

    def __init__(self, directory):
        self.dir = directory
        self.files = {}
        self.where = {}
        index = os.path.join(directory, "model.safetensors.index.json")
        if os.path.exists(index):
            with open(index) as f:
                wm = json.load(f)["weight_map"]
            for name, fname in wm.items():
                self.where[name] = fname
        else:
            for fname in sorted(os.listdir(directory)):
                if fname.endswith(".safetensors"):
                    for name in SafetensorsFile(os.path.join(directory, fname)).names():
                        self.where[name] = fname

    def __contains__(self, name):
        return name in self.where

    def names(self):
        return list(self.where)

    def get(self, name):
        fname = self.where[name]
        if fname not in self.files:
            self.files[fname] = SafetensorsFile(os.path.join(self.dir, fname))
        return self.files[fname].get(name)


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: (dtype_tag, np.ndarray of the storage type)}; written in sorted name order."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        tag, arr = tensors[name]
        arr = np.ascontiguousarray(arr, dtype=_NP[tag])
        data = arr.tobytes()
        header[name] = {"dtype": tag, "shape": list(arr.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    if metadata:
        header["__metadata__"] = metadata
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)  # pad header to 8 bytes (spec allows trailing spaces)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for data in blobs:
            f.write(data)
