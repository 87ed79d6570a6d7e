"""bench_instructions reads a callgrind dump's self costs by shared object."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import bench_instructions
from bench.bench_instructions import _grouped, self_costs

DUMP = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
events: Ir
ob=(1) /usr/lib/libpython3.11.so.1.0
fl=(1) ceval.c
fn=(1) _PyEval_EvalFrameDefault
10 500
+2 300
cob=(2) /venv/site-packages/numpy/_core/_multiarray_umath.so
cfi=(2) ???
cfn=(2) ufunc_generic_fastcall
calls=4 0
12 9000
14 20
ob=(2)
fl=(2)
fn=(2)
0 700
ob=(3) /venv/site-packages/faiss/libfaiss.so
fn=(3) 0x851780
0 4000
ob=(4) ???
fn=(4) 0x1ba88000
0 60
ob=(1)
fn=(1)
16 5

totals: 5585
"""


def test_self_costs_sum_each_objects_own_lines(tmp_path: Path) -> None:
    dump = tmp_path / "callgrind.out.1"
    dump.write_text(DUMP, encoding="utf-8")
    costs = self_costs(dump)
    # the 9000 after calls= is the call's inclusive cost: counted in numpy's own lines only
    assert costs == {"/usr/lib/libpython3.11.so.1.0": 825,
                     "/venv/site-packages/numpy/_core/_multiarray_umath.so": 700,
                     "/venv/site-packages/faiss/libfaiss.so": 4000, "???": 60}
    assert sum(costs.values()) == 5585
    assert _grouped(costs) == {"interpreter": 825, "numpy": 700, "faiss": 4000,
                               "tokenizer": 0, "c library": 0, "other": 60}


def test_self_costs_read_plain_object_names_and_the_ir_column(tmp_path: Path) -> None:
    dump = tmp_path / "callgrind.out.1"
    # instruction and line positions, Ir second of two events, names not compressed
    dump.write_text("positions: instr line\nevents: Dr Ir\n"
                    "ob=/lib/libc.so.6\nfn=memset\n0x10 3 7 40\n"
                    "ob=/venv/tokenizers/tokenizers.abi3.so\nfn=encode\n0x20 9 1 2\n",
                    encoding="utf-8")
    assert self_costs(dump) == {"/lib/libc.so.6": 40,
                                "/venv/tokenizers/tokenizers.abi3.so": 2}


def test_self_costs_refuse_a_dump_without_instructions(tmp_path: Path) -> None:
    dump = tmp_path / "callgrind.out.1"
    dump.write_text("events: Dr Dw\nob=/lib/x.so\nfn=f\n1 2 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no Ir event"):
        self_costs(dump)


def test_main_says_how_to_install_valgrind_when_it_is_missing(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bench_instructions.shutil, "which", lambda _name: None)
    monkeypatch.setattr(sys, "argv", ["bench_instructions"])
    assert bench_instructions.main() == 2
    assert "apt-get install valgrind" in capsys.readouterr().err
