#!/usr/bin/env bash
# GPU figures, run from the repository root on a CUDA machine:
#   bash benchmarks/gpu.sh adapt OUT ASSETS   domain-adapt MiniLM on the corpora (resumable), export the delta to OUT
#   bash benchmarks/gpu.sh bench OUT ASSETS   BERT-base PLL and GPT-2 LL throughput (bf16) vs minicons / lm-scorer,
#                                             and through one Ray actor (engine=ray)
# ASSETS holds what ../shared and pip would give: minilm/ (encoder + tokenizer), corpora/, refs/dev_clean.trn.
set -euo pipefail
what=$1; out=$2; assets=${3:-.gpu}
rescorer() { python3 -m rescorer.cli "$@"; }
case $what in
  adapt)
    rescorer task=adapt task.encoder=$assets/minilm "task.train=[$assets/corpora]" task.dev_refs=$assets/refs/dev_clean.trn \
      task.max_seconds=${ADAPT_SECONDS:-480} task.steps=${ADAPT_STEPS:-6000} task.eval_every=250 +task.progress=true \
      task.export=$out/minilm-mlm engine.device=cuda out_dir=exp/gpu/adapt
    cp exp/gpu/adapt/curve.json exp/gpu/adapt/curve.png "$out/" ;;
  bench)
    rescorer task=bench task.kind=pll task.device=cuda task.n=5000 "task.batches=[8,32,128]" task.tokenizer=$assets/minilm \
      "task.peers=[minicons]" "task.scales=[ray]" task.threads=16 out_dir=$out
    rescorer task=bench task.kind=ll task.device=cuda task.n=5000 "task.batches=[8,32,128]" "task.scales=[ray]" \
      task.threads=16 out_dir=$out ;;
esac
