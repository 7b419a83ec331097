# SPDX-License-Identifier: GPL-2.0-only
#
# table.awk - vsm-trace's "TRACE MODE NAME TOTAL PER_MIB" lines (bench/trace/run.sh) as one
# markdown table: a column per relay mode, a row per cost, per MiB moved unless it says.
# Variables: kernel, bytes (the stream's size, as given).

$1 == "TRACE" {
	mode = $2
	if (!(mode in seen)) {
		seen[mode] = 1
		order[++nmodes] = mode
	}
	total[mode, $3] = $4
	per[mode, $3] = $5
	if ($3 ~ /^vsock_data_size_/)
		sizes[mode] = sizes[mode] sprintf(" %s:%d", substr($3, 17), $4)
}

function p(mode, name) { return (mode, name) in per ? per[mode, name] + 0 : 0 }
function t(mode, name) { return (mode, name) in total ? total[mode, name] + 0 : 0 }
function sum_per(mode, prefix, suffix,   k, s, parts) {
	s = 0
	for (k in per) {
		split(k, parts, SUBSEP)
		if (parts[1] == mode && index(parts[2], prefix) == 1 &&
		    substr(parts[2], length(parts[2]) - length(suffix) + 1) == suffix)
			s += per[k]
	}
	return s
}
function fmt(v) {
	if (v == 0)
		return "0"
	if (v >= 100)
		return sprintf("%.0f", v)
	if (v >= 10)
		return sprintf("%.1f", v)
	return sprintf("%.2f", v)
}
function row(label, expr,   i, line) {
	line = "| " label
	for (i = 1; i <= nmodes; i++)
		line = line " | " value(order[i], expr)
	print line " |"
}
function value(m, e,   n) {
	if (e == "mbps") return t(m, "mbps") ? fmt(t(m, "mbps")) : "-"
	if (e == "pkt_size") return t(m, "vsock_data_pkts") ? fmt(t(m, "vsock_data_bytes") / t(m, "vsock_data_pkts")) : "-"
	if (e == "retry_ms") return fmt(p(m, "retry_sleep_us") / 1000)
	if (e == "retry_mean") return t(m, "retries_waited") ? fmt(t(m, "retry_sleep_us") / t(m, "retries_waited")) : "-"
	if (e == "vsock_send_worker") return fmt(p(m, "sendmsg_vsock_worker_calls"))
	if (e == "vsock_send_daemon") return fmt(p(m, "sendmsg_vsock_daemon_calls"))
	if (e == "vsock_send_other") return fmt(p(m, "sendmsg_vsock_other_calls"))
	if (e == "unix_send") return fmt(sum_per(m, "sendmsg_unix_", "_calls"))
	if (e == "copy_into") return fmt(sum_per(m, "copy_into_skb_", "_bytes") / 1048576)
	if (e == "copy_out") return fmt(sum_per(m, "copy_out_of_skb_", "_bytes") / 1048576)
	if (e == "copies") return fmt((sum_per(m, "copy_into_skb_", "_bytes") + sum_per(m, "copy_out_of_skb_", "_bytes")) / 1048576)
	if (e == "daemon_share") return fmt(p(m, "sendmsg_vsock_daemon_bytes") / 1048576)
	if (e == "copy_daemon") return fmt((p(m, "copy_into_skb_daemon_bytes") + p(m, "copy_out_of_skb_daemon_bytes")) / 1048576)
	if (e == "missed") return fmt(t(m, "missed_runs"))
	if (e == "worker_ms") return fmt(p(m, "worker_us") / 1000)
	if (e == "sizes") { n = sizes[m]; return n == "" ? "-" : substr(n, 2) }
	return fmt(p(m, e))
}

END {
	printf "Kernel %s, one unix stream of %s to a vsock sink on CID 1; per MiB moved unless said.\n\n", kernel, bytes
	line = "| | "
	sep = "|---|"
	for (i = 1; i <= nmodes; i++) {
		line = line order[i] (i < nmodes ? " | " : " |")
		sep = sep "---|"
	}
	print line
	print sep
	row("MB/s under the tracer", "mbps")
	row("vsock data packets", "vsock_data_pkts")
	row("mean data packet, bytes", "pkt_size")
	row("vsock control packets", "vsock_ctrl_pkts")
	row("psock worker runs", "worker_runs")
	row("time in the worker, ms", "worker_ms")
	row("delayed retries queued (-EAGAIN)", "retry_queued")
	row("jiffies asked by them", "retry_jiffies")
	row("time slept by them, ms", "retry_ms")
	row("one retry's sleep, us (mean)", "retry_mean")
	row("worker kicked at once (delay 0)", "kick_queued")
	row("kicks lost: work already pending", "kick_pending")
	row("sk_psock_write_space calls", "write_space_calls")
	row("vsock sendmsg, by the worker", "vsock_send_worker")
	row("vsock sendmsg, by the daemon", "vsock_send_daemon")
	row("bytes offered to vsock by the daemon, per byte", "daemon_share")
	row("vsock sendmsg, by others", "vsock_send_other")
	row("unix sendmsg, all callers", "unix_send")
	row("copies into skbs (skb_copy_datagram_from_iter), per byte", "copy_into")
	row("copies out of skbs (skb_copy_datagram_iter), per byte", "copy_out")
	row("of these two, by the daemon", "copy_daemon")
	row("copies of each byte, all", "copies")
	row("CPU busy ticks (USER_HZ)", "cpu_busy_ticks")
	row("CPU idle ticks", "cpu_idle_ticks")
	row("tracer runs the kernel skipped (whole run)", "missed")
	row("vsock data packet sizes (2^k: count, total)", "sizes")
}
