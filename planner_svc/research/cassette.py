"""A provider that records planner calls to a JSON Lines file and replays them.

Each line is one call: ``{"key": <sha256 of the request>, "request": <key fields>, "answer":
<ProviderAnswer.to_json()>}``. Replaying looks the request's key up; a request never recorded is
a :class:`~planner_svc.research.provider.CassetteMiss` (never a silent fallback to a model).
Recording (an ``inner`` provider given) answers recorded keys from the file and calls ``inner``
for the rest, appending each new call. The first recording of a key wins.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from planner_svc.core.errors import clip, echo
from planner_svc.research.provider import (
    CassetteMiss,
    ProviderAnswer,
    ProviderError,
    ProviderRequest,
    ResearchProvider,
)


class CassetteProvider:
    """:class:`~planner_svc.research.provider.ResearchProvider` backed by a cassette file.

    Args:
        path: the JSON Lines file; may be missing when recording.
        inner: provider to call (and record) on a miss; None = replay only.
        label: the name reported as ``cassette:<label>`` (default: the file name).

    Raises:
        ProviderError: the file exists but a line is not a valid record (line number given).
        CassetteMiss: replay only, and the file does not exist.
    """

    def __init__(
        self, path: Path, *, inner: ResearchProvider | None = None, label: str | None = None
    ) -> None:
        self._path = path
        self._inner = inner
        self._label = label or path.name
        self._lock = threading.Lock()
        self._answers: dict[str, ProviderAnswer] = {}
        self.replayed = 0
        self.recorded = 0
        if path.exists():
            self._load()
        elif inner is None:
            raise CassetteMiss(
                f"cassette {echo(self._label)} does not exist in the server's cassette "
                "directory (nothing to replay)"
            )

    @property
    def name(self) -> str:
        """``cassette:<label>`` when replaying, ``record:<label>`` when recording."""
        return f"{'record' if self._inner is not None else 'cassette'}:{self._label}"

    def __len__(self) -> int:
        with self._lock:
            return len(self._answers)

    def propose(
        self, request: ProviderRequest, *, cancel: threading.Event | None = None
    ) -> ProviderAnswer:
        """The recorded answer for ``request``; on a miss, record ``inner``'s or raise.

        Raises:
            CassetteMiss: no recording and no inner provider.
            ProviderError, Cancelled: from the inner provider.
        """
        key = request.key()
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None:
                self.replayed += 1
                return answer
        if self._inner is None:
            raise CassetteMiss(
                f"cassette {echo(self._label)} has no recording for request {key[:16]} "
                f"({request.kind}, question {echo(request.question)})"
            )
        answer = self._inner.propose(request, cancel=cancel)
        record: dict[str, Any] = {
            "key": key,
            "request": request.key_fields(),
            "answer": answer.to_json(),
        }
        line = json.dumps(record, sort_keys=True, ensure_ascii=False)
        with self._lock:
            if key not in self._answers:
                self._answers[key] = answer
                self._path.parent.mkdir(parents=True, exist_ok=True)
                with self._path.open("a", encoding="utf-8") as fh:
                    fh.write(line + "\n")
                self.recorded += 1
            return self._answers[key]

    def _load(self) -> None:
        with self._path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    key = record["key"]
                    if not isinstance(key, str):
                        raise TypeError("key is not a string")
                    answer = ProviderAnswer.from_json(record["answer"])
                except (json.JSONDecodeError, KeyError, TypeError, ProviderError) as exc:
                    raise ProviderError(
                        f"cassette {echo(self._label)} line {lineno}: not a cassette record: "
                        f"{clip(str(exc), 200)}"
                    ) from exc
                self._answers.setdefault(key, answer)
