#!/bin/bash
# Run every lab scenario and write test/lab/results/<date>.md. One command, as root, after
# build-image.sh:
#   test/lab/run.sh [SCENARIO ...]     (default: nvmeof initiator twovm verbstest)
# Builds rdmablkd, rdmablk and the verbs/ibverbs test binary on the host with -tags ibverbs
# (cgo, libibverbs-dev / librdmacm-dev from build-image.sh) into $LAB_DIR/share/bin, boots the
# guest once per scenario (one VM set at a time), collects the RESULT lines and writes the tables.
#   nvmeof     scenarios 1+2: kernel nvme-rdma host -> rdmablkd, then -> kernel nvmet-rdma (fio)
#   initiator  scenario 3: rdmablk bench + write/read/cmp -> nvmet-rdma and -> rdmablkd
#   twovm      scenario 4: rdmablkd in one guest, kernel host + rdmablk in another (RoCE v2)
#   tcp        NVMe/TCP: kernel nvme-tcp host against rdmablkd's tcp listeners, and side by side with nvmet-tcp
#   auth       DH-HMAC-CHAP (6.12 kernel unless LAB_KERNEL says otherwise): kernel host -> rdmablkd for
#              every hash and DH group, refusals, rdmablk -> nvmet-rdma with configfs keys, nvme-cli
#              vectors and transcripts for nvme/auth/testdata (not in the default set)
#   verbstest  scenario 5: go test -tags ibverbs ./verbs/ibverbs (verbs/verbstest) on rxe0
#   restart    kernel host with two paths (-k 1) under crc32c fio while rdmablkd gets SIGTERM and
#              restarts: fio err=0, no I/O error in the kernel log (not in the default set)
#   nbd        rdmablk connect --frontend nbd (/dev/nbd0): ext4, fio, fio verify and ext4 files across
#              SIGKILLs of rdmablkd (not in the default set)
#   ublk       rdmablk connect --frontend ublk (/dev/ublkbN): ext4, fio, kill -9 of the attachment, of
#              rdmablkd and of rdmablk serve, and
#              recovery (needs LAB_KERNEL=6.12; not in the default set)
#   netns      RDMA netns exclusive: rdmablk in a tenant namespace that owns the RDMA device, a second
#              namespace without one (not in the default set; records what the kernel's rxe does)
#   perf       two guests; the target guest serves the same backing alternately from rdmablkd and
#              kernel nvmet-rdma (A B / B A per round), the other runs the kernel host's fio; writes
#              results/<date>-perf[-KERNEL][-busy].md (not part of the default set).
#              Env: ROUNDS (3), BACKINGS (brd,null), HOG (host CPU hogs during the run, 0).
#   perf-tcp   the perf scenario over NVMe/TCP: the target guest serves the backing alternately from
#              rdmablkd's `transport: tcp` listener and kernel nvmet-tcp, the host guest connects with
#              `nvme connect -t tcp` (no rxe in either guest), same fio jobs, rounds and CPU figures;
#              writes results/<date>-perf-tcp[-KERNEL][-busy].md. Same env as perf. Not in the default set.
#              perf and perf-tcp with BASELINE=REV: an A/B of two rdmablkd builds in one boot instead of
#              rdmablkd vs nvmet: B is rdmablkd built from `git archive REV` (share/bin/rdmablkd-base),
#              A today's build, interleaved as above; results/<date>-perf[-tcp]-ab[-KERNEL][-busy].md,
#              columns new/base with their commits, ratios new/base. frontends with BASELINE=REV also
#              builds share/bin/rdmablk-base, the attachment the configurations named CFG-base use
#              (LABARGS=lab.configs=kernel,ublk,ublk-base,...; the report's tables list kernel, ublk
#              and nbd only: the -base rows are in the run's results.txt).
#   frontends  two guests; the target guest's rdmablkd serves one volume (1 GiB brd) for the whole
#              run; the other guest reaches it as the kernel nvme-rdma host (/dev/nvmeXnY), through
#              rdmablk connect --frontend ublk (/dev/ublkbN) and --frontend nbd (/dev/nbdN), in
#              rotated order per round, fio 4 KiB randread/randwrite QD32 x 2 jobs (+ crc32c verify
#              in round 1); writes results/<date>-frontends[-KERNEL].md (issue 13's goals). Boots
#              the 6.12 kernel unless LAB_KERNEL says otherwise (ublk rows skipped on 6.1) in the
#              initiator guest, 6.1 in the target guest unless LAB_TARGET_KERNEL says otherwise. Env:
#              ROUNDS (3), FIOTIME (10), VERIFYSIZE (64M), LABARGS=lab.configs=kernel,ublk,ublk-np,nbd,nbd-np
#              (which configurations; experiment rows: -np GODEBUG=asyncpreemptoff=1 in the attachment,
#              -b the attachment under chrt --batch, -n with --sched normal). Not part of the default set.
#   replica    issue 16: two guests; the target guest runs a three-node rdmablkd cluster (raft and API on
#              loopback, one RDMA listener each on rxe0) with a replicated volume (lab.replicas copies,
#              2: owner n2, copy n3; 3 adds n1); the other guest's kernel nvme-rdma host (native multipath)
#              connects to the owner (ANA optimized) and the copy nodes (inaccessible) and runs fio randwrite +
#              crc32c verify over VERIFYSIZE (64M) while the owner gets SIGKILL (lab.killafter, 8 s
#              into fio): fio err=0 across the failover, the paths' ANA changes, the time without
#              I/O; then the killed node returns and its copy is rebuilt and compared
#              (LABARGS=lab.repltcp=1: the nodes also listen NVMe/TCP, so the owner's legs run over it,
#              as rdmablkd's legs do by default on rxe). Not part of the default set.
#   replperf   issue 16's benchmark on separate machines: guest A runs cluster node n1 and the kernel
#              host's fio against n1's own address, guest B node n2 only; 4 KiB randwrite/randread
#              QD32 x 2 jobs on a 1-copy and a 2-copy volume (copy on n2), alternating per round; the
#              2/1 IOPS ratios (goal: writes >= 0.7, reads >= 0.95). Env: ROUNDS (3), FIOTIME (10).
#              Not part of the default set.
# REPORT_ONLY=<date>-run rewrites the results file of an earlier run from its outputs in $SHARE/out.
# Env: FIOTIME (s per fio/bench job, 20; perf: 15), VERIFYSIZE (crc32c verify size, 128M; perf: 64M),
#      LAB_KERNEL (6.1 or 6.12: the guest kernel), TIMEOUT (s per guest boot, derived from the above),
#      RESULTS (output file), NOBUILD=1 (reuse share/bin),
#      NOTE (a sentence for the results header), APPEND (extra kernel arguments for every guest, e.g.
#      APPEND=slub_debug=FZPU; the perf and frontends results' Command line names it), FROM_HEAD=1 (build `git archive HEAD`, not the
#      work tree: for a shared checkout with other people's unfinished changes),
#      TAGS (build tags, default ibverbs), LABARGS (extra lab.key=value guest parameters for the
#      nvmeof, initiator, tcp, perf and perf-tcp scenarios, e.g. LABARGS=lab.sendinv=off,on: see scenario-nvmeof.sh;
#      perf: LABARGS=lab.pollspins=-1 sets rdmablkd's transport.poll_spins, lab.pollwait=channel its transport.poll_wait,
#      lab.mdts=131072 its max_data_transfer, lab.nullirq=0 the null_blk backing's irqmode (0: completes
#      during submission; default 1, softirq), lab.tcpspins=512 its transport.tcp_poll_spins (perf-tcp; both builds
#      get it, so a BASELINE must know the key), lab.tcpzcmin=4096 its transport.tcp_zero_copy_send_min (perf-tcp);
#      replperf: lab.pollwait=epoll both nodes' transport.poll_wait, lab.gomaxprocs=2 both nodes' GOMAXPROCS,
#      lab.nenv=K=V,K=V both nodes' extra environment (e.g. lab.nenv=GODEBUG=schedtrace=2147483647),
#      lab.replzcmin=N n1's cluster.replication.tcp_zero_copy_send_min (unset: the daemon's default, 4096; -1: copying legs),
#      lab.legwatch=1 both guests watch the leg's sockets each second and dump both daemons' goroutine stacks at a leg timeout (lib.sh leg_watch),
#      lab.datafs=tmpfs their data directories on tmpfs instead of ext4 over brd, lab.vols=r2 one volume only,
#      lab.repltransport=auto|rdma|tcp n1's cluster.replication.transport (n2 listens on both; auto: NVMe/TCP on rxe),
#      lab.mtu=9000 both guests' eth0 MTU: RoCE MTU 4096 instead of 1024),
#      PIN=1 (replperf: guest A's vCPU thread alone on host CPU 0, every other thread of both QEMUs on the others: hostsample.sh),
#      INSNS=1 (perf, perf-tcp: the target guest, frontends: the initiator guest, replperf: guest A, under the insncount
#      QEMU plugin; guest instructions per command per job in the run's insns.md: test/lab/probes/insncount),
#      BASELINE (perf, perf-tcp, frontends: a git revision; B is rdmablkd built from it, not nvmet: see perf above;
#      with NOBUILD=1 the share/bin/rdmablkd-base of an earlier run, which must be that revision's;
#      REPORT_ONLY of an A/B run needs no BASELINE: the run's outputs say so).
# Exit status 0 only when every scenario passed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# what the caller asked for, before config.sh fills in defaults (the frontends scenario's kernel
# default is 6.12, not 6.1)
USER_LAB_KERNEL=${LAB_KERNEL-} USER_KERNEL=${KERNEL-} USER_INITRD=${INITRD-}
. "$HERE/config.sh"
FE_KERNEL=${USER_LAB_KERNEL:-6.12}
# the frontends scenario's target guest kernel (see the scenario below)
FE_TARGET_KERNEL=$(ls "$LAB_DIR"/vmlinuz-"${LAB_TARGET_KERNEL:-6.1}".* 2>/dev/null | sort -V | tail -1)
FE_TARGET_INITRD=$(ls "$LAB_DIR"/initrd.img-"${LAB_TARGET_KERNEL:-6.1}".* 2>/dev/null | sort -V | tail -1)
[ "$(id -u)" = 0 ] || { echo "run.sh: run as root" >&2; exit 1; }
[ -f "$IMAGE" ] || { echo "run.sh: no guest image: run test/lab/build-image.sh first" >&2; exit 1; }
SCENARIOS=${*:-nvmeof initiator twovm verbstest}
FT=${FIOTIME:-20}
VS=${VERIFYSIZE:-128M}
ROUNDS=${ROUNDS:-3}; BACKINGS=${BACKINGS:-brd,null}; HOG=${HOG:-0}
KVER=$(basename "$KERNEL" | sed 's/vmlinuz-//')
# A scenario killed half-way must not leave qemu running (it would hold the lab lock and the CPUs):
# each scenario runs as its own process group, killed whole on INT/TERM/HUP.
set -m
CPID=; HOGS=()
stop_all() { [ -n "$CPID" ] && kill -TERM -- -"$CPID" 2>/dev/null; hog_stop; }
trap 'stop_all; echo "run.sh: interrupted" >&2; exit 130' INT TERM HUP
hog_start() { local i; for i in $(seq "$HOG"); do sh -c 'while :; do :; done' & HOGS+=($!); done; }
hog_stop() { [ ${#HOGS[@]} -gt 0 ] && kill "${HOGS[@]}" 2>/dev/null; HOGS=(); }
bg() { "$@" & CPID=$!; wait "$CPID"; local rc=$?; CPID=; return $rc; }
STAMP=$(date +%Y-%m-%d-%H%M)
RUN=${REPORT_ONLY:-$STAMP-run}
RESULTS=${RESULTS:-$HERE/results/${RUN%-run}.md}
STATUS=$SHARE/out/$RUN-status.txt
mkdir -p "$SHARE/bin" "$SHARE/out" "$HERE/results"
# TAGS= (empty) builds the pure-Go binaries: only the kernel-to-kernel parts can pass then.
TAGS=${TAGS-ibverbs}
# the build directories made below (git archive trees), removed on exit
TMPDIRS=()
trap '[ ${#TMPDIRS[@]} = 0 ] || rm -rf "${TMPDIRS[@]}"' EXIT
# BASELINE=REV (perf, perf-tcp): B is rdmablkd built from REV. A revision git does not know stops
# the run here, before any build or boot.
BASELINE=${BASELINE:-}; BASESHORT=
if [ -n "$BASELINE" ] && [ -z "${REPORT_ONLY:-}" ]; then
  [[ " $SCENARIOS " == *" perf "* || " $SCENARIOS " == *" perf-tcp "* || " $SCENARIOS " == *" frontends "* ]] ||
    { echo "run.sh: BASELINE=$BASELINE: only the perf, perf-tcp and frontends scenarios compare with a baseline build (asked: $SCENARIOS)" >&2; exit 1; }
  if ! BASEREV=$(git -C "$REPO" rev-parse --verify --end-of-options "$BASELINE^{commit}" 2>/dev/null); then
    echo "run.sh: BASELINE=$BASELINE: not a commit in $REPO ($(git -C "$REPO" rev-parse --verify --end-of-options "$BASELINE^{commit}" 2>&1 >/dev/null | head -1))" >&2
    exit 1
  fi
  BASESHORT=$(git -C "$REPO" rev-parse --short "$BASEREV")
fi
if [ -z "${REPORT_ONLY:-}" ] && [ "${NOBUILD:-0}" != 1 ]; then
  echo "== building on the host (tags: ${TAGS:-none})"
  # the commit, and whether the tree had local changes; a tree that is not a git checkout says so
  if COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null); then
    if [ "${FROM_HEAD:-0}" = 1 ]; then BUILT="commit \`$COMMIT\` (built from git archive HEAD)"
    elif git -C "$REPO" diff --quiet HEAD -- . ':!test/lab/results' 2>/dev/null; then BUILT="commit \`$COMMIT\`"
    else BUILT="commit \`$COMMIT\` (work tree with local changes)"; fi
  else BUILT="a source tree that is not a git checkout ($REPO)"; fi
  SRC=$REPO
  if [ "${FROM_HEAD:-0}" = 1 ]; then   # build the committed tree, not the work tree
    # a directory of this run's own: two runs from two checkouts (SHARE=...) may build at once
    SRC=$(mktemp -d "$LAB_DIR/src.XXXXXX") || exit 1
    TMPDIRS+=("$SRC")
    (cd "$REPO" && git archive HEAD) | tar -x -C "$SRC" || exit 1
  fi
  (cd "$SRC" && go build -tags "$TAGS" -o "$SHARE/bin/rdmablkd" ./cmd/rdmablkd &&
     go build -tags "$TAGS" -o "$SHARE/bin/rdmablk" ./cmd/rdmablk) || { echo "run.sh: build failed" >&2; exit 1; }
  echo "$BUILT" > "$SHARE/bin/build-info"
  # Which ublk data path the built code has (the frontends report states it): the ublk adapter
  # registers its tag buffers with the initiator (one copy, by the kernel) or does not (two).
  if grep -q 'RegisterBuffer' "$SRC"/internal/attach/ublkback/*.go 2>/dev/null; then echo 1; else echo 2; fi > "$SHARE/bin/ublk-copies"
  if [ -n "$TAGS" ]; then
    (cd "$SRC" && go test -c -tags ibverbs -o "$SHARE/bin/ibverbs.test" ./verbs/ibverbs) || echo "run.sh: verbs/ibverbs test binary did not build" >&2
  fi
fi
if [ -n "$BASESHORT" ]; then
  if [ "${NOBUILD:-0}" != 1 ]; then
    echo "== building the baseline rdmablkd from $BASESHORT (git archive, tags: ${TAGS:-none})"
    BSRC=$(mktemp -d "$LAB_DIR/src-base.XXXXXX") || exit 1
    TMPDIRS+=("$BSRC")
    rm -f "$SHARE/bin/rdmablkd-base" "$SHARE/bin/rdmablk-base" "$SHARE/bin/build-info-base"
    # rdmablk-base: the frontends scenario's CFG-base configurations (the attachment of REV)
    { (cd "$REPO" && git archive "$BASEREV") | tar -x -C "$BSRC" &&
      (cd "$BSRC" && go build -tags "$TAGS" -o "$SHARE/bin/rdmablkd-base" ./cmd/rdmablkd &&
        go build -tags "$TAGS" -o "$SHARE/bin/rdmablk-base" ./cmd/rdmablk); } ||
      { echo "run.sh: BASELINE=$BASELINE: rdmablkd of $BASESHORT did not build" >&2; exit 1; }
    rm -rf "$BSRC"
    echo "commit \`$BASESHORT\`" > "$SHARE/bin/build-info-base"
  else   # NOBUILD=1: an earlier run's baseline build, if it is this revision's
    have=$(sed -n 's/^commit `\{0,1\}\([0-9a-f]*\).*/\1/p' "$SHARE/bin/build-info-base" 2>/dev/null)
    if [ ! -x "$SHARE/bin/rdmablkd-base" ] || [ -z "$have" ]; then
      echo "run.sh: NOBUILD=1 BASELINE=$BASELINE: no baseline build in $SHARE/bin (rdmablkd-base, build-info-base): run once without NOBUILD=1" >&2; exit 1
    fi
    [[ $have == "$BASESHORT"* || $BASESHORT == "$have"* ]] ||
      { echo "run.sh: NOBUILD=1 BASELINE=$BASELINE: $SHARE/bin/rdmablkd-base is $have's, not $BASESHORT's: run without NOBUILD=1" >&2; exit 1; }
  fi
fi
# insn_setup DIR BINARY: build the insncount plugin, keep the share's BINARY (for its symbols) in
# DIR and print the qemu arguments that load the plugin with DIR as its mark directory (INSNS=1).
insn_setup() {
  mkdir -p "$1" || return 1
  gcc -O2 -shared -fPIC -fvisibility=hidden -o "$LAB_DIR/insncount.so" "$REPO/test/lab/probes/insncount/insncount.c" -lpthread ||
    { echo "run.sh: INSNS=1: the plugin did not build" >&2; return 1; }
  cp "$SHARE/bin/$2" "$1/$2.bin" || return 1
  if [ -n "$BASELINE" ] && [ -f "$SHARE/bin/$2-base" ]; then cp "$SHARE/bin/$2-base" "$1/$2-base.bin" || return 1; fi
  echo "-plugin $LAB_DIR/insncount.so,dir=$1"
}
# insn_section OUT WHOSE: the results' section of an INSNS=1 run (OUT/insns.md), if there is one.
insn_section() {
  [ -s "$1/insns.md" ] || return 0
  echo
  echo "## Guest instructions per command (INSNS=1)"
  echo
  echo "Counted by the insncount QEMU plugin in $2 (test/lab/probes/insncount): every translated block's"
  echo "executions times its instructions, between marks inside each job; a \`rep\` string instruction counts"
  echo "once per iteration. Instructions are what the guest executed, whatever TCG charged for them in time."
  echo
  cat "$1/insns.md"
}
# insn_report OUT BINARY REF: analyze.py's tables for OUT/insn in OUT/insns.md.
insn_report() {
  python3 "$REPO/test/lab/probes/insncount/analyze.py" --name "$2" --ref "$3" \
    $([ -f "$1/insn/$2-base.bin" ] && echo "--base-binary $1/insn/$2-base.bin") "$1/insn" "$1/insn/$2.bin" > "$1/insns.md" 2>&1 ||
    echo "run.sh: INSNS=1: analyze.py failed (see $1/insns.md)" >&2
}
declare -A RC WALL
[ -n "${REPORT_ONLY:-}" ] || rm -f "$STATUS"
for s in $SCENARIOS; do
  [ -n "${REPORT_ONLY:-}" ] && break
  t0=$(date +%s)
  echo "== scenario $s"
  case "$s" in
    nvmeof|initiator|restart|netns|ublk|nbd) RUNID=$RUN-$s TIMEOUT=${TIMEOUT:-$(( 1200 + 16 * FT ))} bg "$HERE/boot.sh" "$s" \
        lab.fiotime="$FT" lab.verifysize="$VS" ${LABARGS:-} ;;
    tcp) RUNID=$RUN-$s TIMEOUT=${TIMEOUT:-$(( 1200 + (12 + 4 * ROUNDS) * FT ))} bg "$HERE/boot.sh" "$s" \
        lab.fiotime="$FT" lab.verifysize="$VS" lab.rounds="$ROUNDS" ${LABARGS:-} ;;
    auth) LAB_KERNEL=$FE_KERNEL KERNEL=$USER_KERNEL INITRD=$USER_INITRD RUNID=$RUN-$s TIMEOUT=${TIMEOUT:-2400} \
        bg "$HERE/boot.sh" "$s" lab.verifysize="${VERIFYSIZE:-64M}" ${LABARGS:-} ;;
    twovm) RUNID=$RUN-$s FIOTIME=$(( FT < 15 ? FT : 15 )) GUESTARGS="lab.verifysize=$VS" bg "$HERE/twovm.sh" ;;
    perf|perf-tcp)
      PFT=${FIOTIME:-15}; nb=$(echo "${BACKINGS//,/ }" | wc -w)
      PTR=rdma; [ "$s" = perf-tcp ] && PTR=tcp
      echo "host load before: $(cut -d' ' -f1-3 /proc/loadavg)" > "$SHARE/out/$RUN-$s-load.txt"
      hog_start
      TEX=; IARG=
      if [ "${INSNS:-0}" = 1 ]; then TEX=$(insn_setup "$SHARE/out/$RUN-$s/insn" rdmablkd) || exit 1; IARG=" lab.insns=1"; fi
      TARGET_EXTRA=$TEX RUNID=$RUN-$s FIOTIME=$PFT TIMEOUT=${TIMEOUT:-$(( 900 + ROUNDS * nb * 2 * (90 + 6 * PFT) ))} \
        GUESTARGS="lab.rounds=$ROUNDS lab.backings=$BACKINGS lab.verifysize=${VERIFYSIZE:-64M} lab.transport=$PTR${BASESHORT:+ lab.vs=base}$IARG ${LABARGS:-}" PAIR=perf bg "$HERE/twovm.sh"
      rc=$?
      [ -n "$IARG" ] && insn_report "$SHARE/out/$RUN-$s" rdmablkd nvmet
      echo "host load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$SHARE/out/$RUN-$s-load.txt"
      hog_stop
      (exit $rc) ;;
    frontends)
      FFT=${FIOTIME:-10}
      NCFG=3; case "${LABARGS:-}" in *lab.configs=*) NCFG=$(echo "${LABARGS#*lab.configs=}" | cut -d' ' -f1 | tr ',' '\n' | wc -l) ;; esac
      FTO=${TIMEOUT:-$(( 1200 + ROUNDS * NCFG * (90 + 3 * FFT) ))}
      # The target guest boots FE_TARGET_KERNEL (6.1 unless LAB_TARGET_KERNEL says otherwise): it needs
      # no ublk, and the 6.12 kernel's rxe panicked under load in both guests (runs 2026-11-25-0728,
      # 2026-12-04-1947, 2026-12-05-2253, and 2026-12-06-0826 with single-threaded TCG: a double
      # fault in kmem_cache_alloc under rxe's send_common_ack, a corrupted slab freelist); 6.1's rxe
      # has not.
      IEX=; IARG=
      if [ "${INSNS:-0}" = 1 ]; then IEX=$(insn_setup "$SHARE/out/$RUN-frontends/insn" rdmablk) || exit 1; IARG=" lab.insns=1"; fi
      LAB_KERNEL=$FE_KERNEL KERNEL=$USER_KERNEL INITRD=$USER_INITRD RUNID=$RUN-frontends FIOTIME=$FFT TIMEOUT=$FTO \
        TARGET_KERNEL=$FE_TARGET_KERNEL TARGET_INITRD=$FE_TARGET_INITRD INIT_EXTRA=$IEX \
        GUESTARGS="lab.rounds=$ROUNDS lab.verifysize=${VERIFYSIZE:-64M} lab.wait=$FTO$IARG ${LABARGS:-}" PAIR=frontends bg "$HERE/twovm.sh"
      rc=$?
      [ -n "$IARG" ] && insn_report "$SHARE/out/$RUN-frontends" rdmablk kernel
      echo "$(cut -d' ' -f1-3 /proc/loadavg)" > "$SHARE/out/$RUN-frontends/load-after.txt"
      (exit $rc) ;;
    replica) RUNID=$RUN-replica TIMEOUT=${TIMEOUT:-2700} GUESTARGS="lab.verifysize=${VERIFYSIZE:-64M} lab.wait=1500 ${LABARGS:-}" \
        PAIR=replica bg "$HERE/twovm.sh" ;;
    replperf)
      TEX=; IARG=
      if [ "${INSNS:-0}" = 1 ]; then TEX=$(insn_setup "$SHARE/out/$RUN-replperf/insn" rdmablkd) || exit 1; IARG=" lab.insns=1"; fi
      # the host's own CPU over each job (hostsample.sh), while the guests run
      mkdir -p "$SHARE/out/$RUN-replperf"
      "$HERE/hostsample.sh" "$SHARE/out/$RUN-replperf" "$SHARE/out/$RUN-replperf/host-cpu.txt" & HPID=$!
      TARGET_EXTRA=$TEX RUNID=$RUN-replperf FIOTIME=${FIOTIME:-10} TIMEOUT=${TIMEOUT:-$(( 900 + ROUNDS * 4 * (30 + ${FIOTIME:-10}) ))} \
        GUESTARGS="lab.rounds=$ROUNDS lab.wait=1500$IARG ${LABARGS:-}" PAIR=replperf bg "$HERE/twovm.sh"
      rc=$?
      kill "$HPID" 2>/dev/null; wait "$HPID" 2>/dev/null
      [ -n "$IARG" ] && insn_report "$SHARE/out/$RUN-replperf" rdmablkd r1
      (exit $rc) ;;
    verbstest)
      if [ -x "$SHARE/bin/ibverbs.test" ]; then
        RUNID=$RUN-$s GOBIN_ENV=RDMABLK_IBV_ADDR=10.0.2.15:0 bg "$HERE/run-gobin.sh" "$SHARE/bin/ibverbs.test" -test.v -test.count=1 -test.timeout=15m \
          > "$SHARE/out/$RUN-verbstest.txt" 2>&1
      else echo "no ibverbs test binary"; false; fi ;;
    *) echo "run.sh: unknown scenario $s" >&2; false ;;
  esac
  RC[$s]=$?; WALL[$s]=$(( $(date +%s) - t0 ))
  echo "== scenario $s: rc=${RC[$s]} (${WALL[$s]}s)"
  echo "$s ${RC[$s]} ${WALL[$s]}" >> "$STATUS"
