#!/usr/bin/env bash
# The ROCm 7 chroot: Debian sid (minbase) with ROCm 7.2.4 from experimental, where the
# tests run Debian's ROCR 7.2.4, HIP 7.2.4, rocminfo 7.2.4 and the ROCm libraries' own test
# binaries, under kfd-emu or over hsa-rt's library. ROCm 7.2.4 needs glibc >= 2.38, newer
# than this machine's (Debian 12), hence a chroot.
#
# usage: scripts/rocm7-chroot.sh [build] [ROOT]
#        scripts/rocm7-chroot.sh run [--root ROOT] [--bind SRC[:DST]]... [--no-self-bind] \
#            [--] COMMAND [ARGS...]
#        scripts/rocm7-chroot.sh path
#
# build  makes ROOT, or updates it when it exists (idempotent: apt-get update, dist-upgrade,
#        install of the package list below); needs root, debootstrap (bookworm's knows sid)
#        and Debian's archive. The downloaded packages stay in $ROCM7_DEBS, outside ROOT, so
#        a rebuild from scratch fetches nothing again. Prints ROOT's size and the time taken.
# run    runs COMMAND inside ROOT in a private mount namespace (nothing outside changes, every
#        mount goes when COMMAND ends): ROOT bound on itself first (kfd-emu makes `/` private
#        in its own namespace, which needs `/` to be a mount point; --no-self-bind leaves it
#        out, to check that kfd-emu copes without), a fresh /proc, /sys and /dev bound from
#        the host, and each --bind SRC (a host directory or file) at DST inside (default: the
#        same path). COMMAND runs as root with PATH set to the chroot's; other variables pass
#        through. The exit status is COMMAND's.
# path   prints ROOT.
#
# ROOT: the argument, else $ROCM7_CHROOT, else /work/chroots/rocm7.
# Environment: ROCM7_DEBS (package cache; default /var/cache/hsa-rt/rocm7-debs),
#   ROCM7_MIRROR (default http://deb.debian.org/debian), ROCM7_EXTRA_PACKAGES (more packages
#   to install, e.g. the multi-GB librocprim-tests libhipcub-tests librocthrust-tests).
#
# The archive facts this relies on: sid's and experimental's Release files are expired (a
# frozen snapshot), so apt runs with Acquire::Check-Valid-Until=false, set inside ROOT too;
# only ROCm's source packages are pinned to experimental (an apt preference on `src:` names),
# since `-t experimental` would pull glibc and OpenSSL from experimental as well;
# rocrtst (libhsa-runtime64-tests 7.2.4) depends on libamd-smi26, which neither suite has
# (sid has libamd-smi27), so its files are unpacked by hand (dpkg-deb -x, apt never sees it)
# and /usr/local/lib/rocrtst-compat/libamd_smi.so.26 links to sid's libamd_smi.so.27 (run
# rocrtst64 with LD_LIBRARY_PATH=/usr/local/lib/rocrtst-compat).
set -euo pipefail

