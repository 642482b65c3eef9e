#!/usr/bin/env bash
# LibriSpeech / ESPnet2: a one-pass student that reads the previous utterances, distilled from SmolLM2 given the
# previous 5 utterances of the chapter (ll_ctx) on the unlabelled 30-best hypotheses of all of dev_clean (its
# references are never read), then judged beside ESPnet's score, the shipped student and ll_ctx on dev_other (tuned
# there, top 10) and test_clean, each with and without task.retune=auto.
#   stage 1 distill  the teacher's scores of dev_clean's ~81k hypotheses, each after its context, and of 3,000 segments
#                    of the shipped corpora (with nothing before them), through the store
#                    (about 1.5 h on one CPU thread, 51 min on two; a stop resumes where it was, nothing is scored
#                    twice; minutes on a GPU), then the student, started from the masked LM's encoder, checkpoints
#                    picked on a held-out 5% of those texts → $exp/distill/student
#   stage 2 convert  dev_other and test_clean, top 10 → canonical JSONL
#   stage 3 score    columns student (shipped), ll_ctx and ctx_student (the new one); --lms "student ctx_student"
#                    leaves out ll_ctx (about 50 min of the two sets' 55k texts on 2 CPU cores)
#   stage 4 tune     each system tuned on dev_other (search=$search, 20 held-out halves), then again with
#                    task.retune=auto (ESPnet's own weights re-tuned where that holds)
#   stage 5 report   → $exp/results.md
# --teacher-top K distils on dev_clean's best K hypotheses of each list (default 30: all of them). --list-weight W adds
# the error of each hypothesis's score relative to its list's mean, with weight W (task.list_weight). --init DIR starts
# the student from DIR (default: the shipped masked LM's encoder; a student of an earlier run trains on).
# Each finished stage leaves $exp/.done.<stage>; a rerun skips it (delete the marker to redo it). --max-seconds S
# stops training after S seconds (rerun to go on from $exp/distill/last).
here=$(cd "$(dirname "$0")" && pwd)
root=${RESCORER_DATA:-$here/../../../shared/data}/librispeech-espnet-30best
exp=$here/../../exp/recipes/librispeech_context_student
top=10
teacher_top=30
epochs=3
max_seconds=inf
list_weight=0
init='${model.masked.path}'
search=fast
lms="student ll_ctx ctx_student"
usage="[--top K] [--teacher-top K] [--epochs N] [--max-seconds S] [--list-weight W] [--init DIR]
  [--search fast|robust|grid] [--lms \"student ll_ctx ctx_student\"]"
recipe_option() {
  case $1 in --top) top=$2 ;; --teacher-top) teacher_top=$2 ;; --epochs) epochs=$2 ;; --max-seconds) max_seconds=$2 ;; --search) search=$2 ;;
             --list-weight) list_weight=$2 ;; --init) init=$2 ;;
             --lms) lms=$2 ;; *) return 1 ;; esac
}
source "$here/../stages.sh"
common=(--config-dir "$here/../librispeech_espnet/conf" "${common[@]}")
student=$exp/distill/student

distill() {
  "$rescorer" "${common[@]}" task=distill 'scorer@task.teacher=ll_ctx' "task.init=$init" \
    "+task.hypotheses.dev_clean={nbest: $root/dev_clean, fmt: espnet2, top: $teacher_top}" task.max_length=320 task.eval_every=1000 \
    "task.list_weight=$list_weight" \
    "task.epochs=$epochs" "task.max_seconds=$max_seconds" task.heldout=false "out_dir=$exp/distill"
}

tune_one() {  # tune_one SYSTEM RETUNE COLUMN...: ESPnet's score + the columns' weights tuned on dev_other
  local system=$1 retune=$2 columns="" column; shift 2
  for column in "$@"; do columns+="$column: {range: [0, 1], step: 0.05}, "; done
  "$rescorer" "${common[@]}" task=rescore "task.retune=$retune" data=converted "data.root=$exp/scored" 'scorer=[]' \
    "search=$search" task.base.name=score "task.columns={${columns%, }}" task.halves=20 "out_dir=$exp/tune/$system"
}

tune() {
  tune_one espnet null
  tune_one espnet+auto auto
  for lm in $lms; do
    tune_one "$lm" null "$lm"
    tune_one "$lm+auto" auto "$lm"
  done
}

run_stage 1 distill distill
run_stage 2 convert "$rescorer" "${common[@]}" task=score data=librispeech 'scorer=[]' data.sets.dev_clean=null \
  "data.root=$root" "+data.sets.dev_other.top=$top" "+data.sets.test_clean.top=$top" "out_dir=$exp/converted"
scorers=""  # the shipped scorers among the LMs (ctx_student is the one this recipe trains)
for lm in $lms; do [ "$lm" = ctx_student ] || scorers+="${scorers:+,}$lm"; done
run_stage 3 score "$rescorer" "${common[@]}" task=score data=converted "data.root=$exp/converted" \
  "scorer=[$scorers]" "+scorer.ctx_student={kind: student, model: $student}" \
  "out_dir=$exp/scored"
labels=("espnet=ESPnet score (0.6 decoder + 0.4 ctc + 0.6 Transformer LM)" "espnet+auto=ESPnet, task.retune=auto")
for lm in $lms; do
  case $lm in student) name="student (shipped)" ;; ll_ctx) name="SmolLM2 LL given the previous 5 utterances" ;;
              ctx_student) name="context student (distilled from ll_ctx on dev_clean)" ;; esac
  labels+=("$lm=+ λ·$name" "$lm+auto=+ λ·$name, task.retune=auto")
done
run_stage 4 tune tune
run_stage 5 report python "$here/../table.py" "$exp" dev_other test_clean "${labels[@]}"
echo "results: $exp/results.md"