done
while read -r s rc w; do RC[$s]=$rc; WALL[$s]=$w; done < "$STATUS"
# What the binaries in share/bin were built from (written when they were built, so NOBUILD=1 and
# REPORT_ONLY runs report the build, not today's tree).
BUILT=$(cat "$SHARE/bin/build-info" 2>/dev/null || echo "unknown sources (no $SHARE/bin/build-info)")
HOSTLINE="Host: $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r), $(nproc) cores, no KVM:"
QEMULINE="qemu $("${QEMU_BIN:-qemu-system-x86_64}" --version | head -1 | awk '{print $4}')$([ -n "${QEMU_BIN:-}" ] && echo " (QEMU_BIN=$QEMU_BIN, not the system's)") TCG (\`-cpu max -accel tcg,thread=multi\`; one-vCPU guests \`thread=single\`), $(go version | awk '{print $3}'), build tags: ${TAGS:-none}."
GUESTLINE="Guest: Debian $SUITE, kernel $KVER, rdma-core $(awk '$1=="rdma-core" {print $2}' "$LAB_DIR/guest-packages.txt" 2>/dev/null), fio $(awk '$1=="fio" {print $2}' "$LAB_DIR/guest-packages.txt" 2>/dev/null)."
# not_quiet LOAD1: the warning line of a results file when the host's 1-minute load at the start
# was above 0.5 (other work shared the two cores).
not_quiet() {
  awk -v l="${1:-0}" 'BEGIN{exit !(l > 0.5)}' || return 0
  echo
  echo "**The host was not quiet before this run (load $1): other work shared the two cores, so these are busy-host figures.**"
}
pkgver() { awk -v p="$1" '$1==p {print $2}' "$LAB_DIR/guest-packages.txt" 2>/dev/null; }
if [[ " $SCENARIOS " == *" frontends "* ]]; then
  FOUT=$SHARE/out/$RUN-frontends
  FRES=$HERE/results/${RUN%-run}-frontends$([ "$FE_KERNEL" != 6.1 ] && echo "-$FE_KERNEL").md
  read -r fwait fl1 fl5 fl15 < "$FOUT/lab-lock.txt" 2>/dev/null
  fk=$(awk '$1=="fe.kernel" {print $2; exit}' "$FOUT/results.txt" 2>/dev/null)
  {
    echo "# rdmablk lab frontends: kernel nvme-rdma host vs rdmablk ublk vs rdmablk nbd, $(date '+%Y-%m-%d %H:%M %Z')"
    echo
    echo "Command: \`$([ -n "$BASELINE" ] && echo "BASELINE=$BASELINE ")$([ -n "$USER_LAB_KERNEL" ] && echo "LAB_KERNEL=$USER_LAB_KERNEL ")$([ -n "${LABARGS:-}" ] && echo "LABARGS='$LABARGS' ")$([ -n "${APPEND:-}" ] && echo "APPEND='$APPEND' ")$([ "${INSNS:-0}" = 1 ] && echo "INSNS=1 ")ROUNDS=$ROUNDS FIOTIME=${FIOTIME:-10} test/lab/run.sh frontends\` ($(if [ "${RC[frontends]:-1}" = 0 ]; then echo pass; else echo "FAIL rc=${RC[frontends]:-none}"; fi), ${WALL[frontends]:-?} s of which ${fwait:-?} s waiting for the lab lock), built from $BUILT."
    [ -n "${NOTE:-}" ] && echo "Note: $NOTE"
    echo "$HOSTLINE $QEMULINE"
    echo "Guest: Debian $SUITE, kernel ${fk:-unknown (the initiator guest reported none)}, rdma-core $(pkgver rdma-core), fio $(pkgver fio), nvme-cli $(pkgver nvme-cli). Two guests (1 vCPU, 2 GiB"
    echo "each) on a bridge in a private network namespace, RoCE v2 between two kernels (rxe0 on virtio-net)."
    echo "Target guest: kernel $(basename "$FE_TARGET_KERNEL" | sed 's/^vmlinuz-//') (LAB_TARGET_KERNEL), one rdmablkd (ibverbs provider on rxe0, \`max_queue_depth: 128\`) serving one volume, a 1 GiB brd"
    echo "RAM disk, for the whole run (guest/scenario-twovm-target.sh). Initiator guest: the same volume as"
    echo "/dev/nvmeXnY (kernel nvme-rdma host, \`nvme connect -t rdma\`, its defaults), /dev/ublkbN and /dev/nbdN"
    echo "(\`rdmablk connect --frontend ublk|nbd\`, ibverbs, its defaults), one at a time, disconnected in between."
    echo "fio: libaio, direct=1, time_based ${FIOTIME:-10} s, 4 KiB, iodepth 32, numjobs 2, group reporting; round 1 adds"
    echo "a crc32c write+verify over ${VERIFYSIZE:-64M} (2 jobs × half, QD32). Initiator CPU = the initiator guest's busy time"
    echo "(/proc/stat user+nice+system+irq+softirq) over each fio job — fio, the kernel's block layer and"
    echo "nvme-rdma or ublk/nbd, and the rdmablk process — per I/O fio completed; the rdmablk process's own"
    echo "utime+stime is shown apart."
    echo "ublk, as the built code does it (ublk/device_linux.go, internal/attach/ublkback/doc.go): the driver's"
    echo "default copy mode (no UBLK_F_USER_COPY, no zero copy; flags UBLK_F_USER_RECOVERY,"
    echo "UBLK_F_USER_RECOVERY_REISSUE, UBLK_F_CMD_IOCTL_ENCODE), one ublk queue per initiator I/O queue with its depth;"
    case $(cat "$SHARE/bin/ublk-copies" 2>/dev/null) in
      1) echo "data is copied once per I/O on the CPU, by the kernel between the bio's pages and the tag's buffer;"
         echo "the tag buffers are registered with the initiator (Session.RegisterBuffer), so the target moves the"
         echo "data by RDMA straight to or from them." ;;
      2) echo "data is copied twice per I/O: by the kernel between the bio's pages and the tag's buffer (plain"
         echo "memory), and by the initiator between that buffer and its registered RDMA buffer." ;;
      *) echo "(how many copies the built ublk adapter makes was not recorded at build time)." ;;
    esac
    echo "nbd: the kernel nbd driver on socketpairs to the rdmablk process, one NBD connection per initiator"
    echo "I/O queue (NBD_FLAG_CAN_MULTI_CONN): data crosses the unix socket (a kernel copy each way) and the"
    echo "initiator copies it into its registered buffer."
    echo "Host load average (1/5/15 min) when the run got the lab: ${fl1:-?} ${fl5:-?} ${fl15:-?}; after: $(cat "$FOUT/load-after.txt" 2>/dev/null)."
    not_quiet "$fl1"
    fails=$(grep -h '^FAIL:' "$FOUT"/frontends-*.log 2>/dev/null)
    if [ -n "$fails" ]; then
      echo
      echo "Guest failures (the scenario's FAIL lines, and the kernel log lines dmesg_check objected to):"
      echo
      echo '```'
      for g in init target; do
        grep -h -B30 '^FAIL: dmesg' "$FOUT/frontends-$g.log" 2>/dev/null | grep '^\[ *[0-9.]*\]' | sed "s/^/$g: /"
        grep -h '^FAIL:' "$FOUT/frontends-$g.log" 2>/dev/null | sed "s/^/$g: /"
      done
      echo '```'
    fi
    echo
    go run "$REPO/test/lab/perfreport" -mode frontends -dir "$FOUT" 2>&1
    insn_section "$FOUT" "the initiator guest"
  } > "$FRES"
  echo "== frontends results: $FRES"
  SCENARIOS=$(echo " $SCENARIOS " | sed 's/ frontends / /; s/^ *//; s/ *$//')
  [ -n "$SCENARIOS" ] || { [ "${RC[frontends]:-1}" = 0 ]; exit $?; }
