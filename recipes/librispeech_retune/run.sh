#!/usr/bin/env bash
# LibriSpeech / ESPnet2, top 10 hypotheses: re-tuning ESPnet's own weights (its LM and CTC weights) beside the shipped
# student, tuned on dev_other, judged on test_clean and on 20 random halves of dev_other (tune on one, measure the other).
#   stage 1 tune    six systems, each `task=rescore … task.halves=20` on the same store:
#                   student | student + lm re-tuned | student + every component (decoder, ctc, lm) re-tuned |
#                   every component re-tuned, no LM | student + every component + a word bonus |
#                   student with the default task.retune=auto (decided on dev_other's own half-splits)
#   stage 2 report  one row per system → $exp/results.md
here=$(cd "$(dirname "$0")" && pwd)
root=${RESCORER_DATA:-$here/../../../shared/data}/librispeech-espnet-30best
exp=$here/../../exp/recipes/librispeech_retune
usage=""
source "$here/../stages.sh"
lists=(data=librispeech "data.root=$root" '~data.sets.dev_clean' +data.sets.dev_other.top=10 +data.sets.test_clean.top=10
       task=rescore task.base.name=score task.halves=20)

system() {  # system NAME SCORERS RETUNE: one tuned system under $exp/tune/NAME
  "$rescorer" "${common[@]}" "${lists[@]}" "scorer=$2" "task.retune=$3" "out_dir=$exp/tune/$1"
}

tune() {
  system student '[student]' null
  system student+lm '[student]' '[lm]'
  system student+all '[student]' all
  system all '[]' all
  system student+all+words '[student]' '[decoder, ctc, lm, words]'
  system student+auto '[student]' auto
}

run_stage 1 tune tune
run_stage 2 report python "$here/../table.py" "$exp" dev_other test_clean "student=student" \
  "student+lm=student + ESPnet lm re-tuned" "student+all=student + decoder, ctc, lm re-tuned" \
  "all=decoder, ctc, lm re-tuned (no new LM)" "student+all+words=student + decoder, ctc, lm re-tuned + word bonus" \
  "student+auto=student, task.retune=auto (the default)"
echo "results: $exp/results.md"
