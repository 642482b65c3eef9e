#!/usr/bin/env bash
# Moses / Europarl 100-best rescoring with SmolLM2, tuned for BLEU: sentences 0–49 tune, 50–99 report.
#   stage 1 convert  Moses n-best + references → canonical JSONL (two halves)
#   stage 2 score    add SmolLM2 LL columns: ll (each sentence alone), ll_ctx (given the 5 sentences before it)
#   stage 3 tune     (a) Moses total as decoded; (b) total + λ·LL; (c) total + λ·LL with context; λ tuned for BLEU on
#                    the first half
#   stage 4 report   baseline / rescored / oracle BLEU → $exp/results.md
# Each finished stage leaves $exp/.done.<stage> (its seconds); a rerun skips it (delete the marker to redo it).
here=$(cd "$(dirname "$0")" && pwd)
root=${RESCORER_DATA:-$here/../../../shared/data}/moses-nbest
exp=$here/../../exp/recipes/moses_europarl
usage=""
source "$here/../stages.sh"

tune() {
  "$rescorer" "${common[@]}" +experiment=moses_ll data=converted "data.root=$exp/scored" 'scorer=[]' task.columns=null \
    "out_dir=$exp/tune/moses"
  "$rescorer" "${common[@]}" +experiment=moses_ll data=converted "data.root=$exp/scored" 'scorer=[]' \
    "out_dir=$exp/tune/moses_ll"
  "$rescorer" "${common[@]}" task=rescore task.retune=null data=converted "data.root=$exp/scored" 'scorer=[]' task.base.name=total \
    'task.columns={ll_ctx: {range: [0, 0.2], step: 0.005}}' "out_dir=$exp/tune/moses_ll_ctx"
}

run_stage 1 convert "$rescorer" "${common[@]}" task=score data=moses_halves 'scorer=[]' "data.root=$root" \
  "out_dir=$exp/converted"
run_stage 2 score "$rescorer" "${common[@]}" task=score data=converted "data.root=$exp/converted" 'scorer=[ll,ll_ctx]' \
  "out_dir=$exp/scored"
run_stage 3 tune tune
run_stage 4 report python "$here/../table.py" "$exp" dev test "moses=(a) Moses total" "moses_ll=(b) Moses total + λ·SmolLM2 LL" \
  "moses_ll_ctx=(c) Moses total + λ·SmolLM2 LL given the previous 5 sentences"
