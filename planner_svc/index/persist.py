"""On-disk layout of the vector index under ``<data_dir>/index/``.

::

    manifest.json             format, embedder name, dim, bucket_us, covered version id,
                              generation, and one entry per partition (bucket, rows, file stem)
    p<bucket>.g<gen>.faiss    the partition's IndexFlatIP (faiss.write_index)
    p<bucket>.g<gen>.npz      its row -> version_id / valid_from_us / node_id arrays
    .lock                     flock: shared while loading, exclusive while writing

Every file is written to a temporary name, fsynced and renamed; the manifest is renamed last, so a
reader sees either the old or the new index, never a mixture. A partition that did not change
keeps its files. Files no manifest names are removed after the manifest is replaced (readers
hold the shared lock while they open files; an already memory-mapped file stays readable after
removal). Index files are opened with ``IO_FLAG_MMAP_IFC`` (mapped without copying, so worker
processes share them through the page cache), falling back to a plain read where mapping fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from planner_svc.index.partition import Partition

FORMAT = 2
"""Version 2: rows normalised in a fixed order (bit-reproducible); older indexes are rebuilt."""
MANIFEST = "manifest.json"
LOCK = ".lock"


class ManifestError(ValueError):
    """The persisted index is missing, unreadable, or inconsistent (the caller rebuilds)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    """Contents of ``manifest.json``.

    Attributes:
        embedder_name: name of the embedder whose vectors the index holds.
        dim: vector dimension.
        bucket_us: partition width in microseconds.
        covered_version_id: every store version with an id <= this is in the index.
        generation: incremented on every write; part of the file names.
        partitions: ``(bucket, rows, stem)`` per partition, ascending bucket.
    """

    embedder_name: str
    dim: int
    bucket_us: int
    covered_version_id: int
    generation: int
    partitions: tuple[tuple[int, int, str], ...]

    def to_json(self) -> str:
        """Serialise (sorted keys, one line per partition is not needed: plain JSON)."""
        body = {
            "format": FORMAT,
            "embedder_name": self.embedder_name,
            "dim": self.dim,
            "bucket_us": self.bucket_us,
            "covered_version_id": self.covered_version_id,
            "generation": self.generation,
            "partitions": [
                {"bucket": bucket, "rows": rows, "stem": stem}
                for bucket, rows, stem in self.partitions
            ],
        }
        return json.dumps(body, sort_keys=True, indent=1) + "\n"

    @staticmethod
    def from_json(text: str) -> Manifest:
        """Parse; raises :class:`ManifestError` on any malformed or unknown-format content."""
        try:
            body = json.loads(text)
            if body["format"] != FORMAT:
                raise ManifestError(f"manifest format {body['format']!r}, expected {FORMAT}")
            parts = tuple(
                (int(p["bucket"]), int(p["rows"]), str(p["stem"])) for p in body["partitions"]
            )
            return Manifest(
                embedder_name=str(body["embedder_name"]),
                dim=int(body["dim"]),
                bucket_us=int(body["bucket_us"]),
                covered_version_id=int(body["covered_version_id"]),
                generation=int(body["generation"]),
                partitions=parts,
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, ManifestError):
                raise
            raise ManifestError(f"malformed manifest: {exc!r}") from exc


@contextlib.contextmanager
def file_lock(directory: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold ``directory/.lock`` (flock, shared or exclusive) for the duration of the block."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def read_manifest(directory: Path) -> Manifest | None:
    """The manifest in ``directory``, or None when there is none.

    Raises:
        ManifestError: the manifest exists but cannot be parsed.
    """
    try:
        text = (directory / MANIFEST).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ManifestError(f"cannot read manifest: {exc!r}") from exc
    return Manifest.from_json(text)


def _read_faiss(path: Path, *, mmap: bool) -> Any:
    if mmap:
        try:
            return faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)
        except RuntimeError:
            pass
    return faiss.read_index(str(path))


