#!/bin/bash
# justbench (tools/justbench.c, docs/justbench.1) rxe1 -> rxe0.
#
#  - one flow of each class at once (latency SEND 2 B, throughput WRITE 64 B in batches of 16,
#    bandwidth WRITE 1 MB with 4 in flight), server on rxe0 and client on rxe1, plain and with
#    both sides under libjustitia.so: every flow must complete messages, its bytes must be its
#    messages times its size, its percentiles ordered, the server must have received every SEND;
#  - the same in local mode (one process, both devices), with --rperf on a latency flow, and a
#    device that does not exist, locally and on the server (clean errors);
#  - --mode poll-cost, plain and under the shim in local mode: every kind of poll (empty,
#    empty in flight, the hit, the clock's floor) measured, non-negative, one hit per message;
#    the numbers are printed side by side, not ordered (the testbed's ticks land anywhere);
#  - --mode bidir, local plain and under the shim (its default flows), and client/server plain
#    and under the shim (a READ latency flow, a WRITE flow of two QPs): both directions of every
#    flow moved bytes (counts consistent as forward ones), the
#    aggregate is the sum of the two directions;
#  - the sweeping modes (--mode reuse, overhead, overlap), plain and under the shim in local
#    mode, reuse also client/server: every point moved messages (all drained: bytes = msgs x
#    size, a latency sample each), reuse R sent exactly floor(R x msgs / 100) on the shared
#    buffer, one buffer in rotation all of them; overhead's CPU per post and per poll
#    non-negative, one each per message, computation's share 0 without and > 0 with it, a
#    knee; overlap within 0..1, each message's time at least its computation, and with a 5 ms
#    link delay (jv_delay) a 1 ms computation hides more than without it;
#  - --mode progress, plain and under the shim in local mode: 1 KiB fetched by READ and by a
#    SEND request from a server that computes in slices of D = 0 and 4 ms; every point fetched
#    (counts, positive latencies), the server answered every request; a request waits for the
#    server (its p50 at the largest D above its p50 at D = 0), a READ does not (its p50 at the
#    largest D below the request's there);
#  - the paper's core scenario: a latency flow alone, then one next to a 1 MB WRITE bandwidth
#    flow, plain and under the shim.  The p99s are printed, not judged (the testbed is two
#    emulated CPUs shared with everything else).
. tests/vm/lib.sh
. tests/vm/shimlib.sh
B=${JUSTBENCH:-$PWD/build/justbench}
export R=$JV_OUT/reports
mkdir -p "$R"
PORT=18600
SRV=(-d "$RXE_DEV0" -g "$RXE_GID")
CLI=(-d "$RXE_DEV1" -g "$RXE_GID")
MIX=(lat:send:2 tput:write:64:batch=16 bw:write:1M:window=4)

# check NAME REPORT JQ_EXPR DETAIL_EXPR: PASS when JQ_EXPR is true of the report
check() {
	local ok=0 detail
	if [[ -s $2 ]] && jq -e "$3" "$2" >/dev/null 2>&1; then ok=1; fi
	detail=$(jq -r "$4" "$2" 2>/dev/null || echo "no report")
	_jv_result "$1" $ok "${detail:-no report}"
}

# sane NAME REPORT NFLOWS: the numbers every run must have
sane() {
	check "$1.flows" "$2" ".flows | length == $3 and all(.[]; .ok)" \
		'[.flows[] | "\(.name) \(.error // "ok")"] | join(", ")'
	check "$1.counts" "$2" \
		'all(.flows[]; .msgs > 0 and .posts > 0 and .bytes == .msgs * .size and
		     .msgs == .posts * .batch and .latency_ns.samples == .posts and
		     .mops > 0 and .gbps > 0 and .cpu_pct > 0 and .elapsed_ns > 0)' \
		'[.flows[] | "\(.name) \(.msgs) msgs \(.bytes) B"] | join(", ")'
	check "$1.percentiles" "$2" \
		'all(.flows[].latency_ns; .min > 0 and .min <= .p50 and .p50 <= .p99 and
		     .p99 <= .p999 and .p999 <= .max and .min <= .mean and .mean <= .max)' \
		'[.flows[] | "\(.name) p50 \(.latency_ns.p50 / 1000) p99 \(.latency_ns.p99 / 1000)"]
		 | join(", ") + " us"'
	check "$1.server" "$2" \
		'all(.flows[] | select(.verb == "send" or .verb == "write_imm");
		     .server.msgs == .msgs and .server.bytes == .bytes)' \
		'[.flows[] | select(.verb == "send")
		  | "\(.name) sent \(.msgs) received \(.server.msgs)"] | join(", ")'
}

