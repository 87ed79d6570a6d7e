"""A planning provider over any OpenAI-compatible chat-completions endpoint (stdlib HTTP).

``POST {base_url}/chat/completions`` with the messages of
:func:`~planner_svc.research.provider.build_messages`, temperature 0 and (by default)
``response_format: {"type": "json_object"}``. The answer's ``choices[0].message.content`` must
be a JSON object matching :data:`~planner_svc.research.provider.ANSWER_SCHEMA` (a single
Markdown code fence around it is tolerated). HTTP 429 and 5xx, timeouts and connection errors
are retried with exponential back-off (``Retry-After`` seconds honoured, capped); other HTTP
errors, a malformed body or an answer outside the schema fail at once with ProviderError.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from planner_svc.core.errors import ConfigError
from planner_svc.research.provider import (
    Cancelled,
    ProviderAnswer,
    ProviderError,
    ProviderRequest,
    Usage,
    build_messages,
    parse_answer,
)

_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAISettings:
    """Endpoint settings (the server reads them from the ``PLANNER_LLM_*`` variables, see
    :func:`planner_svc.settings.read_environment`).

    Attributes:
        base_url: API root including the version path (``http://127.0.0.1:8000/v1``).
        model: model name sent in each request.
        api_key: bearer token; None sends no Authorization header (local servers).
        timeout_s: per-attempt timeout in seconds, > 0.
        max_retries: retries after the first attempt, 0..10.
        backoff_s: delay before the first retry in seconds (doubles per retry), >= 0.
        max_backoff_s: cap of any delay, including ``Retry-After``, >= 0.
        max_tokens: completion token limit per call, >= 16.
        json_mode: send ``response_format: {"type": "json_object"}``.
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    max_tokens: int = 800
    json_mode: bool = True

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError("base_url", f"{self.base_url!r}; must start with http(s)://")
        if not self.model:
            raise ConfigError("model", "must not be empty")
        if not self.timeout_s > 0:
            raise ConfigError("timeout_s", f"{self.timeout_s}; must be > 0")
        if not 0 <= self.max_retries <= 10:
            raise ConfigError("max_retries", f"{self.max_retries}; allowed range 0..10")
        if self.backoff_s < 0 or self.max_backoff_s < 0:
            raise ConfigError("backoff_s", "back-off delays must be >= 0")
        if self.max_tokens < 16:
            raise ConfigError("max_tokens", f"{self.max_tokens}; must be >= 16")


class OpenAIProvider:
    """:class:`~planner_svc.research.provider.ResearchProvider` over a chat-completions
    endpoint. Thread-safe; counts calls, HTTP attempts and tokens.

    Args:
        settings: endpoint settings.
        sleep: how to wait between retries when no cancel event is given (tests pass a fake).
    """

    def __init__(
        self, settings: OpenAISettings, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._settings = settings
        self._sleep = sleep
        self._lock = threading.Lock()
        self.calls = 0
        self.attempts = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    @property
    def name(self) -> str:
        """``openai``."""
        return "openai"

    def propose(
        self, request: ProviderRequest, *, cancel: threading.Event | None = None
    ) -> ProviderAnswer:
        """One chat-completion call; see the module docstring for retries and validation.

        Raises:
            ProviderError: HTTP failure after retries, malformed body or answer.
            Cancelled: ``cancel`` was set before or between attempts.
        """
        body: dict[str, Any] = {
            "model": self._settings.model,
            "messages": build_messages(request),
            "temperature": 0,
            "max_tokens": self._settings.max_tokens,
        }
        if self._settings.json_mode:
            body["response_format"] = {"type": "json_object"}
        reply = self._post(body, cancel)
        content, usage = _read_completion(reply, self._settings.model)
        with self._lock:
            self.calls += 1
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
        try:
            decoded = json.loads(_strip_fence(content))
        except json.JSONDecodeError as exc:
            raise ProviderError(f"answer: model content is not JSON ({exc.msg})") from exc
        return parse_answer(decoded, usage=usage)

    def _post(self, body: dict[str, Any], cancel: threading.Event | None) -> Any:
        s = self._settings
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if s.api_key:
            headers["Authorization"] = f"Bearer {s.api_key}"
        url = f"{s.base_url}/chat/completions"
        last = ""
        for attempt in range(s.max_retries + 1):
            if cancel is not None and cancel.is_set():
                raise Cancelled("cancelled before the model call")
            with self._lock:
                self.attempts += 1
            retry_after: float | None = None
            req = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=s.timeout_s) as resp:
                    raw = resp.read()
            except urllib.error.HTTPError as exc:
                detail = exc.read(300).decode("utf-8", "replace")
                exc.close()
                if exc.code not in _RETRY_STATUS:
                    raise ProviderError(
                        f"HTTP {exc.code} from the model endpoint: {detail}"
                    ) from exc
                last = f"HTTP {exc.code}"
                retry_after = _retry_after(exc.headers.get("Retry-After"))
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                try:
                    return json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    raise ProviderError(
                        "response body from the model endpoint is not JSON"
                    ) from exc
            if attempt == s.max_retries:
                break
            delay = retry_after if retry_after is not None else s.backoff_s * 2**attempt
            delay = min(delay, s.max_backoff_s)
            if cancel is not None:
                if cancel.wait(delay):
                    raise Cancelled("cancelled while waiting to retry the model call")
            else:
                self._sleep(delay)
        raise ProviderError(
            f"the model endpoint failed after {s.max_retries + 1} attempt(s): {last}"
        )


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: fall back to the back-off schedule
    return max(0.0, seconds)


def _read_completion(reply: Any, requested_model: str) -> tuple[str, Usage]:
    if not isinstance(reply, Mapping):
        raise ProviderError("completion: expected a JSON object")
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ProviderError("completion.choices: expected a non-empty array of objects")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, str):
        raise ProviderError("completion.choices[0].message.content: expected a string")
    usage_obj = reply.get("usage")
    usage_map: Mapping[str, Any] = usage_obj if isinstance(usage_obj, Mapping) else {}
    model = reply.get("model")
    return content, Usage(
        prompt_tokens=_count(usage_map.get("prompt_tokens")),
        completion_tokens=_count(usage_map.get("completion_tokens")),
        model=model if isinstance(model, str) and model else requested_model,
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _strip_fence(content: str) -> str:
    text = content.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        text = text[3:-3]
        first_newline = text.find("\n")
        if first_newline != -1 and text[:first_newline].strip().isalpha():
            text = text[first_newline + 1 :]
    return text.strip()
