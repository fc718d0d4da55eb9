#!/usr/bin/env bash
# A rank that never joins a collective: the others end the job after STRATA_MPI_TIMEOUT seconds
# with an error naming the collective, and mpirun stops every rank; nothing hangs.
# Usage: tests/dist/stuck_rank_test.sh MPIEXEC PROGRAM
set -uo pipefail
mpiexec="$1"; program="$2"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STRATA_MPI_TIMEOUT=2
err="$(mktemp)"
trap 'rm -f "$err"' EXIT
start=$SECONDS
timeout 60 "$mpiexec" --oversubscribe -np 2 "$program" --stuck-last-rank >/dev/null 2>"$err"
rc=$?
took=$((SECONDS - start))
[ "$rc" -ne 0 ] || { echo "FAIL: the job succeeded"; exit 1; }
[ "$rc" -ne 124 ] || { echo "FAIL: the job hung until timeout(1) killed it"; exit 1; }
grep -q "rank 0 of 2: error: the other ranks did not complete the allgather of sizes within 2 s" "$err" ||
  { cat "$err"; echo "FAIL: no error naming the collective"; exit 1; }
[ "$took" -lt 30 ] || { echo "FAIL: the job took $took s to end"; exit 1; }
echo "a stuck rank ended the job in $took s with: $(grep -m1 'did not complete' "$err")"
