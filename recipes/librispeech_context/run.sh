#!/usr/bin/env bash
# LibriSpeech / ESPnet2, top 10 hypotheses: ESPnet's score + SmolLM2 LL with and without the previous utterances
# of the same chapter as context, and the shipped student.
#   stage 1 convert  ESPnet2 n-best directories → canonical JSONL, top K (default 10; every k-th utterance, default 1)
#   stage 2 score    columns ll (no context), ll_k1, ll_k3, ll_ctx (5), ll_k10 (--contexts "1 3 5 10") and student
#   stage 3 tune     each system's weights tuned on dev_other (search=$search), applied unchanged to test_clean;
#                    the student is joined by the context column best on dev_other; --rescored adds LL given the
#                    previous 5 re-ranked 1-bests (each chapter re-ranked in order)
#   stage 4 report   ESPnet alone, + each column, + student + LL with context, oracle → $exp/results.md
# Each finished stage leaves $exp/.done.<stage> (its seconds); a rerun skips it (delete the marker to redo it).
# With --every K > 1 the context is the previous utterances that were kept (every K-th of the chapter). --first N keeps
# the first N utterances of each set instead: whole chapters in order, so each keeps the context of the full run (and
# its scores, with --store pointing at the full run's store).
here=$(cd "$(dirname "$0")" && pwd)
root=${RESCORER_DATA:-$here/../../../shared/data}/librispeech-espnet-30best
exp=$here/../../exp/recipes/librispeech_context
every=1
first=
rescored=
top=10
contexts="1 3 5 10"
search=fast
usage="[--every K | --first N] [--top K] [--rescored yes] [--contexts \"1 3 5 10\"] [--search fast|robust|grid]"
recipe_option() {
  case $1 in --every) every=$2 ;; --first) first=$2 ;; --rescored) rescored=$2 ;; --top) top=$2 ;; --contexts) contexts=$2 ;; --search) search=$2 ;; *) return 1 ;; esac
}
source "$here/../stages.sh"
common=(--config-dir "$here/../librispeech_espnet/conf" "${common[@]}")
subset=("+data.sets.dev_other.every=$every" "+data.sets.test_clean.every=$every")
if [ -n "$first" ]; then subset+=("+data.sets.dev_other.stop=$first" "+data.sets.test_clean.stop=$first"); fi

lms=(ll student)
shipped=(ll student)
extra=()
for k in $contexts; do
  if [ "$k" = 5 ]; then lms+=(ll_ctx); shipped+=(ll_ctx); continue; fi  # the shipped ll_ctx reads 5
  lms+=("ll_k$k")
  extra+=("+scorer.ll_k$k={kind: ll, model: \${model.causal.path}, case: sentence, append_period: true, context: {utterances: $k}}")
done
scorers=$(IFS=,; echo "[${shipped[*]}]")

tune_one() {  # tune_one SYSTEM COLUMN... [-- OVERRIDE...]: ESPnet's score + the columns' weights tuned on dev_other
  local system=$1 columns="" column; shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do columns+="$1: {range: [0, 1], step: 0.05}, "; shift; done
  "$rescorer" "${common[@]}" task=rescore task.retune=null data=converted "data.root=$exp/scored" 'scorer=[]' "search=$search" \
    task.base.name=score "task.columns={${columns%, }}" task.halves=20 "out_dir=$exp/tune/$system" "${@:2}"
}

dev_wer() {  # dev_wer SYSTEM: its tuned dev_other WER
  python -c 'import json, sys; print(json.load(open(sys.argv[1]))["sets"]["dev_other"]["rescored"]["wer"])' \
    "$exp/tune/$1/report.json"
}

tune() {
  tune_one espnet
  for lm in "${lms[@]}"; do tune_one "$lm" "$lm"; done
  best=$(for lm in "${lms[@]}"; do case $lm in ll_k*|ll_ctx) echo "$(dev_wer "$lm") $lm" ;; esac; done | sort -g | head -1)
  tune_one "student+ctx" student "${best#* }"
  if [ -n "$rescored" ]; then
    tune_one ll_ctx_rescored ll_ctx_rescored -- "+scorer.ll_ctx_rescored={kind: ll, model: \${model.causal.path}, \
case: sentence, append_period: true, context: {utterances: 5, source: rescored}}"
  fi
}

run_stage 1 convert "$rescorer" "${common[@]}" task=score data=librispeech 'scorer=[]' data.sets.dev_clean=null \
  "data.root=$root" "${subset[@]}" \
  "+data.sets.dev_other.top=$top" "+data.sets.test_clean.top=$top" "out_dir=$exp/converted"
run_stage 2 score "$rescorer" "${common[@]}" task=score data=converted "data.root=$exp/converted" \
  "scorer=$scorers" "${extra[@]}" "out_dir=$exp/scored"
labels=("espnet=ESPnet score (0.6 decoder + 0.4 ctc + 0.6 Transformer LM)" "ll=+ λ·SmolLM2 LL, no context"
        "student=+ λ·student (shipped)")
for lm in "${lms[@]}"; do
  case $lm in ll_ctx) labels+=("ll_ctx=+ λ·SmolLM2 LL given the previous 5 utterances") ;;
              ll_k*) labels+=("$lm=+ λ·SmolLM2 LL given the previous ${lm#ll_k} utterances") ;; esac
done
labels+=("student+ctx=+ student + the LL with context best on dev_other, tuned jointly")
if [ -n "$rescored" ]; then labels+=("ll_ctx_rescored=+ λ·SmolLM2 LL given the previous 5 re-ranked 1-bests"); fi
run_stage 3 tune tune
run_stage 4 report python "$here/../table.py" "$exp" dev_other test_clean "${labels[@]}"
