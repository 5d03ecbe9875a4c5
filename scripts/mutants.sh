#!/usr/bin/env bash
# Mutation testing of the modules a no-alloc embedder depends on (issue 43), with cargo-mutants
# (https://mutants.rs; settings in .cargo/mutants.toml, results in docs/mutants.md).
#
#   scripts/mutants.sh [MODULE... | all] [--shard K/N] [--re REGEX] [--list]
#   scripts/mutants.sh --ci
#
# MODULE is one of the names `scripts/mutants.sh --modules` prints (default: all). --shard K/N
# runs the K-th of N slices (0-based, cargo-mutants' `--shard`) of the selected mutants, so a
# 2-core machine can spread the hours over several sessions. --re runs only the mutants whose
# name (as --list prints it) matches REGEX (cargo-mutants' `--re`). --ci runs the shard of all modules
# that the commit count picks (K = commits mod CI_SHARDS), so CI walks the whole set in turn;
# it fails when a mutant is missed that docs/mutants.md does not explain, in the modules
# STRICT_MODULES names.
#
# The mutants are tested in a copy of the work tree, target/mutants/tree (cargo-mutants
# `--in-place` there), which keeps its own target dir between runs: the work tree itself is
# never modified, and a second run rebuilds only what changed. Each mutant is tested with the
# tests of the crate it lives in (hsa-core's or hsa-baremetal's, nextest, profile `mutants`).
# Outcomes land in target/mutants/out/LABEL/mutants.out (cargo-mutants' own files:
# outcomes.json, caught.txt, missed.txt, timeout.txt, unviable.txt, log/) and a per-module
# table in target/mutants/out/LABEL/summary.md, which is also printed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The pinned cargo-mutants (.ci/run installs this version).
MUTANTS_VERSION=27.1.0
# CI's slices of all modules: each ~8 mutants at ~10-20 s, so a shard takes ~3 min after the
# ~3 min build.
CI_SHARDS=256
# The modules whose every missed mutant docs/mutants.md explains (a full run showed it; add
# each module once a full run has cleared it): in
# these, --ci fails on a missed mutant the doc does not explain. Elsewhere it reports only.
STRICT_MODULES="region doorbell mqd ih irq carveout gpuvm pool packet_processor queue signal packet suballoc"