fi
# rxe_summary DIR [AB]: rxe's error/retry counters (not the plain packet counts) summed over the rounds
# per backing, job and target, on the target guest (job.*.rxe) and the host guest (job.*.hrxe).
# With AB (an A/B run) the targets are named new and base, not ours and kernel.
rxe_summary() {
  local d=$1 ab=${2:-} f
  ls "$d"/job.*.rxe >/dev/null 2>&1 || return 0
  echo
  echo "rxe counters over each job, summed over the rounds (retransmissions, RNR NAKs, sequence errors;"
  echo "packet and message counts left out; none listed = all zero): target guest / host guest."
  echo
  echo "| backing | job | target | target rxe0 | host rxe0 |"
  echo "| --- | --- | --- | --- | --- |"
  for f in "$d"/serve.[0-9]*; do
    case $f in *.done) continue ;; esac
    read -r r b impl < "$f"; n=${f##*.}
    [ -n "$ab" ] && case $impl in ours) impl=new ;; kernel) impl=base ;; esac
    for j in "$d"/job.$n.*.rxe; do
      [ -e "$j" ] || continue
      name=${j#$d/job.$n.}; name=${name%.r*.rxe}
      echo "$b $name $impl T $(cat "$j" | tr '\n' ' ')"
      echo "$b $name $impl H $(cat "${j%.rxe}.hrxe" 2>/dev/null | tr '\n' ' ')"
    done
  done | awk '{k=$1" | "$2" | "$3; side=$4; for (i = 5; i < NF; i += 2) if ($i !~ /pkts$|^rdma_|^ack_deferred$/) c[k, side, $i] += $(i+1); keys[k] = 1}
    END { for (k in keys) { out[1] = ""; out[2] = ""; s = 0
            for (x in c) { split(x, p, SUBSEP); if (p[1] != k) continue; i = (p[2] == "T") ? 1 : 2; out[i] = out[i] p[3] "=" c[x] " " }
            printf "| %s | %s | %s |\n", k, (out[1] == "" ? "-" : out[1]), (out[2] == "" ? "-" : out[2]) } }' | sort
}
# perf_results S: the results file of scenario S (perf: RDMA, perf-tcp: NVMe/TCP). An A/B run (BASELINE,
# or REPORT_ONLY of one: the target guest wrote out/RUN-S/versus) compares two rdmablkd builds.
perf_results() {
  local s=$1 tgt="nvmet-rdma" host="nvme-rdma" out=$SHARE/out/$RUN-$s ab= abnew abbase abrev
  [ "$s" = perf-tcp ] && { tgt="nvmet-tcp"; host="nvme-tcp"; }
  if [ -n "$BASESHORT" ] || [ -f "$out/versus" ]; then
    # the builds the target guest ran (its versus file), else what share/bin says
    ab=-ab
    abnew=$(sed -n 's/^new //p' "$out/versus" 2>/dev/null | head -1); abnew=${abnew:-$BUILT}
    abbase=$(sed -n 's/^base //p' "$out/versus" 2>/dev/null | head -1)
    abbase=${abbase:-$(cat "$SHARE/bin/build-info-base" 2>/dev/null || echo "an unknown revision (no $SHARE/bin/build-info-base)")}
    abrev=$(echo "$abbase" | sed -n 's/^commit `\{0,1\}\([0-9a-f]*\).*/\1/p'); abrev=${abrev:-${BASESHORT:-?}}
  fi
  local PRES=$HERE/results/${RUN%-run}-$s$ab$([ "$LAB_KERNEL" != 6.1 ] && echo "-$LAB_KERNEL")$([ "$HOG" != 0 ] && echo -busy).md
  local PLOAD load0
  PLOAD=$(cat "$SHARE/out/$RUN-$s-load.txt" 2>/dev/null)
  load0=$(echo "$PLOAD" | awk '/before/ {print $4; exit}')
  {
    if [ -n "$ab" ]; then
      echo "# rdmablk lab $s A/B: rdmablkd (new) vs rdmablkd built from commit \`$abrev\` (base), not kernel $tgt, $(date '+%Y-%m-%d %H:%M %Z')"
    else
      echo "# rdmablk lab $s: rdmablkd vs kernel $tgt, $(date '+%Y-%m-%d %H:%M %Z')"
    fi
    echo
    echo "Command: \`$([ -n "$ab" ] && echo "BASELINE=$abrev ")$([ -n "${LABARGS:-}" ] && echo "LABARGS='$LABARGS' ")$([ "$HOG" != 0 ] && echo "HOG=$HOG ")$([ -n "${APPEND:-}" ] && echo "APPEND='$APPEND' ")$([ "${INSNS:-0}" = 1 ] && echo "INSNS=1 ")$([ "$LAB_KERNEL" != 6.1 ] && echo "LAB_KERNEL=$LAB_KERNEL ")ROUNDS=$ROUNDS$([ "$BACKINGS" != brd,null ] && echo " BACKINGS=$BACKINGS") FIOTIME=${FIOTIME:-15} test/lab/run.sh $s\` ($(if [ "${RC[$s]:-1}" = 0 ]; then echo pass; else echo "FAIL rc=${RC[$s]:-none}"; fi), ${WALL[$s]:-?} s), built from $([ -n "$ab" ] && echo "$abnew" || echo "$BUILT")."
    if [ -n "$ab" ]; then
      echo "A/B run: B (\"base\") is NOT kernel $tgt but rdmablkd built from $abbase (\`git archive\`, share/bin/rdmablkd-base);"
      echo "A (\"new\") is rdmablkd built from $abnew. Both serve the same backing with the same configuration, address and port,"
      echo "interleaved per round in one boot of the same two guests; the tables' ratios are new / base."
    fi
    [ -n "${NOTE:-}" ] && echo "Note: $NOTE"
    echo "$HOSTLINE $QEMULINE"
    echo "$GUESTLINE Two guests (1 vCPU, 2 GiB each) on a bridge in a private network namespace,"
    if [ "$s" = perf-tcp ]; then
      echo "NVMe/TCP between two kernels over virtio-net (no rxe): the kernel $host host (\`nvme connect -t tcp\`,"
      if [ -n "$ab" ]; then
        echo "its defaults, no digests) against rdmablkd's \`transport: tcp\` listener (new or base), on port 4420."
      else
        echo "its defaults, no digests) against rdmablkd's \`transport: tcp\` listener or nvmet-tcp, both on port 4420."
      fi
    else
      echo "RoCE v2 between two kernels (rxe0 on virtio-net)."
    fi
    echo "Target CPU = the target guest's busy time"
    echo "(/proc/stat user+nice+system+irq+softirq) over each fio job, per I/O fio completed."
    echo "Host CPU hogs during the run: $HOG. Host load average (1/5/15 min): $(echo "$PLOAD" | tr '\n' ';' | sed 's/;$//; s/;/; /')."
    [ "$HOG" = 0 ] && not_quiet "$load0"
    echo
    go run "$REPO/test/lab/perfreport" -dir "$out" 2>&1
    [ "$s" = perf ] && rxe_summary "$out" "$ab"
    insn_section "$out" "the target guest"
  } > "$PRES"
  echo "== $s results: $PRES"
}
prc=0
for s in perf perf-tcp; do
  if [[ " $SCENARIOS " == *" $s "* ]]; then
    perf_results "$s"
    [ "${RC[$s]:-1}" = 0 ] || prc=1
    SCENARIOS=$(echo " $SCENARIOS " | sed "s/ $s / /; s/^ *//; s/ *$//")
  fi
