"""armature's entries inside ``torch.compiler.save_cache_artifacts()``'s
bytes, so that ``load_cache_artifacts(bytes)`` in another process (another
machine, an empty cache directory) installs them with inductor's own
artifacts and that process starts warm: the runner's patch
(armature_runner/patch.py) wraps torch's two functions with these.

The container: torch's bytes are kept whole, after a header of armature's
own, so torch's loader gets exactly its bytes::

    b"ARMCART1" | len(torch's bytes): 8 | len(armature's part): 8 | sha256(armature's part) | armature's part | torch's bytes

armature's part is a ``marshal``led dict: the entry files this process
stored or loaded (driver/cache_events.files_of_process), each as its file's
bytes (which carry their own checksum; an inductor entry carries its
kernels' libraries), read back when saving.  Installing one writes it where
a store would have (``<cache_dir>/v1/<key>/<hash>.entry``, the key
recomputed from the entry's own key parts, the name from its content), so a
later call finds and checks it like any entry: key, source files, names,
guards (persistent_cache.load).  Bytes that do not begin with the header
are torch's alone.  A damaged container or entry is one warning and is
skipped, never an error; so are entries made by another armature, torch or
Python (they could never match) and a process whose cache is off (its
entries would not be read: ``ARMATURE_CACHE=1``).
"""
from __future__ import annotations

import hashlib
import marshal
import os
import warnings

from . import cache_events
from . import persistent_cache as pc

MAGIC = b"ARMCART1"
_FORMAT = 1
_HEAD = len(MAGIC) + 8 + 8 + 32


def pack() -> bytes | None:
    """armature's part: this process's stored or loaded entry files (None
    when there are none)."""
    entries = []
    for path in cache_events.files_of_process():
        try:
            with open(path, "rb") as f:
                entries.append(f.read())
        except OSError as e:   # evicted or removed since: the others are saved
            pc.log.info("cache artifacts: entry %s left out (%s)", path, e)
    if not entries:
        return None
    return marshal.dumps({"format": _FORMAT, "entries": tuple(entries)})


def combine(torch_bytes: bytes | None, part: bytes | None) -> bytes | None:
    """The bytes save_cache_artifacts returns: torch's, after armature's
    part (torch's unchanged when armature has nothing)."""
    if part is None:
        return torch_bytes
    torch_bytes = torch_bytes or b""
    return (MAGIC + len(torch_bytes).to_bytes(8, "little") + len(part).to_bytes(8, "little")
            + hashlib.sha256(part).digest() + part + torch_bytes)


def split(data) -> tuple[bytes | None, bytes | None]:
    """(torch's bytes, armature's part) of what save_cache_artifacts
    returned; (data, None) when it is torch's alone.  A damaged container:
    one warning, and armature's part is None."""
    if not isinstance(data, (bytes, bytearray, memoryview)) or not bytes(data[:len(MAGIC)]) == MAGIC:
        return data, None
    data = bytes(data)
    if len(data) < _HEAD:
        _warn("the bytes are truncated")
        return None, None
    n_torch = int.from_bytes(data[8:16], "little")
    n_part = int.from_bytes(data[16:24], "little")
    digest = data[24:_HEAD]
    if len(data) != _HEAD + n_part + n_torch:
        _warn(f"the bytes are {len(data)} long, not the {_HEAD + n_part + n_torch} their header says")
        rest = data[_HEAD + n_part:] if _HEAD + n_part <= len(data) else b""
        return rest or None, None
    part, torch_bytes = data[_HEAD:_HEAD + n_part], data[_HEAD + n_part:]
    if hashlib.sha256(part).digest() != digest:
        _warn("armature's part does not match its checksum")
        return torch_bytes or None, None
    return torch_bytes or None, part


def install(part: bytes) -> list[str]:
    """Write armature's entries of ``part`` into this process's cache
    directory; the files written (each checked as a cache file, its key
    recomputed from its own key parts)."""
    try:
        content = marshal.loads(part)
        entries = content["entries"] if isinstance(content, dict) and content.get("format") == _FORMAT else None
    except (ValueError, EOFError, TypeError, KeyError) as e:
        _warn(f"armature's part is unreadable ({e})")
        return []
    if not isinstance(entries, tuple):
        _warn("armature's part is of another format")
        return []
    if not pc.enabled():
        why = pc._disabled_reason or "the compile cache is off (set ARMATURE_CACHE=1)"
        warnings.warn(f"armature: the {len(entries)} compiled entries in these cache artifacts are not installed: "
                      f"{why}", RuntimeWarning, stacklevel=3)
        return []
    here = _process_parts()
    root = pc.cache_root()
    written, damaged, foreign = [], 0, 0
    for raw in entries:
        payload = pc.parse(raw) if isinstance(raw, bytes) else "not bytes"
        if isinstance(payload, str) or not isinstance(payload.get("parts"), dict):
            damaged += 1
            pc.log.info("cache artifacts: an entry skipped: %s", payload if isinstance(payload, str) else "no key")
            continue
        parts = payload["parts"]
        other = [k for k, v in here.items() if parts.get(k) != v]
        if other:
            foreign += 1
            pc.log.info("cache artifacts: an entry of %s skipped: made by another %s", payload.get("qualname"),
                        ", ".join(other))
            continue
        folder = os.path.join(root, pc._key_of(parts))
        path = os.path.join(folder, hashlib.sha256(raw[len(pc._MAGIC) + 32:]).hexdigest()[:32] + ".entry")
        try:
            os.makedirs(folder, exist_ok=True)
            if not os.path.exists(path):
                pc._atomic_write(path, raw)
            code_part = str(parts.get("code", ""))
            index = hashlib.sha256(code_part.rsplit(":", 1)[0].encode()).hexdigest()[:32]   # (pc._code_index)
            os.makedirs(os.path.join(root, "index"), exist_ok=True)
            pc._atomic_write(os.path.join(root, "index", index), marshal.dumps(parts))
        except OSError as e:
            pc._turn_off(f"cannot write to the cache directory {root}: {e}")
            return written
        written.append(path)
        pc.log.info("cache artifacts: installed an entry of %s: %s", payload.get("qualname"), path)
    if damaged:
        _warn(f"{damaged} of its {len(entries)} entries are damaged and were skipped")
    if foreign:
        warnings.warn(f"armature: {foreign} of the {len(entries)} compiled entries in these cache artifacts were "
                      f"made by another armature, torch or Python version and are not installed",
                      RuntimeWarning, stacklevel=3)
    return written


def _process_parts() -> dict:
    """The key parts every entry of this process has (persistent_cache.key_parts)."""
    import sys

    import torch
    return {"armature": pc._armature_hash(), "torch": str(torch.__version__), "python": sys.version}


def _warn(why: str) -> None:
    warnings.warn(f"armature: ignoring armature's compiled entries in these cache artifacts: {why}; the "
                  f"functions are compiled as usual", RuntimeWarning, stacklevel=4)
