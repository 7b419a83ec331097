# SPDX-License-Identifier: GPL-2.0-only
#
# bench/plot.gp - bench/results.png from the data bench/report.awk writes:
#	gnuplot -e "datadir='DIR'; outfile='FILE'; subtitle='TEXT'" bench/plot.gp
# Top: throughput of each mode relative to direct (no relay). Bottom: CPU per GB moved
# relative to socat with default options. Each mode keeps its colour in both panels;
# DIR/plot.inc says which mode columns the data files hold (t_cols, t_colors, c_cols, c_colors);
# DIR/labels-t.gp and labels-c.gp name the bars that are missing because runs failed.

if (!exists("subtitle")) subtitle = ""
tput = datadir . "/throughput.dat"
cpu = datadir . "/cpu.dat"
load datadir . "/plot.inc"

set terminal pngcairo size 1400,1000 font "DejaVu Sans,11" noenhanced
set output outfile
set datafile missing "-"
set style data histograms
set style histogram clustered gap 1.5
set style fill solid 0.9 border rgb "#404040"
set boxwidth 0.9
set grid ytics lc rgb "#d8d8d8"
set key outside right top vertical Left reverse noautotitle samplen 2 spacing 1.3 width 2
set xtics nomirror scale 0 font ",11"
set ytics nomirror
set border 3
set lmargin 10
set rmargin 32
# Always show the 1.0 line: autoscale the top, but not below 1.15.
set yrange [0:1.15 < *]

# Bar k (from 1) of n in a cluster at x: clustered histograms give each bar 1/(n + gap).
bar_x(x, k, n) = x + (k - (n + 1) / 2.0) / (n + 1.5)

set multiplot layout 2,1 title "vsockmap make bench: every mode in turn, same run, same target\n" . subtitle font ",14"

set title "Throughput relative to direct (no relay = 1.0, dashed line): higher is better"
set ylabel "x direct"
unset label
load datadir . "/labels-t.gp"
plot for [k = 1:t_cols] tput using (column(k + 1)):xtic(1) title columnheader(k + 1) \
		lc rgb word(t_colors, k), \
	for [k = 1:t_cols] tput skip 1 using (bar_x($0, k, t_cols)):(column(k + 1)):(sprintf("%.2f", column(k + 1))) \
		with labels font ",8" offset 0, 0.6 notitle, \
	1 with lines dt 2 lw 1.5 lc rgb "#505050" notitle

set title "CPU per GB moved relative to socat with default options (socat = 1.0, dashed line): lower is better"
set ylabel "x socat"
unset label
load datadir . "/labels-c.gp"
plot for [k = 1:c_cols] cpu using (column(k + 1)):xtic(1) title columnheader(k + 1) \
		lc rgb word(c_colors, k), \
	for [k = 1:c_cols] cpu skip 1 using (bar_x($0, k, c_cols)):(column(k + 1)):(sprintf("%.2f", column(k + 1))) \
		with labels font ",8" offset 0, 0.6 notitle, \
	1 with lines dt 2 lw 1.5 lc rgb "#505050" notitle

unset multiplot