# pair NAME WRAP... -- ARGS...: server on rxe0, client on rxe1, each under WRAP (may be empty)
pair() {
	local name=$1 wrap=()
	shift
	while [[ $1 != -- ]]; do
		wrap+=("$1")
		shift
	done
	shift
	PORT=$((PORT + 1))
	run_pair "justbench.$name" $PORT \
		"${wrap[@]}" "$B" server -p $PORT "${SRV[@]}" -- \
		"${wrap[@]}" "$B" client "$RXE_IP0" -p $PORT "${CLI[@]}" -o "$R/$name.json" "$@"
	cat "$JV_OUT/justbench.$name.client.out"
}

preload() {
	env LD_PRELOAD="$SHIM" JUSTITIA_STATS="$R/stats-%p.json" "$@"
}
export -f preload

# ---- one flow of each class, client and server
pair mix.plain -- "${MIX[@]}" -t 2s
sane mix.plain "$R/mix.plain.json" 3
check mix.plain.unclassified "$R/mix.plain.json" \
	'.shim == false and all(.flows[]; .classified_qps == 0)' '"shim \(.shim)"'

pair mix.shim preload -- "${MIX[@]}" -t 2s
sane mix.shim "$R/mix.shim.json" 3
check mix.shim.classified "$R/mix.shim.json" \
	'.shim == true and all(.flows[]; .classified_qps == .qps)' \
	'"shim \(.shim), classified " + ([.flows[].classified_qps] | map(tostring) | join("/"))'

# ---- local mode: both ends in one process; rperf; errors
run_one justbench.local.rperf "$B" local "$RXE_DEV1" "$RXE_DEV0" -g "$RXE_GID" --rperf \
	-o "$R/local.json" lat:write:8 lat:send:2:poll=event tput:send:64:batch=8,iters=1024 -t 1s
sane local "$R/local.json" 3
check local.rperf "$R/local.json" \
	'all(.flows[] | select(.class == "latency"); .rperf.probe_ns.samples == .latency_ns.samples
	     and .rperf.corrected_ns.p50 <= .latency_ns.p50 and .rperf.probe_ns.min > 0)' \
	'[.flows[] | select(.rperf)
	  | "\(.name) p50 \(.latency_ns.p50 / 1000) - probe = \(.rperf.corrected_ns.p50 / 1000) us"]
	 | join(", ")'
check local.iters "$R/local.json" '.flows[2].msgs == 1024' '"tput msgs \(.flows[2].msgs)"'

# ---- a rate: the flow paces its own posts (the anchor of 55-isolation): never more than rate x
# duration plus one post, and (rxe carries 20+ MB/s) at least a quarter of it, busy and event
run_one justbench.local.rate "$B" local "$RXE_DEV1" "$RXE_DEV0" -g "$RXE_GID" \
	-o "$R/rate.json" bw:write:8K:window=4,rate=40M,name=busy \
	bw:write:8K:window=4,rate=16M,poll=event,name=event -t 2s
sane rate "$R/rate.json" 2
check rate.bounded "$R/rate.json" \
	'all(.flows[]; .bytes * 8 <= .rate_bps * .duration_us / 1e6 + .size * 8 and
		       .bytes * 8 >= .rate_bps * .duration_us / 1e6 / 4)' \
	'[.flows[] | "\(.name) \(.bytes * 8 / (.duration_us / 1e6) / 1e6) of \(.rate_bps / 1e6) Mbit/s"]
	 | join(", ")'

nodev() {
	local out rc=0
	out=$("$B" local "$RXE_DEV1" nosuchdev lat -t 100ms 2>&1) || rc=$?
	echo "$out"
	[[ $rc == 1 && $out == *"nosuchdev: no such RDMA device"* ]]
}
# a server that cannot serve: its ERROR reaches the client, which says so and fails
srverr() {
	local out rc=0 spid
	"$B" server -p 18699 -d nosuchdev &
	spid=$!
	wait_port 18699 10 $spid || return 1
	out=$("$B" client "$RXE_IP0" -p 18699 -d "$RXE_DEV1" lat -t 100ms 2>&1) || rc=$?
	echo "$out"
	wait $spid
	[[ $rc == 1 && $out == *"server: nosuchdev: no such RDMA device"* ]]
}
export B RXE_DEV1 RXE_IP0
export -f nodev srverr wait_port
run_one justbench.local.nodev nodev
run_one justbench.server.error srverr

