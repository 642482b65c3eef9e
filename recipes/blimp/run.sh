#!/usr/bin/env bash
# BLiMP minimal pairs (13 paradigms, 13,000 pairs): acceptability accuracy of SmolLM2 and the shipped masked LM.
#   stage 1 causal   SmolLM2 LP, MeanLP, PenLP on every pair (one scoring pass: the three share the LL)
#   stage 2 prompts  SmolLM2 in-template LP (+ Mean/Pen), Yes/No and the L2:P3 ensemble on the first
#                    --prompt-limit pairs of each paradigm (each costs 5 templates × 2 sentences per pair)
#   stage 3 masked   the shipped MLM's PLL with each of the four masking variants on every pair
#   stage 4 report   one table (overall and per phenomenon, seconds) → $exp/results.md
# Each finished stage leaves $exp/.done.<stage> (its seconds); a rerun skips it (delete the marker to redo it).
here=$(cd "$(dirname "$0")" && pwd)
root=${RESCORER_DATA:-$here/../../../shared/data}/blimp
exp=$here/../../exp/recipes/blimp
prompt_limit=20
usage="[--prompt-limit N] (pairs per paradigm for the prompted methods; 1000: all)"
recipe_option() { case $1 in --prompt-limit) prompt_limit=$2 ;; *) return 1 ;; esac; }
source "$here/../stages.sh"

run_stage 1 causal "$rescorer" "${common[@]}" +experiment=blimp_smollm2 "pairs.path=$root" \
  'task.methods=[lp,mean_lp,pen_lp]' 'task.ensembles=[]' "out_dir=$exp/causal"
run_stage 2 prompts "$rescorer" "${common[@]}" +experiment=blimp_smollm2 "pairs.path=$root" \
  "pairs.limit=$prompt_limit" "out_dir=$exp/prompts"
run_stage 3 masked "$rescorer" "${common[@]}" +experiment=blimp_mlm "pairs.path=$root" "out_dir=$exp/masked"
run_stage 4 report python "$here/table.py" "$exp" causal prompts masked
