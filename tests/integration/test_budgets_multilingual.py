"""used <= budget holds outside English: plans for CJK, mixed-script and emoji text, asked for
GPT models, recounted with the model's real tokenizer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import bpe_openai
import pytest

from planner_svc.api.planner.v1 import memory_pb2
from planner_svc.client.common import question_request
from planner_svc.settings import ServerSettings, TransportSettings
from tests.integration.conftest import Live, start

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "multilingual.jsonl"
QUESTIONS = (
    "茶是从哪里起源的？", "赵州桥是谁设计的？", "富士山の高さは？", "新幹線はいつ開業しましたか？",
    "한글은 누가 만들었나요?", "김장은 무엇인가요?", "Rust 是什么？", "UTF-8 で漢字は何バイト？",
    "Which emoji take several tokens?", "扩展区 B 的罕用字",
)


@pytest.fixture(scope="module")
def multilingual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    live = start(ServerSettings(data_dir=tmp_path_factory.mktemp("ml") / "data",
                                transport=TransportSettings(port=0, max_workers=4)))
    docs = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    summary = live.memory.IngestSources(iter(
        memory_pb2.IngestSourcesRequest(document=memory_pb2.SourceDocument(
            source_id=d["sourceId"], title=d["title"], media_type=d["mediaType"],
            text=d["text"], valid_from=d["validFrom"], version_tx=d["versionTx"]))
        for d in docs
    ), timeout=60)
    assert (summary.ingested, summary.failed) == (len(docs), 0)
    yield live
    live.channel.close()
    live.running.stop(0)


@pytest.mark.parametrize(("model", "encoding"), [("gpt-4", "cl100k_base"),
                                                 ("gpt-4o", "o200k_base")])
@pytest.mark.parametrize("budget", [300, 1000])
def test_used_tokens_recounted_by_the_real_tokenizer_stay_within_budget(
    multilingual: Live, model: str, encoding: str, budget: int
) -> None:
    tokenizer = bpe_openai.get_encoding(encoding)
    filled = 0
    for question in QUESTIONS:
        plan = multilingual.planner.Plan(
            question_request(question, budget_tokens=budget, model=model, k=100), timeout=30
        ).plan
        assert plan.stats.token_estimate is False  # counted exactly, so no 0.9 margin
        assert plan.budget == budget
        recounted = [len(tokenizer.encode_ordinary(s.text)) for s in plan.spans]
        assert recounted == [s.tokens for s in plan.spans]
        assert sum(recounted) == plan.used <= plan.budget
        filled += plan.used >= budget * 0.8
    assert filled >= len(QUESTIONS) // 2  # the budgets are really spent, not trivially met
