#!/usr/bin/env bash
# Side-by-side benchmarks of variants of the kernels library, on the GPU
# machine after `tests/gpu/run.sh build` (run from the repository root):
#
#   bash tests/gpu/ab.sh VARIANT... -- BENCH-ARGS...
#   bash tests/gpu/ab.sh base= rows4=box3-rows-4.patch -- kernels --filter boxblur --box-radii 1
#   bash tests/gpu/ab.sh new= old=847f2e3:kernels/src/blur_tiled.cu -- kernels --filter boxblur --bits 8
#
# Each VARIANT is NAME=SPEC: a copy of this tree's kernels/ (into
# /tmp/ab-NAME/tree), changed by SPEC, then the build's objects of the kernels
# library that the change touches are recompiled from that copy (ninja's own
# commands, all variants in parallel) into a copy of the library, and a
# streamblur-bench is linked against it. SPEC is a list of parts joined by
# '+', applied left to right:
#   (empty)            the working tree as it is (the build's own bench)
#   FILE.patch, .diff  a patch (git apply; `git diff` output) of files under
#                      kernels/: a path from the repository root, or a name in
#                      tests/gpu/variants/ (patches for the alternatives tried)
#   REV                kernels/ as of commit REV (git archive; needs the history)
#   REV:PATH[,PATH]    only those files as of REV, e.g.
#                      old=847f2e3:kernels/src/blur_tiled.cu
#   @DIR               the files under DIR/kernels/ in place of the tree's
#                      (for a copy without the history: `git archive REV
#                      kernels/src | tar -x -C DIR` here, and carry DIR)
# A changed header recompiles every object of the library; a changed .cu or
# .cpp file its own. Only kernels/ varies: the rest of the bench is the
# build's, so a variant must keep the headers' interface.
# Then the variants run the same bench arguments in turn, ROUNDS times
# (default 2), so that the machine's drift falls on all of them alike.
# Output: "### NAME round K" then the bench's output, on stdout; binaries in
# /tmp/ab-NAME/streamblur-bench, logs beside them. Environment: BUILD (the
# build tree, default build-gpu), ROUNDS, JOBS (parallel compiles, default
# nproc), AB_REUSE=1 (keep the binaries that exist, for another set of bench
# arguments), AB_DRY=1 (show what each variant changes and would compile,
# then stop).
set -uo pipefail
B=${BUILD:-build-gpu}
root=$(pwd)
variants=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do variants+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#variants[@]} -gt 0 ] || { echo "ab.sh: no variants (NAME=SPEC ... -- BENCH-ARGS)" >&2; exit 2; }
[ -d "$root/kernels" ] || { echo "ab.sh: run it from the repository root" >&2; exit 2; }
[ -f "$B/build.ninja" ] || { echo "ab.sh: no build in $B (tests/gpu/run.sh build)" >&2; exit 1; }
bdir=$(cd "$B" && pwd)

cmds=$(cd "$B" && ninja -t commands apps/streamblur-bench) || { echo "ab.sh: ninja -t commands failed" >&2; exit 1; }
link=$(grep -F -- "-o apps/streamblur-bench" <<< "$cmds" | tail -1)
lib=kernels/libstreamblur_kernels.a
archive=$(grep -F -- " $lib " <<< "$cmds" | grep -F " qc " | tail -1)
[ -n "$link" ] && [ -n "$archive" ] || { echo "ab.sh: no link or archive command for the bench in $B" >&2; exit 1; }
# The library's objects (as the archive command lists them), and the tree the
# build compiled them from (its -I.../kernels/include).
objects=$(tr ' ' '\n' <<< "${archive#* qc "$lib" }" | grep '\.o$')
srcroot=$(grep -o -- "-I[^ ]*/kernels/include" <<< "$cmds" | head -1 | sed 's#^-I##; s#/kernels/include$##')
[ -n "$objects" ] && [ -n "$srcroot" ] || { echo "ab.sh: cannot read the kernels library's objects from $B" >&2; exit 1; }

