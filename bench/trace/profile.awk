# SPDX-License-Identifier: GPL-2.0-only
#
# profile.awk - vsm-profile's lines from the trace suite as two markdown tables: CPU time per
# MiB moved by task, and by task and kernel function (the union of each mode's TOP heaviest),
# one column per relay mode.
#
#   awk -v kernel=K -v bytes=SIZE -f bench/trace/profile.awk FILE
#
# FILE: "PROFILE MODE TASK FUNCTION SAMPLES MS_PER_MIB" and "TRACE MODE mbps N -" lines.

BEGIN {
	TOP = 12
}

$1 == "TRACE" && $3 == "mbps" {
	mbps[$2] = $4
	next
}

$1 != "PROFILE" {
	next
}

{
	mode = $2
	if (!(mode in seen_mode)) {
		seen_mode[mode] = 1
		modes[++nmodes] = mode
	}
	if ($4 == "*total*") {
		if (!($3 in seen_task)) {
			seen_task[$3] = 1
			tasks[++ntasks] = $3
		}
		task_ms[$3, mode] = $6
		next
	}
	key = $3 ": " $4
	func_ms[key, mode] = $6
	# Rows come most samples first: the first TOP of a mode are its heaviest.
	if (++rank[mode] <= TOP && !(key in seen_func)) {
		seen_func[key] = 1
		funcs[++nfuncs] = key
	}
}

function header(first, i)
{
	printf "| %s |", first
	for (i = 1; i <= nmodes; i++)
		printf " %s |", modes[i]
	printf "\n|---|"
	for (i = 1; i <= nmodes; i++)
		printf "---:|"
	printf "\n"
}

function cell(v)
{
	return v == "" ? "–" : sprintf("%.2f", v)
}

# row(KEY, MS): one table row, MS[KEY, mode] for each mode.
function row(key, ms, i)
{
	printf "| %s |", key
	for (i = 1; i <= nmodes; i++)
		printf " %s |", cell(ms[key, modes[i]])
	printf "\n"
}

END {
	printf "CPU time per MiB moved, milliseconds (vsm-profile, 999 Hz on every CPU), %s, %s per run\n\n", kernel, bytes
	header("task")
	for (t = 1; t <= ntasks; t++)
		row(tasks[t], task_ms)
	printf "| MB/s under the profiler |"
	for (i = 1; i <= nmodes; i++)
		printf " %s |", mbps[modes[i]] == "" ? "–" : mbps[modes[i]]
	printf "\n\nThe heaviest functions (each mode's %d first), milliseconds per MiB\n\n", TOP
	header("task: function")
	for (f = 1; f <= nfuncs; f++)
		row(funcs[f], func_ms)
}
