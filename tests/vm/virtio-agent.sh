#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# virtio-agent.sh - the host end of the virtio tier's peers (tests/vm/run.sh --virtio).
#
# socat runs it, under tests/tools/vsm-novsock, for each connection the guest makes to CID 2
# port VIRTIO_AGENT_PORT (the backend connects that to the unix socket ${VIRTIO_UDS}_PORT).
# It reads one request line and answers on stdout; only vsm-peer, vsm-bench's servers and
# vsm-soak's server end are ever run, and their arguments are passed as words, never through a shell:
#
#   server NAME PORT ARG...  vsm-peer server unix:${VIRTIO_UDS}_PORT ARG..., in the background;
#                            answers "ready" once it listens, or "failed ..."
#   bench NAME PORT CMD ARG...  the same with vsm-bench CMD (sink, serve or pingpong-server):
#                            make bench's virtio part (bench/lib.sh)
#   soak NAME PORT ARG...    vsm-soak --role server --listen unix:${VIRTIO_UDS}_PORT ARG...,
#                            the server ends of a soak whose clients run in the guest
#                            (tests/vm/suite-virtio-soak.sh); answers as server
#   client NAME PORT ARG...  vsm-peer client hybrid:${VIRTIO_UDS}:PORT ARG... (the guest's
#                            vsock PORT), in the background; answers "started"
#   wait NAME [SEC]          waits up to SEC (default 300) for NAME to end; answers with its
#                            output, then "rc=N" (rc=124 if it is still running)
#
# Environment: VIRTIO_UDS, VIRTIO_DIR (the peers' output files), VSM_PEER, VSM_BENCH, VSM_SOAK.
set -uo pipefail
shopt -s extglob

read -r verb name rest || exit 0
[[ $name =~ ^[A-Za-z0-9_.@-]+$ ]] || { echo "failed: bad name '$name'"; exit 0; }
base=$VIRTIO_DIR/peer-$name

# start PROGRAM ARG...: PROGRAM in its own session, its status in $base.rc when it ends.
start() {
	rm -f "$base.rc" "$base.ready"
	# shellcheck disable=SC2016 # the inner shell expands them
	setsid bash -c '"$@" >"$0.out" 2>&1; echo $? >"$0.rc.tmp"; mv "$0.rc.tmp" "$0.rc"' \
		"$base" "$@" </dev/null >/dev/null 2>&1 &
	echo $! >"$base.pid"
}

# answer_ready: "ready" once the server started by start wrote its ready file (10 s at most),
# or "failed" with the end of its output.
answer_ready() {
	for _ in $(seq 100); do
		[[ -e $base.ready ]] && { echo ready; exit 0; }
		[[ -e $base.rc ]] && break
		sleep 0.1
	done
	echo "failed: $(tail -n 2 "$base.out" 2>/dev/null | tr '\n' ' ')"
}

case $verb in
server)
	read -r port words <<<"$rest"
	[[ $port =~ ^[0-9]+$ ]] || { echo "failed: bad port '$port'"; exit 0; }
	read -ra args <<<"$words"
	start "$VSM_PEER" server "unix:${VIRTIO_UDS}_$port" --ready-file "$base.ready" "${args[@]}"
	answer_ready
	;;
bench)
	read -r port cmd words <<<"$rest"
	[[ $port =~ ^[0-9]+$ ]] || { echo "failed: bad port '$port'"; exit 0; }
	[[ $cmd == @(sink|serve|pingpong-server) ]] || { echo "failed: not a vsm-bench server: '$cmd'"; exit 0; }
	read -ra args <<<"$words"
	start "$VSM_BENCH" "$cmd" "unix:${VIRTIO_UDS}_$port" --ready-file "$base.ready" "${args[@]}"
	answer_ready
	;;
soak)
	read -r port words <<<"$rest"
	[[ $port =~ ^[0-9]+$ ]] || { echo "failed: bad port '$port'"; exit 0; }
	read -ra args <<<"$words"
	start "$VSM_SOAK" --role server --listen "unix:${VIRTIO_UDS}_$port" --ready-file "$base.ready" \
		"${args[@]}"
	answer_ready
	;;
client)
	read -r port words <<<"$rest"
	[[ $port =~ ^[0-9]+$ ]] || { echo "failed: bad port '$port'"; exit 0; }
	read -ra args <<<"$words"
	start "$VSM_PEER" client "hybrid:$VIRTIO_UDS:$port" "${args[@]}"
	echo started
	;;
wait)
	secs=${rest:-300}
	[[ $secs =~ ^[0-9]+$ ]] || secs=300
	for _ in $(seq $((secs * 10))); do
		[[ -e $base.rc ]] && break
		sleep 0.1
	done
	cat "$base.out" 2>/dev/null
	echo "rc=$(cat "$base.rc" 2>/dev/null || echo 124)"
	;;
*)
	echo "failed: unknown request '$verb'"
	;;
esac
