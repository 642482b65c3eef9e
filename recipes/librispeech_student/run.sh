#!/usr/bin/env bash
# LibriSpeech / ESPnet2, top 10 hypotheses (--top K): ESPnet's score + the shipped students, their PLL teacher and SmolLM2.
#   stage 1 convert  ESPnet2 n-best directories → canonical JSONL, top K (default 10; every k-th utterance, default 1)
#   stage 2 score    columns student_mse and student_mwer (one pass each); --teachers yes adds pll (word_l2r) and ll
#                    (--teachers pll or ll: just that one)
#   stage 3 tune     each system's weights tuned on dev_other (search=$search), applied unchanged to test_clean
#   stage 4 report   ESPnet alone, + each LM, + all of them tuned jointly, oracle → $exp/results.md
# Each finished stage leaves $exp/.done.<stage> (its seconds); a rerun skips it (delete the marker to redo it).
here=$(cd "$(dirname "$0")" && pwd)
root=${RESCORER_DATA:-$here/../../../shared/data}/librispeech-espnet-30best
exp=$here/../../exp/recipes/librispeech_student
every=1
top=10
teachers=no
search=fast
usage="[--every K] [--top K] [--teachers no|yes|pll|ll] [--search fast|robust|grid]"
recipe_option() {
  case $1 in --every) every=$2 ;; --top) top=$2 ;; --teachers) teachers=$2 ;; --search) search=$2 ;; *) return 1 ;; esac
}
source "$here/../stages.sh"
common=(--config-dir "$here/../librispeech_espnet/conf" "${common[@]}")
lms=(student_mse student_mwer)
case $teachers in
  no) ;;
  yes) lms+=(pll ll) ;;
  pll|ll) lms+=("$teachers") ;;
  *) echo "--teachers: no, yes, pll or ll, not '$teachers'" >&2; exit 2 ;;
esac
scorers=$(IFS=,; echo "[${lms[*]}]")

tune_one() {  # tune_one SYSTEM COLUMN...: ESPnet's score + the columns' weights tuned on dev_other
  local system=$1 columns="" column; shift
  for column in "$@"; do columns+="$column: {range: [0, 1], step: 0.05}, "; done
  "$rescorer" "${common[@]}" task=rescore task.retune=null data=converted "data.root=$exp/scored" 'scorer=[]' "search=$search" \
    task.base.name=score "task.columns={${columns%, }}" "out_dir=$exp/tune/$system"
}

tune() {
  tune_one espnet
  for lm in "${lms[@]}"; do tune_one "$lm" "$lm"; done
  tune_one all "${lms[@]}"
}

run_stage 1 convert "$rescorer" "${common[@]}" task=score data=librispeech 'scorer=[]' data.sets.dev_clean=null \
  "data.root=$root" "+data.sets.dev_other.every=$every" "+data.sets.test_clean.every=$every" \
  "+data.sets.dev_other.top=$top" "+data.sets.test_clean.top=$top" "out_dir=$exp/converted"
run_stage 2 score "$rescorer" "${common[@]}" task=score data=converted "data.root=$exp/converted" \
  "scorer=$scorers" "out_dir=$exp/scored"
labels=("espnet=ESPnet score (0.6 decoder + 0.4 ctc + 0.6 Transformer LM)"
        "student_mse=+ λ·PLL-regression student (shipped)" "student_mwer=+ λ·MWER student (shipped)")
for lm in "${lms[@]}"; do
  case $lm in pll) labels+=("pll=+ λ·PLL (shipped MLM, word_l2r)") ;; ll) labels+=("ll=+ λ·SmolLM2 LL") ;; esac
done
labels+=("all=+ all of these, tuned jointly")
run_stage 3 tune tune
run_stage 4 report python "$here/../table.py" "$exp" dev_other test_clean "${labels[@]}"
