#!/usr/bin/env bash
# Everything a GPU must show, in ONE call, from the repository root of a CUDA machine:
#   bash benchmarks/gpu.sh OUT
# Stages, each under its own share of GPU_BUDGET seconds (default 420), each writing OUT/STAGE.json as it goes:
# exactness (every scorer, fp32 GPU vs CPU; bf16 drift; a provoked out-of-memory), speed (hyp/s and MFU against
# the bf16 peak measured here; minicons), job (the demo's task=rescore with scorer=[pll]) and scaleout (one worker
# against the local engine). Then OUT/gpu.json, OUT/gpu.md (the table, printed last) and OUT/gpu.log.
# Packages the machine lacks come from .whl/ (`make gpu-wheels`), installed into a private folder; nothing is
# fetched. GPU_REHEARSAL=1 runs the same on the CPU at tiny sizes, with the packages of this environment.
set -uo pipefail
out=${1:?usage: bash benchmarks/gpu.sh OUT}
mkdir -p "$out" && out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit 1
python=${PYTHON:-python3}
if [ -z "${GPU_REHEARSAL:-}" ] && compgen -G ".whl/*.whl" >/dev/null; then
  site=${GPU_SITE:-/tmp/rescorer-gpu-site}
  echo "[gpu] installing $(ls .whl/*.whl | wc -l) carried wheels into $site"
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
    || { echo "[gpu] the carried wheels did not install" >&2; exit 1; }
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
if [ -z "${RESCORER_GPU_ASSETS:-}" ] && [ -f .whl/vocab.tar.xz ]; then  # the real vocabularies, unpacked outside .whl
  vocab=${TMPDIR:-/tmp}/rescorer-gpu-vocab && rm -rf "$vocab" && mkdir -p "$vocab" && tar -xJf .whl/vocab.tar.xz -C "$vocab" && export RESCORER_GPU_ASSETS="$vocab/vocab"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$python" - <<'PY'
import importlib.util, sys
import torch
missing = [m for m in ("hydra", "omegaconf", "jiwer", "sacrebleu", "transformers", "minicons") if not importlib.util.find_spec(m)]
print(f"[gpu] python {sys.version.split()[0]}, torch {torch.__version__}, cuda {torch.cuda.is_available()}"
      + (f" ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else "")
      + (f"; missing: {', '.join(missing)}" if missing else ""))
PY
exec "$python" -m rescorer.benchmark.gpu "$out"