def load_partitions(directory: Path, manifest: Manifest, *, mmap: bool) -> list[Partition]:
    """Open every partition the manifest names and check it against the manifest.

    Raises:
        ManifestError: a file is missing or unreadable, or its row count or dimension disagrees.
    """
    partitions: list[Partition] = []
    for bucket, rows, stem in manifest.partitions:
        try:
            index = _read_faiss(directory / f"{stem}.faiss", mmap=mmap)
            with np.load(directory / f"{stem}.npz", allow_pickle=False) as meta:
                version_ids = np.ascontiguousarray(meta["version_ids"], dtype=np.int64)
                valid_from_us = np.ascontiguousarray(meta["valid_from_us"], dtype=np.int64)
                node_ids = np.ascontiguousarray(meta["node_ids"])
        except (OSError, RuntimeError, KeyError, ValueError) as exc:
            raise ManifestError(f"partition {stem}: {exc!r}") from exc
        sizes = {int(index.ntotal), version_ids.shape[0], valid_from_us.shape[0], node_ids.shape[0]}
        if sizes != {rows} or int(index.d) != manifest.dim or node_ids.dtype.kind != "S":
            raise ManifestError(f"partition {stem}: rows/dim disagree with the manifest")
        partitions.append(
            Partition(
                bucket=bucket,
                start_us=bucket * manifest.bucket_us,
                index=index,
                version_ids=version_ids,
                valid_from_us=valid_from_us,
                node_ids=node_ids,
                stem=stem,
            )
        )
    return partitions


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_atomically(directory: Path, final_name: str, write: Any) -> None:
    """Call ``write(tmp_path)``, fsync the file, rename it to ``final_name``."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-" + final_name)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        write(tmp_path)
        _fsync_file(tmp_path)
        os.replace(tmp_path, directory / final_name)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_partition(directory: Path, partition: Partition, stem: str) -> None:
    """Write a partition's ``<stem>.faiss`` and ``<stem>.npz`` atomically."""

    def write_index(path: Path) -> None:
        faiss.write_index(partition.index, str(path))

    def write_meta(path: Path) -> None:
        with path.open("wb") as handle:
            np.savez(
                handle,
                version_ids=partition.version_ids,
                valid_from_us=partition.valid_from_us,
                node_ids=partition.node_ids,
            )

    _replace_atomically(directory, f"{stem}.faiss", write_index)
    _replace_atomically(directory, f"{stem}.npz", write_meta)


def write_manifest(directory: Path, manifest: Manifest) -> None:
    """Replace ``manifest.json`` atomically, fsync the directory, remove unreferenced files."""

    def write(path: Path) -> None:
        path.write_text(manifest.to_json(), encoding="utf-8")

    _replace_atomically(directory, MANIFEST, write)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    keep = {f"{stem}{ext}" for _, _, stem in manifest.partitions for ext in (".faiss", ".npz")}
    for entry in directory.iterdir():
        is_data = entry.suffix in (".faiss", ".npz") or entry.name.startswith(".tmp-")
        if is_data and entry.name not in keep:
            entry.unlink(missing_ok=True)


def write_state(
    directory: Path,
    manifest: Manifest,
    partitions: Sequence[Partition],
    *,
    unchanged: Iterable[Partition],
) -> tuple[Partition, ...]:
    """Persist a new snapshot: write each partition not in ``unchanged`` under the stem
    ``p<bucket>.g<generation>``, then the manifest (its partition list filled in from them),
    renamed into place last so readers see either snapshot whole.

    Args:
        directory: the index directory.
        manifest: the snapshot's manifest; its ``partitions`` are replaced.
        partitions: the snapshot's partitions, ascending bucket.
        unchanged: partitions already on disk under their stem (the same objects).

    Returns:
        ``partitions`` with every stem set.
    """
    kept = {id(p) for p in unchanged}
    stamped: list[Partition] = []
    for part in partitions:
        if id(part) in kept:
            stamped.append(part)
            continue
        stem = f"p{part.bucket}.g{manifest.generation}"
        write_partition(directory, part, stem)
        stamped.append(dataclasses.replace(part, stem=stem))
    listed = tuple((p.bucket, p.size, p.stem) for p in stamped)
    write_manifest(directory, dataclasses.replace(manifest, partitions=listed))
    return tuple(stamped)