# ---- --mode poll-cost: what each ibv_poll_cq call costs, plain and through the shim's poll
PC='.flows[0].poll_cost'
for mode in plain shim; do
	wrap=()
	[[ $mode == shim ]] && wrap=(preload)
	run_one "justbench.pollcost.$mode" "${wrap[@]}" "$B" local "$RXE_DEV1" "$RXE_DEV0" \
		-g "$RXE_GID" --mode poll-cost -t 1s -o "$R/pollcost.$mode.json"
	sane "pollcost.$mode" "$R/pollcost.$mode.json" 1
	check "pollcost.$mode.kinds" "$R/pollcost.$mode.json" \
		".bench_mode == \"poll-cost\" and .shim == $([[ $mode == shim ]] && echo true || echo false)
		 and ($PC | [.empty_ns, .inflight_empty_ns, .hit_ns, .clock_ns]
		      | all(.[]; [.samples, .min, .mean, .p50, .p99, .p999, .max]
			    | all(.[]; type == \"number\" and . >= 0)))
		 and $PC.hit_ns.samples == .flows[0].msgs and $PC.empty_ns.samples == .flows[0].msgs
		 and $PC.inflight_empty_ns.samples <= .flows[0].msgs
		 and $PC.clock_ns.samples == 10000" \
		"$PC | \"ns p50/p99: empty \\(.empty_ns.p50)/\\(.empty_ns.p99), in flight \\(
		 .inflight_empty_ns.p50)/\\(.inflight_empty_ns.p99), hit \\(.hit_ns.p50)/\\(
		 .hit_ns.p99), clock \\(.clock_ns.p50)/\\(.clock_ns.p99); \\(.hit_ns.samples) msgs\""
done

# ---- --mode bidir: each flow both ways at once (default: latency WRITE 8 B, then 64 KiB WRITEs)
# bidir NAME REPORT: both directions moved bytes, their sum is the aggregate
bidir() {
	sane "$1" "$2" 2
	check "$1.reverse" "$2" \
		'.bench_mode == "bidir" and all(.flows[]; .reverse.ok and .reverse.error == null and
		 .reverse.msgs > 0 and .reverse.bytes == .reverse.msgs * .size and
		 .reverse.msgs == .reverse.posts * .batch and
		 .reverse.latency_ns.samples == .reverse.posts and .reverse.latency_ns.min > 0 and
		 .reverse.elapsed_ns > 0 and .reverse.gbps > 0 and .reverse.cpu_pct > 0)' \
		'[.flows[] | "\(.name) forward \(.msgs) reverse \(.reverse.msgs // "none") msgs"]
		 | join(", ")'
	check "$1.aggregate" "$2" \
		'def near(a; b): a as $a | b as $b | ($a - $b | fabs) <= 1e-9 + 1e-6 * ($b | fabs);
		 all(.flows[]; .aggregate.msgs == .msgs + .reverse.msgs and
		     .aggregate.bytes == .bytes + .reverse.bytes and
		     near(.aggregate.gbps; .gbps + .reverse.gbps) and
		     near(.aggregate.mops; .mops + .reverse.mops))' \
		'[.flows[] | "\(.name) \(.gbps * 1000 | floor) + \(.reverse.gbps * 1000 | floor) = "
		  + "\(.aggregate.gbps * 1000 | floor) Mbit/s, p50 \(.latency_ns.p50 / 1000) / "
		  + "\(.reverse.latency_ns.p50 / 1000) us"] | join(", ")'
}
for mode in plain shim; do
	wrap=()
	[[ $mode == shim ]] && wrap=(preload)
	run_one "justbench.bidir.local.$mode" "${wrap[@]}" "$B" local "$RXE_DEV1" "$RXE_DEV0" \
		-g "$RXE_GID" --mode bidir -t 1s -o "$R/bidir.local.$mode.json"
	bidir "bidir.local.$mode" "$R/bidir.local.$mode.json"
	# over TCP: READs one at a time both ways, then two QPs of 32 KiB WRITEs each way
	pair "bidir.$mode" "${wrap[@]}" -- --mode bidir -t 1s lat:read:64:name=rlat \
		bw:write:32K:qps=2,window=2,delay=1s,name=bw2
	bidir "bidir.$mode" "$R/bidir.$mode.json"
done

# ---- the sweeping modes: every point ran, drained, and kept its own promises
# points NAME REPORT: what every point of every flow must have
points() {
	check "$1.points" "$2" \
		'all(.flows[]; .ok and (.sweep.points | length) > 0 and .size as $size |
		     .msgs == ([.sweep.points[].msgs] | add) and
		     all(.sweep.points[]; .msgs > 0 and .bytes == .msgs * $size and
			 .latency_ns.samples == .msgs and .elapsed_ns > 0 and .gbps > 0 and
			 .latency_ns.min > 0 and .latency_ns.p50 <= .latency_ns.p99))' \
		'[.flows[] | "\(.name): " + ([.sweep.points[] | "\(.kind) \(.x) \(.msgs)"] | join(", "))]
		 | join("; ")'
}
reuse() {
	points "$1" "$2"
	check "$1.buffers" "$2" \
		'.bench_mode == "reuse" and all(.flows[].sweep.points[];
		 if .kind == "reuse" then .reused_msgs == (.x * .msgs / 100 | floor)
		 elif .x == 1 then .reused_msgs == .msgs else .reused_msgs <= .msgs end)' \
		'[.flows[] | "\(.name) " + ([.sweep.points[] | "\(.kind) \(.x): \(.reused_msgs)/\(.msgs) "
		  + "\(.gbps * 1000 | floor) Mbit/s p50 \(.latency_ns.p50 / 1000 | floor) us"]
		  | join(", "))] | join("; ")'
}
for mode in plain shim; do
	wrap=()
	[[ $mode == shim ]] && wrap=(preload)
	run_one "justbench.reuse.local.$mode" "${wrap[@]}" "$B" local "$RXE_DEV1" "$RXE_DEV0" \
		-g "$RXE_GID" --mode reuse --reuse 0,50,100 --rotate 1,8 --buffers 16 -t 1s \
		-o "$R/reuse.local.$mode.json"
	reuse "reuse.local.$mode" "$R/reuse.local.$mode.json"
	run_one "justbench.overhead.$mode" "${wrap[@]}" "$B" local "$RXE_DEV1" "$RXE_DEV0" \
		-g "$RXE_GID" --mode overhead --compute 200us,2ms -t 1500ms \
		-o "$R/overhead.$mode.json"
	points "overhead.$mode" "$R/overhead.$mode.json"
	check "overhead.$mode.cpu" "$R/overhead.$mode.json" \
		'.bench_mode == "overhead" and (.flows[0].sweep.points[0] | .kind == "cpu" and
		 .post_cpu_ns.samples == .msgs and .poll_cpu_ns.samples == .msgs and
		 .post_cpu_ns.min >= 0 and .poll_cpu_ns.min >= 0 and .cpu_per_msg_ns > 0) and
		 .flows[0].sweep.cpu_clock_ns.samples == 1000' \
		'.flows[0].sweep | "CPU ns per message p50: post \(.points[0].post_cpu_ns.p50), poll "
		 + "\(.points[0].poll_cpu_ns.p50) (clock \(.cpu_clock_ns.p50))"'
	check "overhead.$mode.compute" "$R/overhead.$mode.json" \
		'.flows[1].sweep | (.points | length) == 3 and .points[0].x == 0 and
		 .points[0].compute_share == 0 and .points[0].relative_gbps == 1 and
		 all(.points[1:][]; .compute_share > 0 and .compute_share <= 1 and
		     .compute_ns >= .x * .msgs) and .knee != null' \
		'.flows[1].sweep | ([.points[] | "C \(.x / 1000) us: \(.gbps * 1000 | floor) Mbit/s, "
		 + "computing \(.compute_share * 100 | floor)%"] | join(", ")) + "; knee \(.knee.compute_share)"'
