#!/usr/bin/env bash
# Job status for snakemake-executor-plugin-cluster-generic on PBS/Torque: prints
# running, success or failed for the job id in $1 (what qsub printed).
# Use: cluster-generic-status-cmd: profiles/cluster-generic/status-pbs.sh
set -u
info=$(qstat -f "$1" 2>/dev/null || qstat -fx "$1" 2>/dev/null)
state=$(awk -F' = ' '/job_state/ {print $2}' <<<"$info")
code=$(awk -F' = ' 'tolower($1) ~ /exit_status/ {print $2}' <<<"$info")
case "$state" in
  Q | R | H | W | T | S | E) echo running ;;
  *) if [ "${code:-0}" = "0" ]; then echo success; else echo failed; fi ;;
esac
