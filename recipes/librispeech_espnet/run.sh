#!/usr/bin/env bash
# LibriSpeech / ESPnet2 30-best rescoring with SmolLM2, from the raw ESPnet output to the results table.
#   stage 1 convert  ESPnet2 n-best directories → canonical JSONL (every k-th utterance; --every 1: the full sets)
#   stage 2 score    add the SmolLM2 LL column (score store: an interrupted run resumes without recomputing)
#   stage 3 tune     systems (a)–(d): weights tuned on dev_other, applied unchanged to test_clean
#   stage 4 report   baseline / rescored / oracle WER of every system → $exp/results.md
# Each finished stage leaves $exp/.done.<stage> (its seconds); a rerun skips it (delete the marker to redo it).
here=$(cd "$(dirname "$0")" && pwd)
root=${RESCORER_DATA:-$here/../../../shared/data}/librispeech-espnet-30best
exp=$here/../../exp/recipes/librispeech_espnet
every=5
usage="[--every K]"
recipe_option() { case $1 in --every) every=$2 ;; *) return 1 ;; esac; }
source "$here/../stages.sh"

tune() {
  for system in espnet am am_ll espnet_ll; do
    "$rescorer" "${common[@]}" "+experiment=librispeech_$system" data=converted "data.root=$exp/scored" 'scorer=[]' \
      "out_dir=$exp/tune/$system"
  done
}

run_stage 1 convert "$rescorer" "${common[@]}" task=score data=librispeech 'scorer=[]' data.sets.dev_clean=null \
  "data.root=$root" "+data.sets.dev_other.every=$every" "+data.sets.test_clean.every=$every" "out_dir=$exp/converted"
run_stage 2 score "$rescorer" "${common[@]}" task=score data=converted "data.root=$exp/converted" 'scorer=[ll]' \
  "out_dir=$exp/scored"
run_stage 3 tune tune
run_stage 4 report python "$here/../table.py" "$exp" dev_other test_clean \
  "espnet=(a) ESPnet score (0.6 decoder + 0.4 ctc + 0.6 Transformer LM)" "am=(b) decoder + λ·ctc" \
  "am_ll=(c) decoder + λ₁·ctc + λ₂·SmolLM2 LL" "espnet_ll=(d) ESPnet score + λ·SmolLM2 LL"