done
pair reuse.plain -- --mode reuse --reuse 0,100 --rotate 4 -t 1s lat:send:64 \
	bw:write:32K:window=2,poll=busy,delay=1s
reuse reuse.pair "$R/reuse.plain.json"

# overlap: without a delay and with 5 ms each way, a 1 ms computation between post and wait
overlap() {
	points "$1" "$2"
	check "$1.overlap" "$2" \
		'.bench_mode == "overlap" and (.flows[0].sweep.points | .[0].overlap == 0 and
		 all(.[]; .overlap >= 0 and .overlap <= 1 and .comm_ns > 0 and
		     .latency_ns.mean * .msgs >= .compute_ns))' \
		'.flows[0].sweep.points | "T \(.[0].comm_ns / 1000 | floor) us; "
		 + ([.[] | "C \(.x / 1000) us: \(.overlap * 100 | floor)%"] | join(", "))'
}
run_one justbench.overlap.nodelay "$B" local "$RXE_DEV1" "$RXE_DEV0" -g "$RXE_GID" \
	--mode overlap --compute 1ms -t 1s -o "$R/overlap.0.json"
overlap overlap.nodelay "$R/overlap.0.json"
jv_delay 5
run_one justbench.overlap.delay5 "$B" local "$RXE_DEV1" "$RXE_DEV0" -g "$RXE_GID" \
	--mode overlap --compute 1ms -t 2s -o "$R/overlap.5.json"
