# SPDX-License-Identifier: GPL-2.0-only
#
# bench/report.awk - the tables of `make bench` from its raw results (one flat JSON object per
# line, as bench/lib.sh writes them). Prints the tables on stdout and writes
#   summary=FILE     one JSON object per scenario, mode and metric (medians, spreads, ratios)
#   plotdata=DIR     throughput.dat and cpu.dat for bench/plot.gp
# Any awk (mawk, gawk, busybox): no gawk extensions.

function parse(line, rest, kv, p, k, v)
{
	split("", F)
	rest = line
	while (match(rest, /"[A-Za-z0-9_]+":("[^"]*"|[-0-9.eE+]+|true|false|null)/)) {
		kv = substr(rest, RSTART, RLENGTH)
		rest = substr(rest, RSTART + RLENGTH)
		p = index(kv, "\":")
		k = substr(kv, 2, p - 2)
		v = substr(kv, p + 2)
		if (v ~ /^"/)
			v = substr(v, 2, length(v) - 2)
		F[k] = v
	}
}

# add(list, key, value): append to a space-separated list held in list[key]
function add(arr, key, value)
{
	arr[key] = (key in arr) ? arr[key] " " value : value
}

# stat(list): sets S_N, S_MED, S_MIN, S_MAX of a space-separated list of numbers
function stat(list, v, n, i, j, t)
{
	n = split(list, v, " ")
	for (i = 2; i <= n; i++) {
		t = v[i] + 0
		for (j = i - 1; j >= 1 && v[j] + 0 > t; j--)
			v[j + 1] = v[j]
		v[j + 1] = t
	}
	S_N = n
	if (n == 0) {
		S_MED = S_MIN = S_MAX = ""
		return
	}
	S_MIN = v[1] + 0
	S_MAX = v[n] + 0
	S_MED = (n % 2) ? v[(n + 1) / 2] + 0 : (v[n / 2] + v[n / 2 + 1]) / 2
}

function num(x)
{
	if (x == "")
		return "-"
	if (x >= 100)
		return sprintf("%.0f", x)
	if (x >= 10)
		return sprintf("%.1f", x)
	return sprintf("%.2f", x)
}

function ratio(a, b)
{
	return (a == "" || b == "" || b + 0 == 0) ? "" : a / b
}

function rfmt(r)
{
	return r == "" ? "-" : sprintf("%.2f", r)
}

function label(part, scen, l)
{
	l = scen
	gsub(/-x8$/, " x8", l)
	sub(/-/, "->", l)
	return part " " l
}

function jnum(x)
{
	return x == "" ? "null" : sprintf("%.4g", x)
}

function jstr(s)
{
	gsub(/["\\]/, "", s)
	return "\"" s "\""
}

BEGIN {
	nmodes = split("direct socat socat-b64k proxyd vsockmapd vsockmapd-permanent vsockmapd-relay", MODES, " ")
	for (i = 1; i <= nmodes; i++)
		MODE_INDEX[MODES[i]] = i
	MODE_TITLE["direct"] = "direct"
	MODE_TITLE["socat"] = "socat"
	MODE_TITLE["socat-b64k"] = "socat -b 65536"
	MODE_TITLE["proxyd"] = "systemd-socket-proxyd"
	MODE_TITLE["vsockmapd"] = "vsockmapd (kernel)"
	MODE_TITLE["vsockmapd-permanent"] = "vsockmapd (fastpath=permanent)"
	MODE_TITLE["vsockmapd-relay"] = "vsockmapd (user relay)"
	split("#8c8c8c #e69f00 #b07800 #56b4e9 #009e73 #0072b2 #cc79a7", colors, " ")
	for (i = 1; i <= nmodes; i++)
		MODE_COLOR[MODES[i]] = colors[i]
}

{
	parse($0)
	metric = F["metric"]
	if (metric == "machine" && F["part"] ~ /^(vm|virtio)/ && !(F["part"] in vm_kernel)) {
		vm_kernel[F["part"]] = F["kernel"]
		if (F["cpus"] != "" && F["cpus"] != 1)
			vm_kernel[F["part"]] = vm_kernel[F["part"]] " (" F["cpus"] " vCPUs)"
		vm_parts[++nvm_parts] = F["part"]
	}
	# Which measured row the default (no datapath=) is, per part and target kind.
	if (metric == "default") {
		dk = F["part"] " " F["target"]
		if (!(dk in default_seen)) {
			default_seen[dk] = 1
			default_line[++ndefault] = sprintf("  %-24s %s (%s)", dk, F["same_as"] == "" ? "unknown" : "the " MODE_TITLE[F["same_as"]] " rows", F["reason"])
		}
		next
	}
	if (metric == "backend") {
		backend_line = sprintf("%s (Debian package %s), tx-buffer-size %s", F["backend"], F["backend_package"], F["tx_buffer_size"])
		next
	}
	if (F["scenario"] == "" || metric == "" || F["mode"] == "")
		next
	key = F["part"] SUBSEP F["scenario"]
	if (!(key SUBSEP metric in seen_metric)) {
		seen_metric[key SUBSEP metric] = 1
		order[metric, ++norder[metric]] = key
	}
	k = key SUBSEP F["mode"] SUBSEP metric
	present[k] = 1
	if (F["status"] == "n/a") {
		na[k] = F["reason"]
		next
	}
	nruns[k]++
	if (F["status"] != "ok" && metric != "memory") {
		nfail[k]++
		if (!(k in why))
			why[k] = F["reason"]
		# Wrong bytes from our own path (or no relay at all) fail `make bench`.
		if ((F["mode"] == "direct" || F["mode"] ~ /^vsockmapd/) && F["reason"] ~ /^verify=/)
			own_failures++
		next
	}
	if (metric == "throughput") {
		add(mbps, k, F["mbps"])
		if ("cpu_s_per_gb" in F)
			add(cpu, k, F["cpu_s_per_gb"])
	} else if (metric == "latency") {
		add(p50, k, F["p50_us"])
		add(p99, k, F["p99_us"])
	} else if (metric == "connrate") {
		add(cps, k, F["conns_per_s"])
	} else if (metric == "memory") {
		mk = key SUBSEP F["requested"]
		if (!(mk in mem_seen)) {
			mem_seen[mk] = 1
			mem_order[++nmem] = mk
		}
		mem_status[mk, F["mode"]] = F["status"]
		mem_reason[mk, F["mode"]] = F["reason"]
		mem_est[mk, F["mode"]] = F["established"]
		mem_rss0[mk, F["mode"]] = F["rss_before_kb"]
		mem_rss1[mk, F["mode"]] = F["rss_after_kb"]
		mem_rssc[mk, F["mode"]] = F["rss_per_conn_kb"]
		mem_slab0[mk, F["mode"]] = F["slab_before_kb"]
		mem_slab1[mk, F["mode"]] = F["slab_after_kb"]
		mem_slabc[mk, F["mode"]] = F["slab_per_conn_kb"]
		mem_nofile[mk, F["mode"]] = F["nofile"]
		mem_setup[mk, F["mode"]] = F["seconds"]
		mem_td[mk, F["mode"]] = F["teardown_s"]
		mem_tdok[mk, F["mode"]] = F["teardown_done"]
		mem_tdcpu[mk, F["mode"]] = F["teardown_daemon_cpu_s"]
		mem_idle[mk, F["mode"]] = F["idle_cpu_pct"]
		mem_idles[mk, F["mode"]] = F["idle_s"]
		mem_sweep[mk, F["mode"]] = F["sweep_cpu_pct"]
		mem_q50[mk, F["mode"]] = F["quiet_p50_us"]
		mem_q99[mk, F["mode"]] = F["quiet_p99_us"]
		mem_f50[mk, F["mode"]] = F["flood_p50_us"]
		mem_f99[mk, F["mode"]] = F["flood_p99_us"]
		mem_fmax[mk, F["mode"]] = F["flood_max_us"]
		mem_freq[mk, F["mode"]] = F["flood_requests"]
	}
}

# seed_rows(fmt, key): the seed's own figures beside the virtio datagram rows (64 KiB unix
# datagrams to a host server, on real virtio hardware; not measured here), and the same ratio
# of ours: vsockmapd against socat -b 65536 (default socat truncates 64 KiB datagrams).
function seed_rows(fmt, key, sb, m, mode, r)
{
	printf fmt, "", "seed: socat (real hardware)", "76.3", "-", "1.00", "-", "-", "the seed's figure, not measured here"
	printf fmt, "", "seed: sockmap (real hardware)", "168.8", "-", "2.21", "-", "-", "the seed's figure, not measured here"
	summary_line("{\"part\":\"virtio\",\"scenario\":\"dgram-vsock\",\"mode\":\"seed-socat\",\"metric\":\"throughput\",\"mbps_median\":76.3,\"ratio_socat\":1,\"note\":\"the seed figure, real virtio hardware, not measured here\"}")
	summary_line("{\"part\":\"virtio\",\"scenario\":\"dgram-vsock\",\"mode\":\"seed-sockmap\",\"metric\":\"throughput\",\"mbps_median\":168.8,\"ratio_socat\":2.21,\"note\":\"the seed figure, real virtio hardware, not measured here\"}")
	sb = median_of(mbps, key SUBSEP "socat-b64k" SUBSEP "throughput")
	if (sb == "")
		return
	printf "%-20s here against socat -b 65536 (the seed: 2.21x):", ""
	for (m = 1; m <= nmodes; m++) {
		mode = MODES[m]
		if (mode !~ /^vsockmapd/)
			continue
		r = ratio(median_of(mbps, key SUBSEP mode SUBSEP "throughput"), sb)
		if (r != "")
			printf " %s %.2fx;", MODE_TITLE[mode], r
	}
	printf "\n"
}

# median(list, key): the median of arr[key], or "" when there is none
function median_of(arr, key)
{
	if (!(key in arr))
		return ""
	stat(arr[key])
	return S_MED
}

function summary_line(s)
{
	if (summary != "")
		print s > summary
}

function note(k, n)
{
	if (k in na)
		return "n/a: " na[k]
	if (k in nfail)
		return nfail[k] " of " nruns[k] " rounds failed: " why[k]
	return ""
}

# plot_file(name, values, used, var): a data file with the modes that have a value at all,
# and their colours for bench/plot.gp
# noref[o]: the reference mode (refname) has no figure in scenario o.
function plot_file(name, vals, used, var, noref, refname, f, hdr, row, o, m, n, k, colors)
{
	f = plotdata "/" name ".dat"
	hdr = "scenario"
	colors = ""
	n = 0
	for (m = 1; m <= nmodes; m++)
		if (m in used) {
			hdr = hdr " \"" MODE_TITLE[MODES[m]] "\""
			colors = colors " " MODE_COLOR[MODES[m]]
			n++
		}
	print hdr > f
	for (o = 1; o <= norder["throughput"]; o++) {
		row = "\"" plot_label[o] "\""
		for (m = 1; m <= nmodes; m++)
			if (m in used)
				row = row " " (((o, m) in vals) ? vals[o, m] : "-")
		print row > f
	}
	close(f)
	printf "%s_cols = %d\n%s_colors = \"%s\"\n", var, n, var, substr(colors, 2) > (plotdata "/plot.inc")
	# Say on the chart why a bar or a whole reference is missing.
	f = plotdata "/labels-" var ".gp"
	printf "" > f
	for (o = 1; o <= norder["throughput"]; o++) {
		if (noref[o])
			printf "set label \"no %s figure here:\\nit failed every round\" at %d, 0.55 center font \",10\" tc rgb \"#a00000\"\n", refname, o - 1 > f
		k = 0
		for (m = 1; m <= nmodes; m++) {
			if (!(m in used))
				continue
			k++
			if (((o, m) in plot_fail) && !noref[o])
				printf "set label \"%s: %s\" at bar_x(%d, %d, %d), 0.04 left rotate by 90 font \",8\" tc rgb \"#a00000\"\n", MODE_TITLE[MODES[m]], plot_fail[o, m], o - 1, k, n > f
		}
	}
	close(f)
}

function write_plotdata()
{
	system("mkdir -p '" plotdata "'")
	printf "" > (plotdata "/plot.inc")
	plot_file("throughput", plot_t, plot_t_used, "t", plot_noref_t, "direct")
	plot_file("cpu", plot_c, plot_c_used, "c", plot_noref_c, "socat")
	close(plotdata "/plot.inc")
}

END {
	if (summary != "")
		printf "" > summary
	# ---- throughput -------------------------------------------------------------------
	print "Throughput: MB/s (10^6 bytes/s) at the receiver, bytes verified; median (min-max) of"
	print "the rounds. CPU s/GB: busy CPU-seconds of the whole machine (/proc/stat: user nice system"
	print "irq softirq steal) per GB moved. x direct / x socat: ratio of medians (CPU: to socat's)."
	print ""
	fmt = "%-20s %-30s %-20s %8s %8s %8s %8s  %s\n"
	printf fmt, "scenario", "mode", "MB/s", "x direct", "x socat", "CPU s/GB", "x socat", "runs / notes"
	for (o = 1; o <= norder["throughput"]; o++) {
		key = order["throughput", o]
		split(key, kp, SUBSEP)
		lab = label(kp[1], kp[2])
		d = median_of(mbps, key SUBSEP "direct" SUBSEP "throughput")
		s = median_of(mbps, key SUBSEP "socat" SUBSEP "throughput")
		sc = median_of(cpu, key SUBSEP "socat" SUBSEP "throughput")
		plot_label[o] = lab
		plot_noref_t[o] = d == ""
		plot_noref_c[o] = sc == ""
		for (m = 1; m <= nmodes; m++) {
			mode = MODES[m]
			k = key SUBSEP mode SUBSEP "throughput"
			if (!(k in present))
				continue
			if (k in mbps) {
				stat(mbps[k])
				n = S_N
				med = S_MED
				spread = num(S_MED) " (" num(S_MIN) "-" num(S_MAX) ")"
				c = median_of(cpu, k)
				rd = ratio(med, d)
				rs = ratio(med, s)
				rc = ratio(c, sc)
				nt = note(k)
				printf fmt, lab, MODE_TITLE[mode], spread, rfmt(rd), rfmt(rs), num(c), rfmt(rc), n " runs" (nt == "" ? "" : "; " nt)
				stat(mbps[k])
				summary_line(sprintf("{\"part\":%s,\"scenario\":%s,\"mode\":%s,\"metric\":\"throughput\",\"runs\":%d,\"failed\":%d,\"mbps_median\":%s,\"mbps_min\":%s,\"mbps_max\":%s,\"ratio_direct\":%s,\"ratio_socat\":%s,\"cpu_s_per_gb\":%s,\"cpu_ratio_socat\":%s}", jstr(kp[1]), jstr(kp[2]), jstr(mode), S_N, nfail[k], jnum(S_MED), jnum(S_MIN), jnum(S_MAX), jnum(rd), jnum(rs), jnum(c), jnum(rc)))
				if (rd != "" && mode != "direct") {
					plot_t[o, m] = sprintf("%.3f", rd)
					plot_t_used[m] = 1
				}
				if (rc != "" && mode != "socat") {
					plot_c[o, m] = sprintf("%.3f", rc)
					plot_c_used[m] = 1
				}
			} else {
				if (k in nfail)
					plot_fail[o, m] = why[k] ~ /truncates/ ? "truncates datagrams" : "failed"
				printf fmt, lab, MODE_TITLE[mode], "-", "-", "-", "-", "-", note(k)
				summary_line(sprintf("{\"part\":%s,\"scenario\":%s,\"mode\":%s,\"metric\":\"throughput\",\"runs\":0,\"failed\":%d,\"note\":%s}", jstr(kp[1]), jstr(kp[2]), jstr(mode), nfail[k], jstr(note(k))))
			}
			lab = ""
		}
		if (kp[1] == "virtio" && kp[2] == "dgram-vsock")
			seed_rows(fmt, key)
		print ""
	}
	if (backend_line != "")
		print "virtio backend: " backend_line
	if (ndefault) {
		print "The default (no datapath=), by part and target: the daemon's listener line says which path it takes:"
		for (i = 1; i <= ndefault; i++)
			print default_line[i]
		print ""
	}
	# The kernel path against the user relay, the comparison the kernel patches are for.
	if (nvm_parts) {
		printf "VM kernels:"
		for (i = 1; i <= nvm_parts; i++)
			printf " %s %s%s", vm_parts[i], vm_kernel[vm_parts[i]], i < nvm_parts ? ";" : "\n"
	}
	nrel = 0
	for (o = 1; o <= norder["throughput"]; o++) {
		key = order["throughput", o]
		split(key, kp, SUBSEP)
		kern = median_of(mbps, key SUBSEP "vsockmapd" SUBSEP "throughput")
		rel = median_of(mbps, key SUBSEP "vsockmapd-relay" SUBSEP "throughput")
		if (kern == "" || rel == "")
			continue
		if (!nrel++)
			print "vsockmapd (kernel) against vsockmapd (user relay), ratio of medians:"
		printf "  %-20s %.2f\n", label(kp[1], kp[2]), kern / rel
	}
	if (nrel)
		print ""
	if (plotdata != "")
		write_plotdata()

	# ---- latency and connection setup -------------------------------------------------
	print "Latency: 1-byte request/response round trips over one connection, microseconds (median"
	print "of the rounds' p50 and p99). Setup: short connections per second (connect, 1 byte each way,"
	print "close; several in flight), median (min-max)."
	print ""
	fmt2 = "%-20s %-30s %8s %8s %8s %20s %8s  %s\n"
	printf fmt2, "scenario", "mode", "p50 us", "p99 us", "x direct", "conn/s", "x socat", "notes"
	for (o = 1; o <= norder["latency"]; o++) {
		key = order["latency", o]
		split(key, kp, SUBSEP)
		lab = label(kp[1], kp[2])
		dl = median_of(p50, key SUBSEP "direct" SUBSEP "latency")
		sr = median_of(cps, key SUBSEP "socat" SUBSEP "connrate")
		for (m = 1; m <= nmodes; m++) {
			mode = MODES[m]
			kl = key SUBSEP mode SUBSEP "latency"
			kc = key SUBSEP mode SUBSEP "connrate"
			if (!(kl in present) && !(kc in present))
				continue
			if (!(kl in p50) && !(kc in cps)) {
				printf fmt2, lab, MODE_TITLE[mode], "-", "-", "-", "-", "-", note(kl)
				lab = ""
				continue
			}
			l50 = median_of(p50, kl)
			l99 = median_of(p99, kl)
			crs = "-"
			cr = ""
			if (kc in cps) {
				stat(cps[kc])
				cr = S_MED
				crs = num(S_MED) " (" num(S_MIN) "-" num(S_MAX) ")"
			}
			nt = note(kl)
			if (nt == "")
				nt = note(kc)
			printf fmt2, lab, MODE_TITLE[mode], num(l50), num(l99), rfmt(ratio(l50, dl)), crs, rfmt(ratio(cr, sr)), nt
			summary_line(sprintf("{\"part\":%s,\"scenario\":%s,\"mode\":%s,\"metric\":\"latency\",\"p50_us\":%s,\"p99_us\":%s,\"p50_ratio_direct\":%s,\"conns_per_s\":%s,\"conns_ratio_socat\":%s}", jstr(kp[1]), jstr(kp[2]), jstr(mode), jnum(l50), jnum(l99), jnum(ratio(l50, dl)), jnum(cr), jnum(ratio(cr, sr))))
			lab = ""
		}
		print ""
	}

	# ---- memory -------------------------------------------------------------------------
	if (nmem) {
		print "Memory with N idle connections held open (each proven by an echoed byte). direct: no"
		print "relay, the sockets of client and server alone. Daemon RSS (VmRSS) and kernel Slab"
		print "(/proc/meminfo), kB before -> with the connections (per connection); relay slab ="
		print "Slab per connection through the relay minus direct's. setup: seconds to open them all;"
		print "teardown: seconds until the daemon listed none after the clients closed."
		print ""
		fmt3 = "%-20s %-20s %6s %6s %7s %26s %26s %10s %9s  %s\n"
		printf fmt3, "scenario", "mode", "N", "open", "setup s", "daemon RSS kB (per conn)", "Slab kB (per conn)", "relay slab", "teardown", "notes"
		for (o = 1; o <= nmem; o++) {
			mk = mem_order[o]
			split(mk, kp, SUBSEP)
			lab = label(kp[1], kp[2])
			for (m = 1; m <= nmodes; m++) {
				mode = MODES[m]
				if (!((mk, mode) in mem_status))
					continue
				rss = mode == "direct" ? "-" : sprintf("%d->%d (%.1f)", mem_rss0[mk, mode], mem_rss1[mk, mode], mem_rssc[mk, mode])
				slab = sprintf("%d->%d (%.1f)", mem_slab0[mk, mode], mem_slab1[mk, mode], mem_slabc[mk, mode])
				rel = "-"
				# Per-connection figures of zero connections mean nothing.
				if (mem_est[mk, mode] + 0 == 0) {
					sub(/ \(.*\)$/, " (-)", rss)
					sub(/ \(.*\)$/, " (-)", slab)
				} else if (mode != "direct" && ((mk, "direct") in mem_status))
					rel = sprintf("%.1f", mem_slabc[mk, mode] - mem_slabc[mk, "direct"])
				nt = mem_status[mk, mode] == "ok" ? "" : mem_status[mk, mode] ": " mem_reason[mk, mode]
				if (mem_nofile[mk, mode] != "" && mem_status[mk, mode] != "ok")
					nt = nt " (ulimit -n " mem_nofile[mk, mode] ")"
				td = "-"
				if (mem_td[mk, mode] != "")
					td = sprintf("%.1f", mem_td[mk, mode])
				if (mem_tdok[mk, mode] == "false") {
					td = ">" td
					nt = (nt == "" ? "" : nt "; ") sprintf("daemon still busy after the clients closed (%.0f s of CPU), restarted", mem_tdcpu[mk, mode])
				}
				printf fmt3, lab, MODE_TITLE[mode], kp[3], mem_est[mk, mode], num(mem_setup[mk, mode]), rss, slab, rel, td, nt
				summary_line(sprintf("{\"part\":%s,\"scenario\":%s,\"mode\":%s,\"metric\":\"memory\",\"requested\":%s,\"established\":%s,\"rss_before_kb\":%s,\"rss_after_kb\":%s,\"rss_per_conn_kb\":%s,\"slab_before_kb\":%s,\"slab_after_kb\":%s,\"slab_per_conn_kb\":%s,\"relay_slab_per_conn_kb\":%s,\"setup_s\":%s,\"teardown_s\":%s,\"teardown_done\":%s,\"status\":%s}", jstr(kp[1]), jstr(kp[2]), jstr(mode), kp[3], jnum(mem_est[mk, mode]), jnum(mem_rss0[mk, mode]), jnum(mem_rss1[mk, mode]), jnum(mem_rssc[mk, mode]), jnum(mem_slab0[mk, mode]), jnum(mem_slab1[mk, mode]), jnum(mem_slabc[mk, mode]), rel == "-" ? "null" : rel, jnum(mem_setup[mk, mode]), jnum(mem_td[mk, mode]), mem_tdok[mk, mode] == "" ? "null" : mem_tdok[mk, mode], jstr(mem_status[mk, mode])))
				lab = ""
			}
		}
		print ""
	}
	# ---- idle cost and the control flood -----------------------------------------------
	nidle = 0
	for (o = 1; o <= nmem; o++)
		for (m = 1; m <= nmodes; m++)
			nidle += mem_idle[mem_order[o], MODES[m]] != ""
	if (nidle) {
		print "The daemon with N idle connections held (the memory phase's): idle CPU = the share of"
		print "one CPU it used while nothing moved, with the default configuration and (w/ sweep)"
		print "with idle-timeout set (reloaded in, an hour: nothing closes); echo = 1-byte round"
		print "trips through one more connection, p50/p99 us, alone and while a control client writes"
		print "200 \"list\" requests at a time and reads the answers (host only; lists = requests"
		print "answered meanwhile)."
		print ""
		fmt4 = "%-20s %-20s %6s %11s %11s %15s %22s %8s\n"
		printf fmt4, "scenario", "mode", "N", "idle CPU %", "w/ sweep %", "echo p50/p99", "flood p50/p99/max", "lists"
		for (o = 1; o <= nmem; o++) {
			mk = mem_order[o]
			split(mk, kp, SUBSEP)
			lab = label(kp[1], kp[2])
			for (m = 1; m <= nmodes; m++) {
				mode = MODES[m]
				if (mem_idle[mk, mode] == "")
					continue
				q = mem_q50[mk, mode] == "" ? "-" : sprintf("%s/%s", num(mem_q50[mk, mode]), num(mem_q99[mk, mode]))
				f = mem_f50[mk, mode] == "" ? "-" : sprintf("%s/%s/%s", num(mem_f50[mk, mode]), num(mem_f99[mk, mode]), num(mem_fmax[mk, mode]))
				w = mem_sweep[mk, mode] == "" ? "-" : sprintf("%.3f", mem_sweep[mk, mode])
				printf fmt4, lab, MODE_TITLE[mode], kp[3], sprintf("%.3f", mem_idle[mk, mode]), w, q, f, mem_freq[mk, mode] == "" ? "-" : mem_freq[mk, mode]
				summary_line(sprintf("{\"part\":%s,\"scenario\":%s,\"mode\":%s,\"metric\":\"idle\",\"held\":%s,\"idle_s\":%s,\"idle_cpu_pct\":%s,\"sweep_cpu_pct\":%s,\"quiet_p50_us\":%s,\"quiet_p99_us\":%s,\"flood_p50_us\":%s,\"flood_p99_us\":%s,\"flood_max_us\":%s,\"flood_requests\":%s}", jstr(kp[1]), jstr(kp[2]), jstr(mode), kp[3], jnum(mem_idles[mk, mode]), jnum(mem_idle[mk, mode]), jnum(mem_sweep[mk, mode]), jnum(mem_q50[mk, mode]), jnum(mem_q99[mk, mode]), jnum(mem_f50[mk, mode]), jnum(mem_f99[mk, mode]), jnum(mem_fmax[mk, mode]), mem_freq[mk, mode] == "" ? "null" : mem_freq[mk, mode] + 0))
				lab = ""
			}
		}
		print ""
	}
	if (own_failures)
		printf "FAILED: %d runs of direct or vsockmapd delivered wrong bytes (see the notes above)\n", own_failures
	exit own_failures ? 1 : 0
}
