# Sourced by recipes/*/run.sh: options shared by every recipe and stages with done-markers.
#   --exp DIR          where everything goes (score store, stage outputs, logs/STAGE.log, results.md)
#   --stage N          first stage to run;  --stop-stage N: last one
#   --store FILE       the SQLite score store (default EXP/store.sqlite; share one to reuse scores across runs)
#   --device D         auto | cpu | cuda
#   --threads N        torch threads (default: the physical cores; 1 when other jobs share the machine)
# A recipe sets `root`, `exp` and `usage` first and may handle its own options in `recipe_option`.
set -euo pipefail
repo=$(cd "$here/../.." && pwd)
stage=1
stop_stage=99
device=auto
store=
threads=
while [ $# -gt 0 ]; do
  case $1 in
    --root) root=$2; shift 2 ;;
    --exp) exp=$2; shift 2 ;;
    --stage) stage=$2; shift 2 ;;
    --stop-stage) stop_stage=$2; shift 2 ;;
    --store) store=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) if declare -F recipe_option > /dev/null && recipe_option "$1" "${2:-}"; then shift 2
       else echo "usage: $0 [--root DIR] [--exp DIR] [--stage N] [--stop-stage N] [--store FILE] [--device auto|cpu|cuda] [--threads N] $usage" >&2; exit 2
       fi ;;
  esac
done
rescorer=${RESCORER:-rescorer}
common=(hydra.run.dir=. "engine.store=${store:-$exp/store.sqlite}" "engine.device=$device")
if [ -n "$threads" ]; then common+=("engine.threads=$threads"); fi
if [ -d "$here/conf" ]; then common=(--config-dir "$here/conf" "${common[@]}"); fi

run_stage() {  # run_stage N NAME COMMAND...: skipped before --stage, after --stop-stage, or when already done
  local n=$1 name=$2; shift 2
  if [ "$n" -lt "$stage" ] || [ "$n" -gt "$stop_stage" ]; then return; fi
  if [ -e "$exp/.done.$name" ]; then echo "stage $n ($name): done already"; return; fi
  echo "stage $n ($name)"
  local start=$SECONDS
  mkdir -p "$exp/logs"
  "$@" 2>&1 | tee -a "$exp/logs/$name.log"
  echo "$((SECONDS - start))" > "$exp/.done.$name"
  echo "stage $n ($name): $((SECONDS - start)) s"
}