jv_delay 0
overlap overlap.delay5 "$R/overlap.5.json"
# what 1 ms of computation hid (overlap x T): at most T without a delay (tens of us), about the
# whole 1 ms with 5 ms each way
hidden='.flows[0].sweep.points[1] | .overlap * .comm_ns | floor'
h0=$(jq "$hidden" "$R/overlap.0.json" 2>/dev/null)
[[ $h0 =~ ^[0-9]+$ ]] || h0=1000000000000
check overlap.delay.hides.more "$R/overlap.5.json" "($hidden) > $h0" \
	"\"1 ms computation hid \\(($hidden) / 1000) us with 5 ms each way, $((h0 / 1000)) us without\""

# ---- --mode progress: READ against a SEND request to a server computing in slices of D
progress() {
	sane "$1" "$2" 2
	points "$1" "$2"
	check "$1.order" "$2" \
		'def pts($v): [.flows[] | select(.verb == $v) | .sweep.points[]];
		 .bench_mode == "progress" and (pts("read") | length) == 2 and
		 (pts("send") | length) == 2 and
		 all(.flows[].sweep.points[]; .kind == "progress" and .response_delay_ns == .x and
		     .latency_ns.mean > 0 and .latency_ns.min <= .latency_ns.mean) and
		 all(.flows[] | select(.verb == "read"); .server.msgs == 0) and
		 (pts("send") | max_by(.x).latency_ns.p50) >
		     (pts("send") | map(select(.x == 0))[0].latency_ns.p50) and
		 (pts("read") | max_by(.x).latency_ns.p50) <
		     (pts("send") | max_by(.x).latency_ns.p50)' \
		'[.flows[] | "\(.verb): " + ([.sweep.points[] | "D \(.x / 1000000) ms p50/mean/p99 "
		  + "\(.latency_ns.p50 / 1000 | floor)/\(.latency_ns.mean / 1000 | floor)/"
		  + "\(.latency_ns.p99 / 1000 | floor) us (\(.msgs))"] | join(", "))] | join("; ")'
}
for mode in plain shim; do
	wrap=()
	[[ $mode == shim ]] && wrap=(preload)
	run_one "justbench.progress.$mode" "${wrap[@]}" "$B" local "$RXE_DEV1" "$RXE_DEV0" \
		-g "$RXE_GID" --mode progress --response-delay 0,4ms -t 2s \
		-o "$R/progress.$mode.json"
	progress "progress.$mode" "$R/progress.$mode.json"
done

# ---- the core scenario: latency alone, then next to a 1 MB WRITE bandwidth flow
CORE=(-f lat:send:2:name=alone,duration=3s
	-f bw:write:1M:window=4,name=elephant,delay=3s,duration=4s
	-f lat:send:2:name=shared,delay=3500ms,duration=3s)
for mode in plain shim; do
	wrap=()
	[[ $mode == shim ]] && wrap=(preload)
	pair "core.$mode" "${wrap[@]}" -- "${CORE[@]}"
	sane "core.$mode" "$R/core.$mode.json" 3
	check "core.$mode.p99" "$R/core.$mode.json" 'true' \
		'(.flows | map({(.name): .}) | add) as $f |
		 "latency p99 alone \($f.alone.latency_ns.p99 / 1000) us, next to 1 MB WRITEs "
		 + "\($f.shared.latency_ns.p99 / 1000) us (p50 \($f.alone.latency_ns.p50 / 1000)"
		 + " -> \($f.shared.latency_ns.p50 / 1000)); elephant "
		 + "\($f.elephant.gbps * 1000 | floor) Mbit/s"'
done
jv_summary