modules() {
    cat <<'EOF'
suballoc core/src/memory/suballoc.rs
pool core/src/memory/pool.rs core/src/memory/raw.rs
region core/src/memory/region.rs
queue core/src/queue/*.rs
signal core/src/signal/*.rs
packet core/src/packet/*.rs
packet_processor core/src/packet_processor/*.rs
ih platform-baremetal/src/ih.rs
irq platform-baremetal/src/irq.rs
doorbell platform-baremetal/src/doorbell.rs
carveout platform-baremetal/src/carveout.rs
mqd platform-baremetal/src/mqd.rs
gpuvm platform-baremetal/src/gpuvm.rs
EOF
}

selected=()
shard=""
re=""
list=0
ci=0
while [ $# -gt 0 ]; do
    case "$1" in
    --shard) shard=$2; shift 2 ;;
    --shard=*) shard=${1#--shard=}; shift ;;
    --re) re=$2; shift 2 ;;
    --list) list=1; shift ;;
    --ci) ci=1; shift ;;
    --modules) modules | awk '{print $1}'; exit 0 ;;
    --modules-files) modules; exit 0 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    all) shift ;;
    -*) echo "mutants.sh: unknown option $1" >&2; exit 2 ;;
    *)
        if ! modules | awk '{print $1}' | grep -qx -- "$1"; then
            echo "mutants.sh: unknown module $1 (see --modules)" >&2
            exit 2
        fi
        selected+=("$1")
        shift
        ;;
    esac
done
if [ ${#selected[@]} -eq 0 ]; then
    mapfile -t selected < <(modules | awk '{print $1}')
fi
if [ $ci = 1 ]; then
    k=$(($(git rev-list --count HEAD) % CI_SHARDS))
    shard="$k/$CI_SHARDS"
fi

have=$(cargo mutants --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$MUTANTS_VERSION" ]; then
    echo "mutants.sh: cargo-mutants $MUTANTS_VERSION is needed (found '${have:-none}'):" >&2
    echo "    cargo install cargo-mutants --version $MUTANTS_VERSION --locked" >&2
    exit 2
fi

# The files of the selected modules, as cargo-mutants `-f` globs.
files=()
for m in "${selected[@]}"; do
    read -r -a f < <(modules | awk -v m="$m" '$1 == m { $1 = ""; print }')
    files+=("${f[@]}")
done
file_args=()
for f in "${files[@]}"; do file_args+=(-f "$f"); done

label=$(IFS=+; echo "${selected[*]}")
[ ${#selected[@]} -eq "$(modules | wc -l)" ] && label=all
[ -n "$shard" ] && label="$label-shard-${shard/\//-of-}"
[ -n "$re" ] && label="$label-re"
re_args=()
[ -n "$re" ] && re_args=(--re "$re")

if [ $list = 1 ]; then
    cargo mutants --list "${file_args[@]}" "${re_args[@]}" ${shard:+--shard "$shard"}
    exit 0
fi

# The copy: every tracked or untracked-but-not-ignored file of the work tree; a changed file
# (or one an interrupted run left mutated) is rewritten, so cargo rebuilds it. The tests find
# the shared data as ../shared, so it is linked beside the copy.
tree=$root/target/mutants/tree
mkdir -p "$tree"
git ls-files -co --exclude-standard -z | python3 scripts/mutants_lib.py sync "$tree"
[ -e "$root/../shared" ] && ln -sfn "$(cd "$root/../shared" && pwd)" "$root/target/mutants/shared"

out=$root/target/mutants/out/$label
rm -rf "$out"
mkdir -p "$out"
echo "mutants.sh: modules ${selected[*]}${shard:+, shard $shard}; output in ${out#"$root"/}"
start=$(date +%s)
status=0
# Exit codes: 0 all caught, 2 some missed, 3 some timed out, 4 the baseline failed.
env -u CARGO_TARGET_DIR cargo mutants --in-place -d "$tree" --no-shuffle \
    --colors never -o "$out" "${file_args[@]}" "${re_args[@]}" ${shard:+--shard "$shard"} || status=$?
if [ $status -ne 0 ] && [ $status -ne 2 ] && [ $status -ne 3 ]; then
    echo "mutants.sh: cargo mutants failed (exit $status)" >&2
    exit $status
fi

# Second pass, the configuration without `alloc`: code under `cfg(not(feature = "alloc"))`
# is not even compiled in hsa-core's own tests (its dev-dependency on itself enables the fake
# platform, hence `alloc`), so the mutants those tests missed in the files with such code are
# tried again against hsa-noalloc-tests (tests/noalloc), which builds hsa-core alone without
# features. A mutant either pass catches is caught.
noalloc_files=(core/src/memory/suballoc.rs)
python3 scripts/mutants_lib.py regex "$out/mutants.out/missed.txt" "${noalloc_files[@]}" \
    >"$out/noalloc-regex.txt"
if [ -s "$out/noalloc-regex.txt" ]; then
    echo "mutants.sh: second pass, without alloc (hsa-noalloc-tests)"
    noalloc_args=()
    for f in "${noalloc_files[@]}"; do noalloc_args+=(-f "$f"); done
    status=0
    env -u CARGO_TARGET_DIR cargo mutants --in-place -d "$tree" --no-shuffle --colors never \
        -o "$out/noalloc" "${noalloc_args[@]}" --test-package hsa-noalloc-tests \
        -F "$(cat "$out/noalloc-regex.txt")" || status=$?
    if [ $status -ne 0 ] && [ $status -ne 2 ] && [ $status -ne 3 ]; then
        echo "mutants.sh: cargo mutants (without alloc) failed (exit $status)" >&2
        exit $status
    fi
fi

# Third pass, the loom models: code under `cfg(loom)` (the model ring, the model waits) is not
# compiled without `--cfg loom` either, so the mutants the passes above missed in the files
# with such code are tried against hsa-core's loom tests (core/tests/loom_*.rs), built with
# `--cfg loom` in a target dir of their own (so the two builds do not invalidate each other).
# Only those four test targets are built (`--cargo-arg` goes to the build as well as the run):
# hsa-core's other tests and examples need the fake platform, which loom builds leave out.
loom_files=()
for f in "${files[@]}"; do
    # shellcheck disable=SC2086 # $f may be a glob on purpose
    for g in $f; do
        grep -q 'cfg(loom)' "$g" 2>/dev/null && loom_files+=("$g")
    done
done
still_missed=$out/mutants.out/missed.txt
if [ -s "$out/noalloc-regex.txt" ] && [ -f "$out/noalloc/mutants.out/caught.txt" ]; then
    still_missed=$out/missed-after-noalloc.txt
    grep -vxFf "$out/noalloc/mutants.out/caught.txt" "$out/mutants.out/missed.txt" \
        >"$still_missed" || true
fi
: >"$out/loom-regex.txt"
[ ${#loom_files[@]} -gt 0 ] &&
    python3 scripts/mutants_lib.py regex "$still_missed" "${loom_files[@]}" >"$out/loom-regex.txt"
if [ -s "$out/loom-regex.txt" ]; then
    echo "mutants.sh: third pass, the loom models (--cfg loom)"
    loom_args=()
    for f in "${loom_files[@]}"; do loom_args+=(-f "$f"); done
    status=0
    env -u CARGO_TARGET_DIR RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$tree/target/loom" \
        cargo mutants --in-place -d "$tree" --no-shuffle --colors never \
        -o "$out/loom" "${loom_args[@]}" --test-package hsa-core \
        --cargo-arg=--test=loom_queue --cargo-arg=--test=loom_signal \
        --cargo-arg=--test=loom_barrier --cargo-arg=--test=loom_interrupt \
        -F "$(cat "$out/loom-regex.txt")" || status=$?
    if [ $status -ne 0 ] && [ $status -ne 2 ] && [ $status -ne 3 ]; then
        echo "mutants.sh: cargo mutants (loom) failed (exit $status)" >&2
        exit $status
    fi
fi
elapsed=$(($(date +%s) - start))

# The per-module table (target/mutants/out/LABEL/summary.md), and the missed mutants that
# docs/mutants.md does not explain (it names each explained survivor, as cargo-mutants
# prints it, in backquotes) in unexplained.txt.
python3 scripts/mutants_lib.py summary "$out" "$elapsed" docs/mutants.md "$shard" \
    "${selected[@]}"
strict_files=()
for m in $STRICT_MODULES; do
    read -r -a f < <(modules | awk -v m="$m" '$1 == m { $1 = ""; print }')
    strict_files+=("${f[@]}")
done
: >"$out/unexplained-strict.txt"
while read -r name; do
    for f in "${strict_files[@]}"; do
        # shellcheck disable=SC2053 # $f is a glob on purpose
        if [[ ${name%%:*} == $f ]]; then
            echo "$name" >>"$out/unexplained-strict.txt"
            break
        fi
    done
done <"$out/unexplained.txt"
if [ $ci = 1 ] && [ -s "$out/unexplained-strict.txt" ]; then
    echo "mutants.sh: missed mutants that docs/mutants.md does not explain (write a test that" >&2
    echo "catches each, or explain it there):" >&2
    cat "$out/unexplained-strict.txt" >&2
    exit 1
fi
