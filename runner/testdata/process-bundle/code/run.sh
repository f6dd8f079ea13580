#!/bin/sh
# Replaced by each test; this one takes its seed at the gate and writes a
# minimal valid MLLOG.
set -e
read -r gate < "$D5_GATE"
seed=${gate#*\"seed\":}
seed=${seed%%[,\}]*}
t=$(date +%s%3N)
{
  echo ":::MLLOG {\"namespace\": \"\", \"time_ms\": $t, \"event_type\": \"POINT_IN_TIME\", \"key\": \"seed\", \"value\": $seed, \"metadata\": {}}"
  echo ":::MLLOG {\"namespace\": \"\", \"time_ms\": $t, \"event_type\": \"INTERVAL_START\", \"key\": \"run_start\", \"value\": null, \"metadata\": {}}"
  echo ":::MLLOG {\"namespace\": \"\", \"time_ms\": $t, \"event_type\": \"POINT_IN_TIME\", \"key\": \"eval_accuracy\", \"value\": 0.5, \"metadata\": {\"epoch_num\": 1}}"
  echo ":::MLLOG {\"namespace\": \"\", \"time_ms\": $t, \"event_type\": \"INTERVAL_END\", \"key\": \"run_stop\", \"value\": null, \"metadata\": {\"status\": \"success\"}}"
} > "$D5_RESULT_LOG"
echo "seed $seed done"