DEFAULT_ROOT=/work/chroots/rocm7
DEBS=${ROCM7_DEBS:-/var/cache/hsa-rt/rocm7-debs}
MIRROR=${ROCM7_MIRROR:-http://deb.debian.org/debian}
ROCRTST_COMPAT=/usr/local/lib/rocrtst-compat
CHROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# ROCm's source packages, every binary of which comes from experimental (7.2.4). rocminfo
# 7.2.4 is sid's own.
ROCM_SOURCES=(
    rocr-runtime rocm-hipamd rocm-llvm rocm-core rocprofiler-register roctracer rocm-smi-lib
    rocrand hiprand rocfft hipfft rocblas hipblas hipblas-common hipblaslt rocsolver hipsolver
    rocsparse hipsparse rocprim hipcub rocthrust rccl rocdbgapi
)

# What the tests use: ROCR 7.2.4 (the thunk merged in), HIP 7.2.4 and hiprtc, hipcc 7.2.4
# (clang-22, rocm-device-libs-22), rocminfo 7.2.4, the ROCm libraries and their test and
# bench binaries, and sid's llvm-21 (an LLVM >= 20 knows gfx950). The -tests packages of
# rocPRIM, hipCUB and rocThrust are 1.1-1.9 GB each and left to ROCM7_EXTRA_PACKAGES; their
# headers are here (hipcc builds a test over them).
PACKAGES=(
    libhsa-runtime64-1 libhsa-runtime-dev rocminfo
    libamdhip64-7 libamdhip64-dev libhiprtc7 libhiprtc-builtins7 hipcc
    librocrand1 librocrand-dev librocrand1-tests
    librocfft0 librocfft-dev librocfft0-tests
    librocblas5 librocblas-dev librocblas5-bench librocblas5-tests
    libhipblas3 libhipblas-dev libhipblas3-bench libhipblas3-tests
    librocsolver0 librocsolver-dev librocsolver0-bench librocsolver0-tests
    librocprim-dev libhipcub-dev librocthrust-dev
    librccl1 librccl-dev librccl1-tests
    libamd-smi27 libhwloc15
    llvm-21
)

usage() {
    sed -n '7,10p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

need_root() {
    if [ "$(id -u)" != 0 ]; then
        echo "rocm7-chroot: $1 needs root (debootstrap, chroot and mounts)" >&2
        exit 1
    fi
}

# The apt configuration inside ROOT: sid and experimental, the pin, no Valid-Until check,
# no recommends, no documentation (smaller).
configure_apt() {
    local root=$1
    printf 'deb %s sid main\n' "$MIRROR" >"$root/etc/apt/sources.list"
    printf 'deb %s experimental main\n' "$MIRROR" >"$root/etc/apt/sources.list.d/experimental.list"
    cat >"$root/etc/apt/apt.conf.d/99hsa-rt" <<'EOF'
// hsa-rt's ROCm 7 chroot (scripts/rocm7-chroot.sh): the archive is a frozen snapshot whose
// sid and experimental Release files have expired.
Acquire::Check-Valid-Until "false";
Acquire::Languages "none";
APT::Install-Recommends "false";
APT::Install-Suggests "false";
EOF
    {
        echo "# hsa-rt's ROCm 7 chroot (scripts/rocm7-chroot.sh): ROCm 7.2.4 from experimental,"
        echo "# everything else from sid."
        echo "Package: $(printf 'src:%s ' "${ROCM_SOURCES[@]}")"
        echo "Pin: release a=experimental"
        echo "Pin-Priority: 990"
    } >"$root/etc/apt/preferences.d/rocm-experimental"
    cat >"$root/etc/dpkg/dpkg.cfg.d/01hsa-rt-nodoc" <<'EOF'
# hsa-rt's ROCm 7 chroot: no documentation, and no fsync per file while unpacking (a
# rebuilt chroot is rebuilt again if the machine stops halfway).
force-unsafe-io
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
    # No daemons start inside the chroot.
    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
    chmod 755 "$root/usr/sbin/policy-rc.d"
}

# The apt phase, run by `build` inside a private mount namespace: the package cache bound
# over ROOT's, /proc for the maintainer scripts.
apt_phase() {
    local root=$1
    mount --bind "$DEBS" "$root/var/cache/apt/archives"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    local apt=(chroot "$root" env -i PATH="$CHROOT_PATH" DEBIAN_FRONTEND=noninteractive
        LC_ALL=C.UTF-8 apt-get -o DPkg::Lock::Timeout=600 -y -q)
    "${apt[@]}" update
    "${apt[@]}" dist-upgrade
    # shellcheck disable=SC2086
    "${apt[@]}" install "${PACKAGES[@]}" ${ROCM7_EXTRA_PACKAGES:-}
    # rocrtst: downloaded through apt into the cache, unpacked by hand.
    local version deb
    version=$(chroot "$root" apt-cache policy libhsa-runtime64-tests |
        sed -n 's/^ *Candidate: //p')
    deb=libhsa-runtime64-tests_${version//:/%3a}_amd64.deb
    [ -f "$DEBS/$deb" ] || chroot "$root" sh -c "cd /var/cache/apt/archives &&
        apt-get -q -o APT::Sandbox::User=root download libhsa-runtime64-tests=$version"
    dpkg-deb -x "$DEBS/$deb" "$root"
    # rocrtst64 needs libamd_smi.so.26; sid's libamd-smi27 has the AMDSMI_1 symbols it calls
    # (init, shut_down, handles, board info, clocks, fans, temperature). A directory of its
    # own, for LD_LIBRARY_PATH (ldconfig would file the link under its soname, .27).
    mkdir -p "$root$ROCRTST_COMPAT"
    ln -sfn /usr/lib/x86_64-linux-gnu/libamd_smi.so.27 "$root$ROCRTST_COMPAT/libamd_smi.so.26"
    echo "rocm7-chroot: unpacked $deb (rocrtst) by hand"
}

build() {
    need_root build
    local root=${1:-${ROCM7_CHROOT:-$DEFAULT_ROOT}}
    local start=$SECONDS
    mkdir -p "$DEBS"
    if [ -f "$root/etc/debian_version" ] && [ ! -d "$root/debootstrap" ]; then
        echo "rocm7-chroot: updating $root"
    else
        if [ -e "$root" ] && [ -n "$(ls -A "$root")" ] && [ ! -d "$root/debootstrap" ]; then
            echo "rocm7-chroot: $root exists and holds no Debian system; not touching it" >&2
            exit 1
        fi
        echo "rocm7-chroot: debootstrap of sid (minbase) into $root"
        mkdir -p "$root"
        debootstrap --variant=minbase --cache-dir="$DEBS" sid "$root" "$MIRROR"
    fi
    echo "rocm7-chroot: base system after $((SECONDS - start)) s"
    configure_apt "$root"
    unshare --mount --propagation private -- "$0" __apt_phase "$root"
    local size
    size=$(du -sh --one-file-system "$root" | cut -f1)
    echo "rocm7-chroot: $root ready: $size, built in $((SECONDS - start)) s" \
        "(packages cached in $DEBS: $(du -sh "$DEBS" | cut -f1))"
}

run() {
    need_root run
    local root=${ROCM7_CHROOT:-$DEFAULT_ROOT} self_bind=1 binds=()
    while [ $# -gt 0 ]; do
        case $1 in
        --root) root=$2; shift 2 ;;
        --bind) binds+=("$2"); shift 2 ;;
        --no-self-bind) self_bind=0; shift ;;
        --) shift; break ;;
        -*) echo "rocm7-chroot run: unknown option $1" >&2; usage ;;
        *) break ;;
        esac
    done
    [ $# -gt 0 ] || usage
    if [ ! -x "$root/usr/bin/rocminfo" ]; then
        echo "rocm7-chroot: no ROCm 7 chroot at $root (build it: scripts/rocm7-chroot.sh build)" >&2
        exit 1
    fi
    exec unshare --mount --propagation private -- "$0" __run "$root" "$self_bind" \
        "${#binds[@]}" "${binds[@]}" "$@"
}

# Inside run's namespace: the mounts, then chroot.
run_inside() {
    local root=$1 self_bind=$2 n=$3
    shift 3
    local binds=("${@:1:$n}")
    shift "$n"
    if [ "$self_bind" = 1 ]; then
        mount --bind "$root" "$root"
    fi
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    local b src dst
    for b in "${binds[@]}"; do
        src=${b%%:*}
        dst=${b#*:}
        [ "$b" != "$src" ] || dst=$src
        if [ -d "$src" ]; then
            mkdir -p "$root$dst"
        else
            mkdir -p "$(dirname "$root$dst")"
            [ -e "$root$dst" ] || : >"$root$dst"
        fi
        mount --bind "$src" "$root$dst"
    done
    exec chroot "$root" /usr/bin/env PATH="$CHROOT_PATH" "$@"
}

case ${1:-build} in
build) shift || true; build "$@" ;;
run) shift; run "$@" ;;
path) echo "${ROCM7_CHROOT:-$DEFAULT_ROOT}" ;;
__apt_phase) shift; apt_phase "$@" ;;
__run) shift; run_inside "$@" ;;
-h | --help) usage ;;
*) build "$@" ;;
esac
