"""Model registry: the packaged default, validation (reject, never clamp), path resolution."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner_svc.core.errors import ConfigError
from planner_svc.tokens import (
    HuggingFaceTokenizer,
    ModelSpec,
    TiktokenTokenizer,
    default_registry_path,
    load_registry,
    parse_registry,
)
from planner_svc.tokens.registry import repo_root

REPO_TOKENIZER = repo_root() / "models" / "minilm-l6-m2v-256" / "tokenizer.json"


def _write(tmp_path: Path, document: Any, name: str = "models.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_default_registry_loads_with_an_exact_local_model() -> None:
    registry = load_registry()
    assert registry.source == default_registry_path()
    assert registry.get("minilm-l6") == ModelSpec(
        name="minilm-l6",
        context_window=512,
        tokenizer=HuggingFaceTokenizer(path=REPO_TOKENIZER.resolve()),
    )
    gpt4o = registry.get("gpt-4o")
    assert gpt4o is not None
    assert gpt4o.context_window == 128000
    assert gpt4o.tokenizer == TiktokenTokenizer(encoding="o200k_base")
    assert registry.get("unknown-model") is None
    assert list(registry.models) == sorted(registry.models)


def test_entry_without_tokenizer_is_estimator_only(tmp_path: Path) -> None:
    path = _write(tmp_path, {"models": {"local": {"context_window": 32768}}})
    registry = load_registry(path)
    assert registry.models == {
        "local": ModelSpec(name="local", context_window=32768, tokenizer=None)
    }
    assert registry.source == path


def test_relative_path_prefers_the_registry_directory(tmp_path: Path) -> None:
    local = tmp_path / "tok" / "tokenizer.json"
    local.parent.mkdir()
    local.write_bytes(REPO_TOKENIZER.read_bytes())
    doc = {"models": {"m": {"context_window": 10,
                            "tokenizer": {"kind": "huggingface",
                                          "path": "tok/tokenizer.json"}}}}
    spec = load_registry(_write(tmp_path, doc)).models["m"]
    assert spec.tokenizer == HuggingFaceTokenizer(path=local.resolve())


def test_relative_path_falls_back_to_the_repository_root(tmp_path: Path) -> None:
    doc = {"models": {"m": {"context_window": 10,
                            "tokenizer": {"kind": "huggingface",
                                          "path": "models/minilm-l6-m2v-256/tokenizer.json"}}}}
    spec = load_registry(_write(tmp_path, doc)).models["m"]
    assert spec.tokenizer == HuggingFaceTokenizer(path=REPO_TOKENIZER.resolve())


def test_absolute_path_is_used_as_is(tmp_path: Path) -> None:
    doc = {"models": {"m": {"context_window": 10,
                            "tokenizer": {"kind": "huggingface",
                                          "path": str(REPO_TOKENIZER)}}}}
    spec = parse_registry(doc, base_dir=None, root=tmp_path).models["m"]
    assert spec.tokenizer == HuggingFaceTokenizer(path=REPO_TOKENIZER.resolve())


def _hf(path: str) -> dict[str, Any]:
    return {"context_window": 10, "tokenizer": {"kind": "huggingface", "path": path}}


@pytest.mark.parametrize(
    ("document", "field", "reason_part"),
    [
        ([], "(registry)", "must be a JSON object, got an array"),
        ({}, "models", "is required"),
        ({"models": [], }, "models", "must be a JSON object, got an array"),
        ({"models": {}, "extra": 1}, "extra", "unknown key (allowed: models)"),
        ({"models": {"gpt-4o": {"context_window": 0}}},
         "models.gpt-4o.context_window", "must be a positive integer (>= 1 tokens), got 0"),
        ({"models": {"gpt-4o": {"context_window": -5}}},
         "models.gpt-4o.context_window", "got -5"),
        ({"models": {"gpt-4o": {"context_window": 1.5}}},
         "models.gpt-4o.context_window", "got 1.5"),
        ({"models": {"gpt-4o": {"context_window": "512"}}},
         "models.gpt-4o.context_window", "got '512'"),
        ({"models": {"gpt-4o": {"context_window": True}}},
         "models.gpt-4o.context_window", "got true"),
        ({"models": {"gpt-4o": {"context_window": None}}},
         "models.gpt-4o.context_window", "got null"),
        ({"models": {"gpt-4o": {}}}, "models.gpt-4o.context_window", "is required"),
        ({"models": {"gpt-4o": 512}}, "models.gpt-4o", "must be a JSON object, got 512"),
        ({"models": {"m": {"context_window": 8, "window": 8}}},
         "models.m.window", "unknown key (allowed: context_window, tokenizer)"),
        ({"models": {"": {"context_window": 8}}}, "models.", "model name must be"),
        ({"models": {" m": {"context_window": 8}}}, "models. m", "without surrounding"),
        ({"models": {"m" * 201: {"context_window": 8}}}, "models." + "m" * 201, "1..200"),
        ({"models": {"m": {"context_window": 8, "tokenizer": None}}},
         "models.m.tokenizer", "must be a JSON object, got null"),
        ({"models": {"m": {"context_window": 8, "tokenizer": {}}}},
         "models.m.tokenizer.kind", "must be one of huggingface, tiktoken, got null"),
        ({"models": {"m": {"context_window": 8, "tokenizer": {"kind": "sentencepiece"}}}},
         "models.m.tokenizer.kind", "got 'sentencepiece'"),
        ({"models": {"m": {"context_window": 8,
                           "tokenizer": {"kind": "tiktoken", "encoding": "gpt9"}}}},
         "models.m.tokenizer.encoding",
         "must be one of cl100k_base, o200k_base, got 'gpt9'"),
        ({"models": {"m": {"context_window": 8, "tokenizer": {"kind": "tiktoken"}}}},
         "models.m.tokenizer.encoding", "got null"),
        ({"models": {"m": {"context_window": 8,
                           "tokenizer": {"kind": "tiktoken", "encoding": "cl100k_base",
                                         "path": "x"}}}},
         "models.m.tokenizer.path", "unknown key (allowed: encoding, kind)"),
        ({"models": {"m": {"context_window": 8, "tokenizer": {"kind": "huggingface"}}}},
         "models.m.tokenizer.path", "must be a non-empty string, got null"),
        ({"models": {"m": _hf("")}}, "models.m.tokenizer.path", "must be a non-empty string"),
        ({"models": {"m": _hf("nowhere/tokenizer.json")}},
         "models.m.tokenizer.path", "tokenizer file 'nowhere/tokenizer.json' not found"),
        ({"models": {"m": _hf("models")}},  # a directory is not a tokenizer file
         "models.m.tokenizer.path", "not found"),
    ],
)
def test_invalid_documents_are_rejected_with_the_field_path(
    tmp_path: Path, document: Any, field: str, reason_part: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_registry(_write(tmp_path, document))
    assert caught.value.field == field
    assert reason_part in caught.value.reason
    assert caught.value.reason.endswith(f"(in {tmp_path / 'models.json'})")


def test_error_message_reads_field_colon_reason(tmp_path: Path) -> None:
    path = _write(tmp_path, {"models": {"gpt-4o": {"context_window": 0}}})
    with pytest.raises(ConfigError) as caught:
        load_registry(path)
    assert str(caught.value).startswith(
        "models.gpt-4o.context_window: must be a positive integer"
    )


def test_missing_tokenizer_names_every_place_looked(tmp_path: Path) -> None:
    doc = {"models": {"m": _hf("tok.json")}}
    with pytest.raises(ConfigError) as caught:
        parse_registry(doc, base_dir=tmp_path / "a", root=tmp_path / "b")
    assert caught.value.field == "models.m.tokenizer.path"
    assert str(tmp_path / "a" / "tok.json") in caught.value.reason
    assert str(tmp_path / "b" / "tok.json") in caught.value.reason


def test_duplicate_model_names_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text('{"models": {"m": {"context_window": 8}, "m": {"context_window": 9}}}')
    with pytest.raises(ConfigError) as caught:
        load_registry(path)
    assert caught.value.field == "models_path"
    assert "duplicate key 'm'" in caught.value.reason


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text('{"models": {\n  "m": {"context_window": 8,}\n}}')
    with pytest.raises(ConfigError) as caught:
        load_registry(path)
    assert caught.value.field == "models_path"
    assert "is not valid JSON: line 2 column" in caught.value.reason


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path / "absent.json")
    assert caught.value.field == "models_path"
    assert "cannot read model registry" in caught.value.reason


def test_public_surface_is_pinned() -> None:
    import planner_svc.tokens as tokens

    assert sorted(tokens.__all__) == [
        "HuggingFaceTokenizer",
        "ModelRegistry",
        "ModelSpec",
        "RegistryCounter",
        "TIKTOKEN_ENCODINGS",
        "TiktokenTokenizer",
        "TokenizerSpec",
        "TokenizerUnavailable",
        "default_registry_path",
        "load_registry",
        "parse_registry",
    ]