src_of() { echo "kernels/${1#*streamblur_kernels.dir/}" | sed 's/\.o$//'; }   # object -> source path
compile_of() { awk -v o=" -o $1 " 'index($0 " ", o) { c = $0 } END { print c }' <<< "$cmds"; }
# Files under kernels/ that differ between the working tree and variant dir $1.
changed_files() {
  { (cd "$root" && find kernels -type f) && (cd "$1/tree" && find kernels -type f); } | sort -u |
    while read -r f; do cmp -s "$root/$f" "$1/tree/$f" || echo "$f"; done
}

# kernels/ of variant NAME's SPEC into $1/tree.
make_tree() {
  local d=$1 spec=$2 part f rev paths p
  rm -rf "$d/tree" && mkdir -p "$d/tree" && cp -a "$root/kernels" "$d/tree/" || return 1
  IFS='+' read -ra parts <<< "$spec"
  for part in "${parts[@]}"; do
    case $part in
      "") ;;
      -*) echo "ab.sh: '$part': the kernels' tuning knobs are constants now; vary them with a patch" >&2; return 1 ;;
      *.patch|*.diff)
        f=$part
        [ -f "$f" ] || f=$root/$part
        [ -f "$f" ] || f=$root/tests/gpu/variants/$part
        [ -f "$f" ] || { echo "ab.sh: no patch $part (here or in tests/gpu/variants/)" >&2; return 1; }
        f=$(cd "$(dirname "$f")" && pwd)/$(basename "$f")
        if (cd "$d/tree" && git apply --numstat "$f") | cut -f3 | grep -v '^kernels/' | grep -q .; then
          echo "ab.sh: $part changes files outside kernels/" >&2; return 1
        fi
        (cd "$d/tree" && git apply "$f") || { echo "ab.sh: $part does not apply" >&2; return 1; } ;;
      @*)
        f=${part#@}
        case $f in /*) ;; *) f=$root/$f ;; esac
        [ -d "$f/kernels" ] || { echo "ab.sh: $f has no kernels/ folder" >&2; return 1; }
        cp -a "$f/kernels" "$d/tree/" || return 1 ;;
      *:*)
        rev=${part%%:*} paths=${part#*:}
        IFS=',' read -ra ps <<< "$paths"
        for p in "${ps[@]}"; do
          case $p in kernels/*) ;; *) echo "ab.sh: $p is not under kernels/" >&2; return 1 ;; esac
          mkdir -p "$d/tree/$(dirname "$p")" &&
            git -C "$root" show "$rev:$p" > "$d/tree/$p" || { echo "ab.sh: no $p at $rev" >&2; return 1; }
        done ;;
      *)
        rm -rf "$d/tree/kernels" &&
          git -C "$root" archive "$part" kernels | tar -x -C "$d/tree" || { echo "ab.sh: no kernels/ at $part" >&2; return 1; } ;;
    esac
  done
}

# The objects that variant dir $1 recompiles, one a line (none: the build's bench).
objects_to_build() {
  local d=$1 changed
  changed=$(changed_files "$d")
  [ -n "$changed" ] || return 0
  echo "$changed" | sed 's/^/  changed: /' >&2
  if grep -qE '\.(h|hpp|cuh|inl)$|^kernels/include/' <<< "$changed"; then
    echo "$objects"
    return 0
  fi
  grep -q '^kernels/CMakeLists.txt$' <<< "$changed" && echo "ab.sh: kernels/CMakeLists.txt differs; its changes are not applied" >&2
  local o s
  while read -r s; do
    [ -n "$s" ] || continue
    o=$(grep -F "/${s#kernels/}.o" <<< "$objects")
    [ -n "$o" ] || { echo "ab.sh: $s is not one of the library's sources (new files need the build's CMake)" >&2; return 1; }
    [ -f "$d/tree/$s" ] || { echo "ab.sh: the variant has no $s" >&2; return 1; }
    echo "$o"
  done < <(grep -E '\.(cu|cpp|cc)$' <<< "$changed")
}

dry=${AB_DRY:-}
jobs=()
for v in "${variants[@]}"; do
  name=${v%%=*} spec=${v#*=}
  [ "$name" != "$v" ] && [ -n "$name" ] || { echo "ab.sh: '$v' is not NAME=SPEC" >&2; exit 2; }
  d=/tmp/ab-$name
  if [ -n "${AB_REUSE:-}" ] && [ -x "$d/streamblur-bench" ] && [ -z "$dry" ]; then continue; fi
  rm -rf "$d" && mkdir -p "$d/obj" "$d/cc"
  echo "ab.sh: variant $name: ${spec:-the working tree}" >&2
  make_tree "$d" "$spec" || exit 1
  objs=$(objects_to_build "$d") || exit 1
  echo "$objs" | grep . > "$d/objects" || : > "$d/objects"
  while read -r o; do
    [ -n "$o" ] || continue
    c=$(compile_of "$o")
    [ -n "$c" ] || { echo "ab.sh: no compile command for $o" >&2; exit 1; }
    m=$(basename "$o")
    new=$(sed -E "s# -MD -MT [^ ]+ -MF [^ ]+##; s# -o $o # -o $d/obj/$m #; s#$srcroot/kernels/#$d/tree/kernels/#g" <<< "$c ")
    grep -qF -- "-o $d/obj/$m " <<< "$new" || { echo "ab.sh: could not redirect $o" >&2; exit 1; }
    printf 'cd %q && %s > %q 2>&1\n' "$bdir" "$new" "$d/obj/$m.log" > "$d/cc/$m.sh"
    [ -n "$dry" ] && echo "  compile: $(cat "$d/cc/$m.sh")" >&2
  done < "$d/objects"
  jobs+=("$name")
done
[ -n "$dry" ] && exit 0

# Every variant's compiles at once, JOBS at a time.
for n in "${jobs[@]}"; do
  for f in "/tmp/ab-$n/cc/"*.sh; do [ -e "$f" ] && echo "$f"; done
done | xargs -r -P "${JOBS:-$(nproc)}" -n 1 bash
ok=1
for name in "${jobs[@]}"; do
  d=/tmp/ab-$name
  log=$d/build.log
  : > "$log"
  if [ ! -s "$d/objects" ]; then
    cp "$bdir/apps/streamblur-bench" "$d/" && continue
  fi
  built=1
  while read -r o; do
    m=$(basename "$o")
    [ -f "$d/obj/$m" ] || { built=0; echo "--- $m" >> "$log"; cat "$d/obj/$m.log" >> "$log"; }
  done < "$d/objects"
  if [ $built = 1 ]; then
    lcmd=$(sed "s#$lib#$d/libstreamblur_kernels.a#g; s#-o apps/streamblur-bench#-o $d/streamblur-bench#" <<< "$link")
    mapfile -t members < <(while read -r o; do basename "$o"; done < "$d/objects")
    cp "$bdir/$lib" "$d/libstreamblur_kernels.a" &&
      (cd "$d/obj" && ar r "$d/libstreamblur_kernels.a" "${members[@]}") >> "$log" 2>&1 &&
      (cd "$bdir" && eval "$lcmd") >> "$log" 2>&1
  fi
  if [ ! -x "$d/streamblur-bench" ]; then echo "ab.sh: variant $name failed to build"; tail -30 "$log"; ok=0; fi
done
[ $ok = 1 ] || exit 1
for round in $(seq 1 "${ROUNDS:-2}"); do
  for v in "${variants[@]}"; do
    echo "### ${v%%=*} round $round"
    "/tmp/ab-${v%%=*}/streamblur-bench" "$@"
  done
done
