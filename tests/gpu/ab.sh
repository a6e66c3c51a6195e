#!/usr/bin/env bash
# Side-by-side benchmarks of compile-time variants of one CUDA source on the
# GPU machine, after `tests/gpu/run.sh build`: each variant recompiles that
# one file with its -D flags (ninja's own command, in parallel) into a copy
# of the kernels library and links its own streamblur-bench; then the
# variants run the same bench arguments in turn, ROUNDS times (default 2),
# so that the machine's drift falls on all of them alike.
#   SRC=blur_running.cu bash tests/gpu/ab.sh 'base=-DKNOB=0' 'new=' -- kernels --filter boxblur --box-radii 15,30
# A variant 'NAME=@FILE -DX' compiles FILE in the source's place (an older
# version of it, with the files it includes beside it), with the flags after.
# Output: "### NAME round K" then the bench's output, on stdout; binaries in
# /tmp/ab-NAME/streamblur-bench (AB_REUSE=1: kept where they exist, for
# another set of bench arguments).
set -uo pipefail
B=${BUILD:-build-gpu}
SRC=${SRC:-blur_running.cu}
variants=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do variants+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#variants[@]} -gt 0 ] || { echo "ab.sh: no variants" >&2; exit 2; }
root=$(pwd)
cd "$B" || exit 1
obj=$(ninja -t commands apps/streamblur-bench | grep -F "/$SRC -o " | tail -1)
link=$(ninja -t commands apps/streamblur-bench | grep -F -- "-o apps/streamblur-bench" | tail -1)
[ -n "$obj" ] && [ -n "$link" ] || { echo "ab.sh: no ninja command for $SRC or the bench" >&2; exit 1; }
out_obj=$(echo "$obj" | sed 's/.* -o //')
member=$(basename "$out_obj")
for v in "${variants[@]}"; do
  defs=${v#*=} d=/tmp/ab-${v%%=*} file=
  if [ "${defs#@}" != "$defs" ]; then file=${defs#@}; file=${file%% *}; case $file in /*) ;; *) file=$root/$file ;; esac; defs=${defs#@*}; defs=${defs#"${defs%% *}"}; fi
  [ -n "${AB_REUSE:-}" ] && [ -x "$d/streamblur-bench" ] && continue
  rm -rf "$d" && mkdir -p "$d"
  (
    cmd=${obj/ -o $out_obj/ $defs -o $d/$member}
    # (never into the build's own object, should the substitution miss)
    [ "$cmd" != "$obj" ] || { echo "ab.sh: could not redirect $member" > "$d/build.log"; exit 1; }
    cmd=$(echo "$cmd" | sed "s# -MD -MT [^ ]* -MF [^ ]*##")
    if [ -n "$file" ]; then
      new=$(echo "$cmd" | sed "s# [^ ]*/$SRC # $file #")
      [ "$new" != "$cmd" ] || { echo "ab.sh: could not put $file in place of $SRC" > "$d/build.log"; exit 1; }
      cmd=$new
    fi
    lcmd=$(echo "$link" | sed "s#kernels/libstreamblur_kernels.a#$d/libstreamblur_kernels.a#; s#-o apps/streamblur-bench#-o $d/streamblur-bench#")
    echo "$cmd" > "$d/build.log"
    eval "$cmd" >> "$d/build.log" 2>&1 &&
      cp kernels/libstreamblur_kernels.a "$d/" && (cd "$d" && ar r libstreamblur_kernels.a "$member") >> "$d/build.log" 2>&1 &&
      eval "$lcmd" >> "$d/build.log" 2>&1
  ) &
done
wait
ok=1
for v in "${variants[@]}"; do
  d=/tmp/ab-${v%%=*}
  if [ ! -x "$d/streamblur-bench" ]; then echo "ab.sh: variant ${v%%=*} failed to build"; tail -20 "$d/build.log"; ok=0; fi
done
[ $ok = 1 ] || exit 1
cd - > /dev/null || exit 1
for round in $(seq 1 "${ROUNDS:-2}"); do
  for v in "${variants[@]}"; do
    echo "### ${v%%=*} round $round"
    "/tmp/ab-${v%%=*}/streamblur-bench" "$@"
  done
done
