"""Same store state, request and settings: the same plan hash in any process.

Two ``planner-svc serve`` processes over copies of one data directory, one with one OpenMP
thread and one hash seed, the other with four threads, another seed and two worker processes,
must answer every question with the same plan hash. The fixture is padded with 12,000 extra
vectors: past about 10,000 rows FAISS splits a single-query scan over its threads, and its
scores then differ in their last bits with the thread count.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import grpc
import numpy as np
import pytest

from planner_svc.api.planner.v1 import plan_pb2_grpc
from planner_svc.client.common import question_request
from planner_svc.core.model import SpanRef
from planner_svc.store import NodeWrite, Store
from tests.serving import ServeProcess

pytestmark = pytest.mark.integration

AS_OF = 1_790_000_000_000_000  # after the fixture's version time: every document is live
PADDING = 12_000
FIXTURE_VALID_FROM = 1_785_542_400_000_000  # the fixture documents' valid-from
QUESTIONS = (
    "Which port is the world's busiest by cargo tonnage?",
    "In which present-day country did goats first get domesticated?",
    "Who designed the Eiffel Tower?",
    "What is the capital of Burkina Faso?",
    "Which mountain range separates Europe from Asia?",
    "When did the Crimean War start?",
    "What is the Big Bang?",
    "Which river flows through Belgrade and Budapest?",
    "Who wrote the Divine Comedy?",
    "What do dung beetles eat?",
)


def _pad(data: Path) -> None:
    """Add PADDING passages with seeded random unit vectors (they cite one filler source),
    valid from the fixture's time so they share its index partition."""
    rng = np.random.default_rng(20261130)
    vectors = rng.standard_normal((PADDING, 256)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    text = "filler " * 8
    tx = AS_OF - 1_000_000
    with Store.open(data) as store, store.transaction():
        store.put_source_version("filler", text, title="Filler", media_type="text/plain",
                                 tx_us=tx)
        results = store.write_nodes(
            [NodeWrite(node_id=f"pad:{i:05d}", text=f"filler {i}",
                       provenance=(SpanRef("filler", tx, 0, 6),),
                       valid_from_us=FIXTURE_VALID_FROM)
             for i in range(PADDING)],
            tx_us=tx,
        )
        store.put_vectors((r.version_id, v) for r, v in zip(results, vectors, strict=True))


def _hashes(address: str) -> list[str]:
    out = []
    for budget in (500, 1500):
        for question in QUESTIONS:
            # a new connection per plan, so calls spread over the worker processes
            with grpc.insecure_channel(
                address, options=[("grpc.use_local_subchannel_pool", 1)]
            ) as channel:
                plan = plan_pb2_grpc.EvidencePlannerServiceStub(channel).Plan(
                    question_request(question, budget_tokens=budget, at_valid_us=AS_OF,
                                     at_tx_us=AS_OF, allow_ungrounded=True),
                    timeout=60,
                ).plan
            out.append(plan.plan_hash)
    return out


def test_thread_counts_seeds_and_workers_do_not_change_a_plan(
    fixture_data_dir: Path, tmp_path: Path
) -> None:
    padded = tmp_path / "padded"
    shutil.copytree(fixture_data_dir, padded)
    _pad(padded)
    servers = []
    try:
        for name, env, extra in (
            ("one", {"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "1"}, ()),
            ("four", {"OMP_NUM_THREADS": "4", "PYTHONHASHSEED": "2"}, ("--workers", "2")),
        ):
            data = tmp_path / name
            shutil.copytree(padded, data)
            servers.append(ServeProcess(data, *extra, env=env))
        first, second = (_hashes(server.wait_serving(timeout_s=90)) for server in servers)
        assert len(set(first)) > len(QUESTIONS)  # real, distinct plans
        assert first == second
    finally:
        for server in servers:
            server.stop()