done
if [ -z "$SCENARIOS" ]; then   # only perf scenarios (and frontends) ran: every one must have passed
  for s in "${!RC[@]}"; do [ "${RC[$s]}" = 0 ] || prc=1; done
  exit $prc
fi
# ---- results file
ALL=$(cat "$SHARE"/out/$RUN-*/results.txt 2>/dev/null)
val() { echo "$ALL" | awk -v k="$1" '$1==k {print $2; exit}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0 > 0 && b+0 > 0) printf "%.2f", a/b; else print "-" }'; }
# medrange V...: "median (min–max)" of numbers; minmax V...: "min–max".
medrange() { [ $# -gt 0 ] || { echo "-"; return; }; printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%g (%g–%g)", m, a[1], a[NR]}'; }
minmax() { [ $# -gt 0 ] || { echo "-"; return; }; printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "%s–%s", a[1], a[NR]}'; }
{
  echo "# rdmablk lab results, $(date '+%Y-%m-%d %H:%M %Z')"
  echo
  echo "Command: \`test/lab/run.sh $*\` (FIOTIME=$FT, VERIFYSIZE=$VS), built from $BUILT."
  [ -n "${NOTE:-}" ] && echo "Note: $NOTE"
  [ -n "${GOFLAGS:-}" ] && echo "GOFLAGS: \`$GOFLAGS\`"
  echo "$HOSTLINE"
  echo "$QEMULINE"
  echo "Guest: Debian $SUITE, kernel $(basename "$KERNEL" | sed 's/vmlinuz-//'), linux-image $(pkgver "linux-image-$(basename "$KERNEL" | sed 's/vmlinuz-//')"),"
  echo "rdma-core $(pkgver rdma-core), fio $(pkgver fio), nvme-cli $(pkgver nvme-cli), iproute2 $(pkgver iproute2)."
  echo "Network: rxe0 (Soft-RoCE, RoCE v2) on virtio-net eth0; scenarios 1-3 talk to the guest's own"
  echo "address, scenario 4 between two guests on a bridge in a private network namespace."
  echo "Backing store: 1 GiB brd RAM disk for both targets. These are emulation (TCG) figures: only"
  echo "the side-by-side ratio in one boot means something."
  echo
  echo "## Scenarios"
  echo
  echo "| scenario | result | wall (incl. waiting for the lab lock) |"
  echo "| --- | --- | --- |"
  for s in $SCENARIOS; do [ -n "${RC[$s]:-}" ] || continue; echo "| $s | $([ "${RC[$s]}" = 0 ] && echo pass || echo "FAIL (rc=${RC[$s]})") | ${WALL[$s]} s |"; done
  if [[ " $SCENARIOS " == *" nvmeof "* ]]; then
    echo
    echo "## Scenarios 1 and 2: kernel nvme-rdma host + fio, rdmablkd vs kernel nvmet-rdma"
    echo
    echo "fio 4k, libaio, direct, one job, ${FT} s each; verify = randwrite $VS with crc32c then read-verify."
    echo
    echo "| job | rdmablkd IOPS | nvmet-rdma IOPS | ours / kernel | rdmablkd clat avg / p99 (us) | nvmet clat avg / p99 (us) | fio err (ours / kernel) |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    for j in randread.qd16 randread.qd32 randwrite.qd16 randwrite.qd32 verify; do
      o=$(val ours.$j.iops); k=$(val kernel.$j.iops)
      echo "| $j | ${o:--} | ${k:--} | $(ratio "$o" "$k") | $(val ours.$j.clat_avg_us) / $(val ours.$j.clat_p99_us) | $(val kernel.$j.clat_avg_us) / $(val kernel.$j.clat_p99_us) | $(val ours.$j.err) / $(val kernel.$j.err) |"
    done
    echo
    variants=$(echo "$ALL" | awk '$1 ~ /^ours_inv_[a-z0-9]+\.randread\.qd16\.iops$/ {split($1, a, "."); print a[1]}')
    if [ -n "$variants" ]; then
      echo "rdmablkd again with \`transport.send_with_invalidate\` forced (lab.sendinv; started after scenario 1, before scenario 2):"
      echo
      echo "| job | $(for v in $variants; do printf '%s IOPS (clat avg / p99 us) / nvmet | ' "${v#ours_}"; done)"
      echo "| --- | $(for v in $variants; do printf -- '--- | '; done)"
      for j in randread.qd16 randread.qd32 randwrite.qd16 randwrite.qd32; do
        printf '| %s | ' "$j"
        for v in $variants; do
          o=$(val $v.$j.iops); printf '%s (%s / %s) %s | ' "${o:--}" "$(val $v.$j.clat_avg_us)" "$(val $v.$j.clat_p99_us)" "$(ratio "$o" "$(val kernel.$j.iops)")"
        done
        echo
      done
      echo
    fi
    prof=$SHARE/out/$RUN-nvmeof/rdmablkd-cpu.pprof
    if [ -s "$prof" ]; then
      echo
      echo "rdmablkd CPU profile over the whole scenario 1 (\`go tool pprof -top\`, first lines; file kept in \`$prof\`):"
      echo
      echo '```'
      go tool pprof -top -nodecount=25 "$SHARE/bin/rdmablkd" "$prof" 2>/dev/null | head -32
      echo '```'
    fi
    echo
    echo "After \`nvme disconnect\` + \`nvme connect\`: verify-only read-back of the verify job's data: $(val ours.reverify.iops) IOPS, err=$(val ours.reverify.err)."
  fi
  if [[ " $SCENARIOS " == *" initiator "* ]]; then
    echo
    echo "## Scenario 3: our initiator (rdmablk bench, ibverbs) against nvmet-rdma and rdmablkd"
    echo
    echo "| job | vs nvmet-rdma IOPS (p99 us) | vs rdmablkd IOPS (p99 us) | I/O errors (nvmet / ours) |"
    echo "| --- | --- | --- | --- |"
    for j in randread.qd16 randread.qd32 randwrite.qd16 randwrite.qd32; do
      echo "| $j | $(val init.kernel.$j.iops) ($(val init.kernel.$j.p99_us)) | $(val init.ours.$j.iops) ($(val init.ours.$j.p99_us)) | $(val init.kernel.$j.errors) / $(val init.ours.$j.errors) |"
    done
    echo
    echo "Verify pass (64 MiB random file: rdmablk write, rdmablk read, cmp; and cmp with the RAM disk):"
    echo "nvmet-rdma: $(val init.kernel.verify) / on disk $(val init.kernel.ondisk); rdmablkd: $(val init.ours.verify) / on disk $(val init.ours.ondisk)."
  fi
  if [[ " $SCENARIOS " == *" twovm "* ]]; then
    echo
    echo "## Scenario 4: two guests (rdmablkd VM, initiator VM; -smp 1 each), RoCE v2 between two kernels"
    echo
    echo "| job | IOPS | clat avg / p99 (us) | err |"
    echo "| --- | --- | --- | --- |"
    for j in randread.qd16 randwrite.qd16 verify; do
      echo "| kernel host fio $j | $(val twovm.$j.iops) | $(val twovm.$j.clat_avg_us) / $(val twovm.$j.clat_p99_us) | $(val twovm.$j.err) |"
    done
    echo "| rdmablk bench randread.qd16 | $(val twovm.init.randread.qd16.iops) | | |"
    echo
    echo "rdmablk 16 MiB write/read-back/cmp: $(val twovm.init.verify)."
  fi
  if [[ " $SCENARIOS " == *" restart "* ]]; then
    echo
    echo "## Graceful restarts under a multipath kernel host"
    echo
    echo "rdmablkd on two listeners, the kernel host connected to both (-k 1, native multipath), fio"
    echo "randwrite + crc32c verify over $VS while rdmablkd is stopped with SIGTERM and started again:"
    echo "paths $(val restart.paths), fio err=$(val restart.fio.err), kernel I/O error lines: $(val restart.kernel_io_errors),"
    echo "reconnects refused by rdmablkd (Connect Invalid Data Parameter / Property Set error): $(val restart.reconnects_refused),"
    echo "seconds from SIGTERM until both paths were live again: $(val restart.recover_s.1), $(val restart.recover_s.2)."
  fi
  if [[ " $SCENARIOS " == *" replica "* ]]; then
    RO=$SHARE/out/$RUN-replica
    echo
    echo "## Replicated volume: SIGKILL of the owner under a multipath kernel host (two guests)"
    echo
    echo "Target guest: three rdmablkd cluster nodes (n1 bootstraps and leads; raft and API on loopback,"
    echo "one NVMe-oF/RDMA listener each on rxe0: n1 :4421, n2 :4422, n3 :4423; \`cluster.failover\`"
    echo "interval 1 s, grace 3 s), volume \`rep\` (128 MiB, files on tmpfs) with $(grep -c . "$RO"/copies.md5 2>/dev/null || echo '?') copies, owned by n2,"
    echo "exported to the host guest's NQN. Host guest: kernel nvme-rdma, native multipath"
    echo "(nvme_core multipath=$(val replica.host.multipath)), \`nvme connect -c 2\` to n2 and every copy node; fio randwrite 4 KiB QD16"
    echo "libaio direct + crc32c verify over ${VERIFYSIZE:-64M}; n2 got SIGKILL $(val replica.host.kill_asked_at_fio_s) s into fio."
    echo
    echo "| figure | value |"
    echo "| --- | --- |"
    echo "| discovery (through n2) lists the subsystem at ports | $(val replica.host.discovery_ports) |"
    echo "| paths before (port:controller:ANA) | $(val replica.host.paths_before) |"
    echo "| **fio err across the kill** | **$(val replica.fio.err)** |"
    echo "| fio write / read(verify) IOPS | $(val replica.fio.write.iops) / $(val replica.fio.read.iops) |"
    echo "| fio write / read I/Os | $(val replica.fio.write.ios) / $(val replica.fio.read.ios) |"
    echo "| fio max completion latency write / read (ms) | $(val replica.fio.write.clat_max_ms) / $(val replica.fio.read.clat_max_ms) |"
    echo "| fio wall (s) | $(val replica.fio.wall_s) |"
    echo "| longest interval without completed I/O (s, 250 ms windows; at fio second) | $(val replica.host.io_gap_s) ($(val replica.host.io_gap_at_fio_s)) |"
    echo "| kill → failover committed by the leader (s, target guest clock, leader's log) | $(val replica.target.kill_to_failover_commit_s) |"
    echo "| kill → the new owner sets the export ANA optimized (s, its log) | $(val replica.target.kill_to_ana_optimized_s) |"
    echo "| kill → \`volume status\` shows the new owner (s, polled) | $(val replica.target.owner_moved_poll_s) |"
    echo "| host: owner's path leaves live → copy node's path ANA optimized (s, sysfs, 0.2 s samples) | $(val replica.host.owner_path_down_to_copy_optimized_s) |"
    echo "| host: the copy node's path without its namespace meanwhile (s; the new owner re-attaches it) | $(val replica.host.copy_path_without_namespace_s) |"
    echo "| the owner's legs to its copies (live paths; lab.repltcp=1 adds NVMe/TCP listeners) | $(val replica.target.legs) |"
    echo "| new owner | $(val replica.target.new_owner) |"
    echo "| paths after (port:controller:ANA) | $(val replica.host.paths_after) |"
    echo "| kernel I/O error lines | $(val replica.host.kernel_io_errors) |"
    echo "| n2 restarted → its copy in sync again (s) | $(val replica.target.rebuild_s) |"
    echo "| copies / distinct checksums after the rebuild | $(val replica.target.copies) / $(val replica.target.copies_distinct) |"
    echo "| paths after the rebuild | $(val replica.host.paths_after_rebuild) |"
    echo "| verify-only read-back after the rebuild: IOPS, err | $(val replica.reverify.iops), $(val replica.reverify.err) |"
    echo
    echo "The paths' states on the host (sysfs, sampled every 0.2 s; host guest uptime, port:controller:ANA):"
    echo
    echo '```'
    cat "$RO/paths-timeline.txt" 2>/dev/null
    echo '```'
    echo
    echo "The host's kernel log from the start of fio (nvme/rdma lines; $(grep -c 'requeuing I/O' "$RO/kernel-paths.txt" 2>/dev/null) \"no usable path - requeuing I/O\" lines left out):"
    echo
    echo '```'
    grep -v 'requeuing I/O' "$RO/kernel-paths.txt" 2>/dev/null | cut -c1-180 | head -40
    echo '```'
    for f in list-subsys-before list-subsys-after list-subsys-after-rebuild volume-status-before volume-status-after-kill volume-status-after-rebuild; do
      [ -s "$RO/$f.txt" ] || continue
      echo
      echo "\`$f\`:"
      echo
      echo '```'
      cat "$RO/$f.txt"
      echo '```'
    done
    fails=$(grep -h '^FAIL:' "$RO"/replica-*.log 2>/dev/null)
    if [ -n "$fails" ]; then echo; echo "Guest failures:"; echo; echo '```'; echo "$fails"; echo '```'; fi
  fi
  if [[ " $SCENARIOS " == *" replperf "* ]]; then
    PO=$SHARE/out/$RUN-replperf
    # the median of a[1..n] (sorts a), for the awk programs below
    AWK_MED='function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
      return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
'
    echo
    echo "## Replicated volume: 2 copies vs 1 on separate guests (issue 16's benchmark)"
    echo
    echo "Guest A: rdmablkd cluster node n1 (bootstrap, NVMe-oF/RDMA listener on rxe0) and the load, the kernel"
    echo "nvme-rdma host of the same guest connected to n1's own address; guest B: node n2 only, raft and"
    echo "API over the bridge. Volumes (files on $(case $(val replperf.datafs) in ext4) echo "ext4 over a brd RAM disk";; tmpfs) echo "tmpfs, no O_DIRECT";; *) echo tmpfs;; esac) in each node's data directory, $(val replperf.volsize) each): r1, one copy (n1); r2, two copies"
    echo "(owner n1, copy n2: every write completes when both have it; reads served by n1). Each in its own"
    echo "subsystem, both owned by n1. fio libaio direct 4 KiB QD32 × 2 jobs, ${FIOTIME:-10} s each; per round r1"
    echo "and r2, their order alternating (r1 r2, r2 r1, …); medians (min–max) over $(val replperf.rounds) rounds, ratios"
    echo "per round (r2 / r1 of the same round), then their median. The second copy costs guest B's CPU, as a"
    echo "replica on another host would; the host and the owner share guest A in both runs alike."
    echo "Both volumes were written whole once before the rounds (blocks and pages are allocated on first write)."
    echo "Both nodes' poll groups sleep with transport.poll_wait: $(val replperf.pollwait) (lab.pollwait)."
    [ "$(val replperf.nenv)" != none ] && [ -n "$(val replperf.nenv)" ] && echo "Both nodes ran with this extra environment (lab.nenv): \`$(val replperf.nenv)\`."
    echo "n1 reaches r2's copy on n2 (RDMA and NVMe/TCP listeners) with cluster.replication.transport: $(val replperf.repltransport) (lab.repltransport); the leg's live paths, the one I/O takes first: $(val replperf.legpath)."
    echo "n1's NVMe/TCP legs send a batch zero-copy from this many bytes of write data: $(val replperf.replzcmin) (lab.replzcmin; default: the daemon's, 4096; -1: they copy)."
    echo "Ethernet MTU $(val replperf.mtu), RoCE (rxe0 active) MTU $(val replperf.rxemtu) (lab.mtu; both guests)."
    echo "r2 in sync (2 of 2) before the runs: $(val replperf.insync.before), after: $(val replperf.insync.after)."
    read -r _ pl1 pl5 pl15 < "$PO/lab-lock.txt" 2>/dev/null
    echo "Host load average (1/5/15 min) when the run got the lab: ${pl1:-?} ${pl5:-?} ${pl15:-?}$(not_quiet "${pl1:-0}" | tr '\n' ' ')"
    echo
    echo "| job | 1 copy IOPS | 2 copies IOPS | 2 / 1 (paired range) | goal | guest A CPU µs per I/O, 1 → 2 copies | of which rdmablkd n1 | guest B busy, 2 copies | guest B CPU µs per I/O (rdmablkd n2) |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    awk "$AWK_MED"'
      function mm(a, n,   i, lo, hi) { lo = hi = a[1]; for (i = 2; i <= n; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }; return lo "|" hi }
      $1 == "replperf.hz" { hz = $2 }
      $1 == "replperf.fiotime" { ft = $2 }
      $1 ~ /^replperf\.r[12]\.(rw32|rr32)\.r[0-9]+\.(iops|ios|busy_j|proc_j|n2_busy_j|n2_proc_j)$/ { split($1, k, "."); v[k[2] "." k[3] "." k[4] "." k[5]] = $2; rounds[k[4]] = 1 }
      END {
        if (hz == "") hz = 100
        split("rw32 rr32", jobs, " ")
        name["rw32"] = "4 KiB randwrite QD32 ×2 jobs"; name["rr32"] = "4 KiB randread QD32 ×2 jobs"
        goal["rw32"] = 0.7; goal["rr32"] = 0.95
        for (ji = 1; ji <= 2; ji++) {
          j = jobs[ji]; n = 0; delete a1; delete a2; delete rt; delete c1; delete c2; delete p1; delete p2; np = 0; delete bb; delete bc; delete bp; nb = 0
          for (r in rounds) {
            i1 = v["r1." j "." r ".iops"]; i2 = v["r2." j "." r ".iops"]
            if (i1 == "" || i2 == "" || i1 == 0) continue
            n++; a1[n] = i1; a2[n] = i2; rt[n] = i2 / i1
            c1[n] = v["r1." j "." r ".ios"] ? v["r1." j "." r ".busy_j"] / hz * 1e6 / v["r1." j "." r ".ios"] : 0
            c2[n] = v["r2." j "." r ".ios"] ? v["r2." j "." r ".busy_j"] / hz * 1e6 / v["r2." j "." r ".ios"] : 0
            if (v["r1." j "." r ".proc_j"] != "" && v["r1." j "." r ".ios"] && v["r2." j "." r ".ios"]) {
              np++; p1[np] = v["r1." j "." r ".proc_j"] / hz * 1e6 / v["r1." j "." r ".ios"]; p2[np] = v["r2." j "." r ".proc_j"] / hz * 1e6 / v["r2." j "." r ".ios"]
            }
            if (v["r2." j "." r ".n2_busy_j"] != "" && v["r2." j "." r ".ios"]) {
              nb++; bb[nb] = ft ? 100 * v["r2." j "." r ".n2_busy_j"] / (hz * ft) : 0
              bc[nb] = v["r2." j "." r ".n2_busy_j"] / hz * 1e6 / v["r2." j "." r ".ios"]; bp[nb] = v["r2." j "." r ".n2_proc_j"] / hz * 1e6 / v["r2." j "." r ".ios"]
            }
          }
          if (n == 0) { printf "| %s | - | - | - | - | - | - | - | - |\n", name[j]; continue }
          split(mm(a1, n), r1, "|"); split(mm(a2, n), r2, "|"); split(mm(rt, n), rr, "|")
          m1 = med(a1, n); m2 = med(a2, n); mr = med(rt, n)
          pn = np ? sprintf("%.1f → %.1f", med(p1, np), med(p2, np)) : "-"
          bn = nb && ft ? sprintf("%.0f%%", med(bb, nb)) : "-"
          bu = nb ? sprintf("%.1f (%.1f)", med(bc, nb), med(bp, nb)) : "-"
          printf "| %s | %.0f (%.0f–%.0f) | %.0f (%.0f–%.0f) | %s%.2f%s (%.2f–%.2f) | ≥ %.2f× %s | %.1f → %.1f | %s | %s | %s |\n", name[j], m1, r1[1], r1[2], m2, r2[1], r2[2],
            (mr >= goal[j] ? "**" : ""), mr, (mr >= goal[j] ? "**" : ""), rr[1], rr[2], goal[j], (mr >= goal[j] ? "met on the median" : "**not met**"), med(c1, n), med(c2, n), pn, bn, bu
        }
      }' "$PO/results.txt" 2>/dev/null
    echo
    echo "Guest B busy: its busy jiffies over each 2-copy job (between guest A's job marks, polled every 0.2 s) as a share of"
    echo "the fio runtime; near 100% means guest B's one vCPU (the replica) limits the 2-copy runs, not guest A."
    echo "Guest B over the runs (from n2's start to their end): busy $(val replperf.n2.busy_j) jiffies, of which rdmablkd n2 $(val replperf.n2.proc_j)."
    if [ -s "$PO/host-cpu.txt" ]; then
      echo
      echo "Host CPU over each job (test/lab/hostsample.sh: the busy and steal time of all $(nproc) of the host's CPUs as a share of them,"
      echo "medians (min–max) over the rounds). Both guests' vCPUs, QEMU's own threads and the bridge between the guests count: near 100 % busy"
      echo "means the host, not either guest, set the pace of that job."
      echo
      echo "| job | host busy %, 1 copy | host busy %, 2 copies | host steal %, 1 copy | host steal %, 2 copies |"
      echo "| --- | --- | --- | --- | --- |"
      # AWK_CELL: the lines of host-cpu.txt whose key matches pat, by "VOL.JOB.MEASURE"; cell(key)
      # is their median (min–max); jobs[] and name[] the two jobs.
      AWK_CELL='function cell(key,   n, i, a, lo, hi) { n = cnt[key]; if (n == 0) return "-"
          for (i = 1; i <= n; i++) a[i] = val[key, i]; lo = hi = a[1]
          for (i = 2; i <= n; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
          return sprintf("%d (%d–%d)", med(a, n), lo, hi) }
        BEGIN { name["rw32"] = "4 KiB randwrite QD32 ×2 jobs"; name["rr32"] = "4 KiB randread QD32 ×2 jobs"; split("rw32 rr32", jobs, " ") }
        $1 ~ pat { split($1, k, "."); key = k[2] "." k[3] "." k[5]; val[key, ++cnt[key]] = $2 }
'
      awk -v pat='^replperf\.r[12]\.(rw32|rr32)\.r[0-9]+\.host_(busy|steal)_pct$' "$AWK_MED$AWK_CELL"'
        END {
          for (ji = 1; ji <= 2; ji++) { j = jobs[ji]
            printf "| %s | %s | %s | %s | %s |\n", name[j], cell("r1." j ".host_busy_pct"), cell("r2." j ".host_busy_pct"), cell("r1." j ".host_steal_pct"), cell("r2." j ".host_steal_pct") }
        }' "$PO/host-cpu.txt"
      if grep -q 'vcpu_a_pct' "$PO/host-cpu.txt"; then
        echo
        echo "The guests' vCPU threads over each job (hostsample.sh): the share of the job's wall time each ran on a host CPU, and how"
        echo "often per second the host took the CPU from it while it could run; medians (min–max). Guest A counts the time its vCPU"
        echo "thread waits as time of whatever it was running, so guest A's CPU per I/O above includes that wait."
        if grep -q '^pin 1' "$PO/host-cpu.txt"; then
          echo "PIN=1: guest A's vCPU thread ran alone on host CPU 0, every other thread of both QEMUs on the other CPU(s) (the guests do not take each other's CPU, as separate machines would not; other host processes were not moved)."
        else
          echo "Not pinned (PIN=1 pins guest A's vCPU thread alone on host CPU 0): the guests' threads share both host CPUs."
        fi
        echo
        echo "| job | guest A vCPU ran %, 1 copy | 2 copies | guest A preempted /s, 1 copy | 2 copies | guest B vCPU ran %, 2 copies |"
        echo "| --- | --- | --- | --- | --- | --- |"
        awk -v pat='^replperf\.r[12]\.(rw32|rr32)\.r[0-9]+\.vcpu_[ab]_(pct|preempt)$' "$AWK_MED$AWK_CELL"'
          END {
            for (ji = 1; ji <= 2; ji++) { j = jobs[ji]
              printf "| %s | %s | %s | %s | %s | %s |\n", name[j], cell("r1." j ".vcpu_a_pct"), cell("r2." j ".vcpu_a_pct"), cell("r1." j ".vcpu_a_preempt"), cell("r2." j ".vcpu_a_preempt"), cell("r2." j ".vcpu_b_pct") }
          }' "$PO/host-cpu.txt"
      fi
    fi
    if grep -q '^replperf\.r[12]\.rw32\.r[0-9]*\.net ' "$PO/results.txt" 2>/dev/null; then
      echo
      echo "Guest A's network per I/O over each job (eth0, which carries only the leg's NVMe/TCP and the cluster's raft: the load"
      echo "reaches n1 over rxe on the guest's own address), and its interrupts per I/O (all sources); medians over the rounds."
      echo
      echo "| job | packets sent / I/O, 1 → 2 copies | received / I/O | interrupts / I/O |"
      echo "| --- | --- | --- | --- |"
      awk "$AWK_MED"'
        $1 ~ /^replperf\.r[12]\.(rw32|rr32)\.r[0-9]+\.ios$/ { split($1, k, "."); ios[k[2] "." k[3] "." k[4]] = $2 }
        $1 ~ /^replperf\.r[12]\.(rw32|rr32)\.r[0-9]+\.net$/ { split($1, k, "."); id = k[2] "." k[3] "." k[4]; tx[id] = $2; rx[id] = $3; irq[id] = $4 }
        END {
          name["rw32"] = "4 KiB randwrite QD32 ×2 jobs"; name["rr32"] = "4 KiB randread QD32 ×2 jobs"
          split("rw32 rr32", jobs, " ")
          for (ji = 1; ji <= 2; ji++) { j = jobs[ji]; line = "| " name[j]
            for (f = 1; f <= 3; f++) { cellv = ""
              for (v = 1; v <= 2; v++) { n = 0
                for (id in ios) { split(id, k, "."); if (k[1] != "r" v || k[2] != j || !(id in tx) || ios[id] == 0) continue
                  a[++n] = (f == 1 ? tx[id] : f == 2 ? rx[id] : irq[id]) / ios[id] }
                cellv = cellv (v == 2 ? " → " : "") (n ? sprintf("%.2f", med(a, n)) : "-") }
              line = line " | " cellv }
            print line " |" }
        }' "$PO/results.txt"
    fi
    if [ "$(val replperf.pprof)" != off ]; then
      echo "CPU profiles (lab.pprof, both nodes under the Go CPU profiler for the whole run): \`$PO/rdmablkd-n1.pprof\`, \`rdmablkd-n2.pprof\`."
    else
      echo "Both nodes ran without the Go CPU profiler (\`LABARGS=lab.pprof=1\` profiles them)."
    fi
    fails=$(grep -h '^FAIL:' "$PO"/replperf-*.log 2>/dev/null)
    if [ -n "$fails" ]; then echo; echo "Guest failures:"; echo; echo '```'; echo "$fails"; echo '```'; fi
    insn_section "$PO" "guest A (node n1 and the load; the configurations are the volumes, r1 one copy, r2 two)"
  fi
  if [[ " $SCENARIOS " == *" netns "* ]]; then
    echo
    echo "## Namespace-isolated queue pairs (RDMA netns exclusive, kernel $(val netns.kernel))"
    echo
    echo "RDMA devices seen from the tenant namespace: $(val netns.tenant_devices); from a namespace without one: $(o=$(val netns.other_devices); echo "${o:-none}")."
    echo "rdmablk identify exit code from the namespace without a device: $(val netns.other_identify_rc) (must fail);"
    echo "from the tenant namespace: $(val netns.tenant_identify_rc); fio crc32c verify through the attached device: err=$(val netns.fio.err)."
    [ -n "$(val netns.init_udp4791)" ] && echo "UDP 4791 (RoCE v2) sockets: init_net $(val netns.init_udp4791), tenant $(val netns.tenant_udp4791)."
  fi
  if [[ " $SCENARIOS " == *" tcp "* ]]; then
    echo
    echo "## NVMe/TCP: the kernel nvme-tcp host against rdmablkd's \`transport: tcp\` listeners (loopback, one guest)"
    echo
    echo "Discovery over TCP on 8009: $(val tcp.discover); connect $(val tcp.connect_s) s; \`nvme list\` shows the namespace: $(val tcp.list);"
    echo "reconnect with --hdr-digest --data-digest: $(val tcp.digest.connect)."
    echo
    echo "| job | IOPS | clat avg / p99 (us) | fio err |"
    echo "| --- | --- | --- | --- |"
    for j in randread.qd16 randread.qd32 randwrite.qd16 randwrite.qd32 verify digest.randread.qd32 digest.verify; do
      echo "| $j | $(val tcp.$j.iops) | $(val tcp.$j.clat_avg_us) / $(val tcp.$j.clat_p99_us) | $(val tcp.$j.err) |"
    done
    echo
    echo "Side by side with the kernel's nvmet-tcp in the same boot (same guest, brd for both, ${ROUNDS} rounds,"
    echo "rdmablkd first in odd rounds, nvmet first in even ones; median (min–max); host and targets share one vCPU):"
    echo
    echo "| job | rdmablkd IOPS | nvmet-tcp IOPS | ours / kernel (paired range) | fio err ours / kernel |"
    echo "| --- | --- | --- | --- | --- |"
    for j in randread.qd32 randwrite.qd32; do
      o=(); k=(); pr=(); oe=(); ke=()
      for r in $(seq "$ROUNDS"); do
        a=$(val tcpside.ours.$j.r$r.iops); b=$(val tcpside.kernel.$j.r$r.iops)
        [ -n "$a" ] && o+=("$a"); [ -n "$b" ] && k+=("$b")
        [ -n "$a" ] && [ -n "$b" ] && pr+=("$(ratio "$a" "$b")")
        oe+=("$(val tcpside.ours.$j.r$r.err)"); ke+=("$(val tcpside.kernel.$j.r$r.err)")
      done
      mo=$(medrange "${o[@]}"); mk=$(medrange "${k[@]}")
      echo "| $j | $mo | $mk | $(ratio "${mo%% *}" "${mk%% *}") ($(minmax "${pr[@]}")) | ${oe[*]} / ${ke[*]} |"
    done
    echo
    echo "Our initiator over NVMe/TCP (\`rdmablk -t tcp\`): discover from nvmet-tcp $(val tcp.init.discover); 64 MiB"
    echo "write/read/cmp against nvmet-tcp: plain $(val tcp.init.kernel.plain.verify), with header and data digests"
    echo "$(val tcp.init.kernel.digests.verify). \`rdmablk bench\` 4 KiB QD32, one job, ${FT} s (one round):"
    echo
    echo "| job | vs nvmet-tcp IOPS (errors) | vs rdmablkd IOPS (errors) |"
    echo "| --- | --- | --- |"
    for rw in randread randwrite; do
      echo "| $rw | $(val tcp.init.kernel.$rw.iops) ($(val tcp.init.kernel.$rw.errors)) | $(val tcp.init.ours.$rw.iops) ($(val tcp.init.ours.$rw.errors)) |"
    done
  fi
  if [[ " $SCENARIOS " == *" auth "* ]]; then
    echo
    echo "## DH-HMAC-CHAP against Linux (kernel $FE_KERNEL guest, one guest over rxe)"
    echo
    echo "Every RESULT of the scenario (scenario-auth.sh says what each is). The transcripts and nvme-cli"
    echo "vectors are in \`$SHARE/out/$RUN-auth/\` (copied to nvme/auth/testdata when committed):"
    echo
    echo '```'
    cat "$SHARE"/out/$RUN-auth/results.txt 2>/dev/null
    echo '```'
    echo
    echo "What the kernel logged for the refusals:"
    echo
    echo '```'
    for f in "$SHARE"/out/$RUN-auth/refused-*-dmesg.txt; do [ -f "$f" ] && { echo "# $(basename "$f" -dmesg.txt)"; cut -c1-160 "$f" | head -8; }; done
    echo '```'
  fi
  for s in ublk nbd; do
    [[ " $SCENARIOS " == *" $s "* ]] || continue
    echo
    echo "## Scenario $s: rdmablk connect --frontend $s (ext4, fio, SIGKILLs)"
    echo
    echo "Every RESULT of the scenario (scenario-$s.sh says what each is; its log is in \`$SHARE/out/$RUN-$s/\`):"
    echo
    echo '```'
    cat "$SHARE"/out/$RUN-$s/results.txt 2>/dev/null
    echo '```'
  done
  if [[ " $SCENARIOS " == *" verbstest "* ]]; then
    echo
    echo "## Scenario 5: verbs/verbstest under ibverbs on rxe0"
    echo
    echo '```'
    grep -E '^ *--- FAIL|^(--- |ok|PASS|FAIL|run-gobin)' "$SHARE/out/$RUN-verbstest.txt" 2>/dev/null | head -60
    echo '```'
  fi
} > "$RESULTS"
echo "== results: $RESULTS"
for s in $SCENARIOS; do [ "${RC[$s]:-1}" = 0 ] || exit 1; done
