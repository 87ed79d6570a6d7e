"""RegistryCounter and its backends: exact counts, lazy thread-safe loading, OpenAI encodings
counted offline."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from planner_svc.recall.tokens import default_counter
from planner_svc.tokens import (
    HuggingFaceTokenizer,
    ModelRegistry,
    ModelSpec,
    RegistryCounter,
    TiktokenTokenizer,
    TokenizerSpec,
    TokenizerUnavailable,
)
from planner_svc.tokens.backends import TextCounter, load_tiktoken
from planner_svc.tokens.registry import repo_root

TOKENIZER = (repo_root() / "models" / "minilm-l6-m2v-256" / "tokenizer.json").resolve()


def _registry(**models: ModelSpec) -> ModelRegistry:
    return ModelRegistry(models=models)


# ------------------------------------------------------------------ huggingface backend


def test_default_counter_counts_the_local_model_exactly() -> None:
    counter = default_counter()
    assert counter.context_window("minilm-l6") == 512
    # WordPiece: lower-cased words, "##" continuations, one token per CJK ideograph.
    assert counter.count("minilm-l6", "Hello world") == 2
    assert counter.count("minilm-l6", "") == 0
    assert counter.count("minilm-l6", "证据规划") == 4
    assert counter.is_exact("minilm-l6")


def test_counts_ignore_the_truncation_stored_in_the_file() -> None:
    raw = Tokenizer.from_file(str(TOKENIZER))
    assert raw.truncation is not None and raw.truncation["max_length"] == 512
    counter = default_counter()
    long_text = "evidence " * 2000
    assert len(raw.encode(long_text).ids) == 512  # what the stored settings would report
    assert counter.count("minilm-l6", long_text) == 2000


def test_default_counter_reads_a_given_registry(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text('{"models": {"small": {"context_window": 4096}}}')
    counter = default_counter(path)
    assert counter.context_window("small") == 4096
    assert counter.count("small", "text") is None
    assert counter.context_window("minilm-l6") is None
    assert counter.count("minilm-l6", "text") is None


def test_korean_is_counted_above_the_estimate() -> None:
    # The normaliser decomposes Hangul syllables into jamo, so this tokenizer spends more
    # tokens than characters: only an exact count gets it right.
    from planner_svc.core.tokens import estimate_tokens

    text = "한국어 텍스트도 있습니다"
    exact = default_counter().count("minilm-l6", text)
    assert exact is not None
    assert exact > estimate_tokens(text)


def test_text_the_tokenizer_rejects_is_left_to_the_estimator() -> None:
    assert default_counter().count("minilm-l6", "a\ud800b") is None


def test_unknown_model_has_no_count_and_no_window() -> None:
    counter = default_counter()
    assert counter.count("no-such-model", "text") is None
    assert counter.context_window("no-such-model") is None
    assert not counter.is_exact("no-such-model")


def test_corrupt_tokenizer_file_falls_back_to_the_estimator(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"not": "a tokenizer"}')
    counter = RegistryCounter(_registry(m=ModelSpec(
        name="m", context_window=100, tokenizer=HuggingFaceTokenizer(path=bad))))
    assert counter.count("m", "text") is None
    assert counter.context_window("m") == 100
    assert not counter.is_exact("m")


# ------------------------------------------------------------------ lazy, shared, thread-safe


class _CountingLoader:
    """A loader that records its calls and counts whitespace-separated words."""

    def __init__(self, delay_s: float = 0.0, fail: bool = False) -> None:
        self.calls: list[TokenizerSpec] = []
        self._lock = threading.Lock()
        self._delay_s = delay_s
        self._fail = fail

    def __call__(self, spec: TokenizerSpec) -> TextCounter:
        with self._lock:
            self.calls.append(spec)
        if self._delay_s:
            threading.Event().wait(self._delay_s)
        if self._fail:
            raise TokenizerUnavailable("not here")
        return lambda text: len(text.split())


def test_loading_is_lazy_and_shared_between_models_naming_one_tokenizer() -> None:
    spec = TiktokenTokenizer(encoding="cl100k_base")
    loader = _CountingLoader()
    counter = RegistryCounter(
        _registry(
            a=ModelSpec(name="a", context_window=10, tokenizer=spec),
            b=ModelSpec(name="b", context_window=20, tokenizer=spec),
            c=ModelSpec(name="c", context_window=30, tokenizer=None),
        ),
        loader=loader,
    )
    assert loader.calls == []
    assert counter.context_window("a") == 10
    assert loader.calls == []  # the window needs no tokenizer
    assert counter.count("c", "x y") is None
    assert loader.calls == []
    assert counter.count("a", "x y z") == 3
    assert counter.count("b", "x y") == 2
    assert loader.calls == [spec]


def test_concurrent_first_use_loads_once() -> None:
    spec = TiktokenTokenizer(encoding="o200k_base")
    loader = _CountingLoader(delay_s=0.05)
    counter = RegistryCounter(
        _registry(m=ModelSpec(name="m", context_window=10, tokenizer=spec)), loader=loader)
    start = threading.Barrier(16)
    results: list[int | None] = [None] * 16

    def work(i: int) -> None:
        start.wait()
        results[i] = counter.count("m", "w " * i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loader.calls == [spec]
    assert results == list(range(16))


def test_an_unavailable_tokenizer_is_tried_once_and_logged_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = TiktokenTokenizer(encoding="cl100k_base")
    loader = _CountingLoader(fail=True)
    counter = RegistryCounter(
        _registry(m=ModelSpec(name="m", context_window=10, tokenizer=spec)), loader=loader)
    assert [counter.count("m", "a b") for _ in range(5)] == [None] * 5
    assert loader.calls == [spec]
    captured = capsys.readouterr()
    out = captured.out + captured.err  # logs go to stderr once logging is configured
    assert out.count("tokenizer_unavailable") == 1
    assert "not here" in out


def test_real_tokenizer_gives_identical_counts_from_many_threads() -> None:
    counter = default_counter()
    texts = [f"passage {i} " + "知识 evidence planning " * (i % 7) for i in range(64)]
    serial = [counter.count("minilm-l6", t) for t in texts]
    parallel: list[int | None] = [None] * len(texts)

    def work(offset: int) -> None:
        for i in range(offset, len(texts), 8):
            parallel[i] = counter.count("minilm-l6", texts[i])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert parallel == serial
    assert all(isinstance(n, int) and n > 0 for n in serial)


# ------------------------------------------------------------------ OpenAI encodings, offline


@pytest.mark.parametrize(
    ("encoding", "text", "ids"),
    [
        # token ids tiktoken gives for these strings
        ("cl100k_base", "hello world", [15339, 1917]),
        ("cl100k_base", "tiktoken is great!", [83, 1609, 5963, 374, 2294, 0]),
        ("o200k_base", "hello world", [24912, 2375]),
    ],
)
def test_openai_encodings_give_tiktoken_tokens(encoding: str, text: str, ids: list[int]) -> None:
    import bpe_openai

    assert bpe_openai.get_encoding(encoding).encode_ordinary(text) == ids
    assert load_tiktoken(TiktokenTokenizer(encoding=encoding))(text) == len(ids)


def test_gpt_models_count_exactly_out_of_the_box(monkeypatch: pytest.MonkeyPatch) -> None:
    # No tiktoken and no cache directory: the encodings ship with bpe-openai.
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    counter = default_counter()
    assert counter.count("gpt-4", "hello world") == 2
    assert counter.count("gpt-4o", "hello world") == 2
    assert counter.is_exact("gpt-4") and counter.is_exact("gpt-4o-mini")
    assert counter.context_window("gpt-4") == 8192


def test_special_token_strings_count_as_plain_text() -> None:
    counter = default_counter()
    # "<|endoftext|>" is seven ordinary tokens in both encodings, never the special token
    # (which would be one) nor an error
    assert counter.count("gpt-4", "<|endoftext|>") == 7
    assert counter.count("gpt-4o", "<|endoftext|>") == 7
    assert (counter.count("gpt-4", "x <|fim_prefix|> y <|endofprompt|>") or 0) > 4


def test_missing_package_means_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bpe_openai", None)  # import raises ImportError
    with pytest.raises(TokenizerUnavailable, match="not installed"):
        load_tiktoken(TiktokenTokenizer(encoding="cl100k_base"))
    counter = default_counter()
    assert counter.count("gpt-4o", "hello") is None
    assert counter.context_window("gpt-4o") == 128000


def test_registry_names_only_bundled_encodings() -> None:
    from planner_svc.tokens import TIKTOKEN_ENCODINGS, default_registry_path, load_registry

    packaged = load_registry(default_registry_path()).models.values()
    used = {spec.tokenizer.encoding for spec in packaged
            if isinstance(spec.tokenizer, TiktokenTokenizer)}
    assert used and used <= set(TIKTOKEN_ENCODINGS)
    for name in TIKTOKEN_ENCODINGS:
        assert load_tiktoken(TiktokenTokenizer(encoding=name))("ok") == 1
