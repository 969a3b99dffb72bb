// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl: the operator tool of bbr-bpf. Loads the project's congestion
 * controls (BPF struct_ops objects) into the kernel, keeps them registered
 * by pinning their links on bpffs, removes them again, and shows what is
 * loaded and the per-socket state their iterators export.
 *
 * This file is the command line: the table of commands, each with its own
 * options and help, the options every command takes, and main(). The
 * commands live with what they work on (cc.c load/unload, info.c list,
 * state.c stat/top, params.c set/params, trace.c, attach.c, swap.c,
 * hwtstamp.c). See docs/bbrctl.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "num.h"

struct common_opts g_opts;

/* ---- the options a command may take ------------------------------------------------ */

/* Each command names the ones it takes (struct command.opts). */
enum opt_id {
	O_OBJ, O_CGROUP, O_CC, O_FROM, O_TO, O_PORT, O_NETNS, O_INTERVAL,
	O_COUNT, O_PER_ACK, O_CSV, O_DURATION, O_OUTPUT, O_DEFAULT, O_RESET,
	O_SOCKET, O_NAME, O_FORCE, O_ECN, O_MIN_BYTES, N_OPTS
};
#define O(id)		(1u << O_##id)
#define OPT_BASE	256		/* getopt_long's value of option id */

static const struct option cmd_options[N_OPTS] = {
	[O_OBJ]      = { "obj",      required_argument, NULL, OPT_BASE + O_OBJ },
	[O_CGROUP]   = { "cgroup",   required_argument, NULL, OPT_BASE + O_CGROUP },
	[O_CC]       = { "cc",       required_argument, NULL, OPT_BASE + O_CC },
	[O_FROM]     = { "from",     required_argument, NULL, OPT_BASE + O_FROM },
	[O_TO]       = { "to",       required_argument, NULL, OPT_BASE + O_TO },
	[O_PORT]     = { "port",     required_argument, NULL, OPT_BASE + O_PORT },
	[O_NETNS]    = { "netns",    required_argument, NULL, OPT_BASE + O_NETNS },
	[O_INTERVAL] = { "interval", required_argument, NULL, OPT_BASE + O_INTERVAL },
	[O_COUNT]    = { "count",    required_argument, NULL, OPT_BASE + O_COUNT },
	[O_PER_ACK]  = { "per-ack",  no_argument,       NULL, OPT_BASE + O_PER_ACK },
	[O_CSV]      = { "csv",      no_argument,       NULL, OPT_BASE + O_CSV },
	[O_DURATION] = { "duration", required_argument, NULL, OPT_BASE + O_DURATION },
	[O_OUTPUT]   = { "output",   required_argument, NULL, OPT_BASE + O_OUTPUT },
	[O_DEFAULT]  = { "default",  no_argument,       NULL, OPT_BASE + O_DEFAULT },
	[O_RESET]    = { "reset",    no_argument,       NULL, OPT_BASE + O_RESET },
	[O_SOCKET]   = { "socket",   required_argument, NULL, OPT_BASE + O_SOCKET },
	[O_NAME]     = { "name",     required_argument, NULL, OPT_BASE + O_NAME },
	[O_FORCE]    = { "force",    no_argument,       NULL, OPT_BASE + O_FORCE },
	[O_ECN]      = { "ecn",      required_argument, NULL, OPT_BASE + O_ECN },
	[O_MIN_BYTES] = { "min-bytes", required_argument, NULL, OPT_BASE + O_MIN_BYTES },
};

/* The options of every command, before or after its name. */
#define OPT_OBJDIR	(OPT_BASE + N_OPTS)
static const struct option common_options[] = {
	{ "objdir",  required_argument, NULL, OPT_OBJDIR },
	{ "json",    no_argument,       NULL, 'j' },
	{ "pretty",  no_argument,       NULL, 'p' },
	{ "verbose", no_argument,       NULL, 'v' },
	{ "help",    no_argument,       NULL, 'h' },
	{ "version", no_argument,       NULL, 'V' },
};
#define N_COMMON	(sizeof(common_options) / sizeof(common_options[0]))

/* --opt VALUE through the number parser; -1 with a message naming the
 * option, what is wrong and a note (" (seconds)"). */
static int opt_num(const char *opt, const char *val, uint64_t min, uint64_t max,
		   unsigned int flags, const char *note, uint64_t *out)
{
	char why[160];

	if (!num_parse(val, min, max, flags, out, why, sizeof(why)))
		return 0;
	err("--%s %s: %s%s", opt, val, why, note);
	return -1;
}

/* Store one command option; -1 after a message if its value is bad. */
static int set_cmd_opt(enum opt_id id, const char *arg, struct cmd_opts *o)
{
	uint64_t v;

	switch (id) {
	case O_OBJ:
		o->objs[o->nobjs++] = arg;
		return 0;
	case O_CGROUP:	 o->cgroup = arg; return 0;
	case O_CC:	 o->cc = arg; return 0;
	case O_NAME:	 o->name = arg; return 0;
	case O_ECN:
		if (!strcmp(arg, "accecn"))
			o->ecn_flags = LOAD_ECN_ACCECN;
		else if (!strcmp(arg, "accecn-only"))
			o->ecn_flags = LOAD_ECN_ACCECN_ONLY;
		else if (!strcmp(arg, "classic"))
			o->ecn_flags = LOAD_ECN_CLASSIC;
		else {
			err("--ecn %s: one of accecn (AccECN, ECT(1): L4S), "
			    "accecn-only (the same, no ECN with a peer that has only "
			    "RFC 3168), classic (RFC 3168)", arg);
			return -1;
		}
		return 0;
	case O_FORCE:	 o->force = true; return 0;
	case O_FROM:	 o->from = arg; return 0;
	case O_TO:	 o->to = arg; return 0;
	case O_NETNS:	 o->netns = arg; return 0;
	case O_OUTPUT:	 o->output = arg; return 0;
	case O_PER_ACK:	 o->per_ack = true; return 0;
	case O_CSV:	 o->csv = true; return 0;
	case O_DEFAULT:	 o->set_default = true; return 0;
	case O_RESET:	 o->set_reset = true; return 0;
	case O_PORT:
		if (opt_num("port", arg, 1, 65535, 0, "", &v))
			return -1;
		o->port = (int)v;
		return 0;
	case O_INTERVAL:
		return opt_num("interval", arg, INTERVAL_MIN_US, INTERVAL_MAX_US,
			       NUM_MICRO, " (seconds)", &o->interval_us);
	case O_COUNT:
		return opt_num("count", arg, 1, UINT32_MAX, 0, " (screens)", &o->count);
	case O_DURATION:
		return opt_num("duration", arg, 1, DURATION_MAX_US, NUM_MICRO,
			       " (seconds)", &o->duration_us);
	case O_MIN_BYTES:
		o->min_bytes_set = true;
		return opt_num("min-bytes", arg, 0, UINT64_MAX, 0, " (bytes)", &o->min_bytes);
	case O_SOCKET:
		o->set_socket = true;
		return opt_num("socket", arg, 1, UINT64_MAX, 0,
			       "; a socket cookie is its SO_COOKIE, the COOKIE "
			       "column of `bbrctl stat`", &o->socket_cookie);
	case N_OPTS:
		break;
	}
	return -1;
}

/* ---- the commands ------------------------------------------------------------------ */

struct command {
	const char *name;
	const char *synopsis;		/* its lines in `bbrctl --help` */
	const char *help;		/* `bbrctl help NAME`, `NAME --help` */
	unsigned int opts;		/* O(...) of the options it takes */
	bool json;			/* it prints JSON with --json */
	const char *hint;		/* added to "--x is only for ..." */
	int (*run)(const struct cmd_opts *o, char **args, int nargs);
	bool changes;			/* changes pins, registrations or sets:
					 * runs under BBRCTL_LOCK */
};

static int cmd_help(const struct cmd_opts *o, char **args, int nargs);

static const struct command commands[] = {
	{ "load",
"  load NAME... | all     load NAME.bpf.o from the object directory, register\n"
"                         the congestion control and pin it (all or nothing)\n"
"  load --obj PATH...     the same for explicit object files\n"
"  load --name NEW NAME   load NAME's object registered as NEW\n",
"Usage: bbrctl load [--objdir DIR] NAME... | all\n"
"       bbrctl load --obj PATH [--obj PATH...] [NAME...]\n"
"       bbrctl load --name NEW (NAME | --obj PATH)\n"
"       bbrctl load --name NEW --ecn accecn|accecn-only|classic (NAME | --obj PATH)\n"
"\n"
"Open each object, load its programs (the verifier's log is shown if the\n"
"kernel rejects one), register the congestion control by attaching its\n"
"struct_ops link, pin the link at " PIN_ROOT "/NAME/" PIN_LINK ", and attach\n"
"and pin the state iterator at " PIN_ROOT "/NAME/" PIN_ITER " if the\n"
"object has dump_NAME_state.\n"
"\n"
"NAME is looked up as DIR/NAME.bpf.o; `all` loads every *.bpf.o in DIR\n"
"that holds a congestion control. Several congestion controls are loaded\n"
"all or nothing: if one fails, those loaded before it are unloaded again.\n"
"\n"
"--name NEW registers the one congestion control given under the name NEW\n"
"(at most 15 characters: letters, digits, '_', '-', '.'): a second copy\n"
"beside NAME, with its own programs, state, parameter sets and pins under\n"
PIN_ROOT "/NEW; every other command then takes NEW.\n"
"\n"
"--ecn (with --name) registers the copy with ops flags that make the\n"
"kernel negotiate ECN for every socket that uses it, whatever the\n"
"net.ipv4.tcp_ecn sysctl says: `accecn` asks for AccECN and sends ECT(1),\n"
"the L4S codepoint (TCP_CONG_NEEDS_ECN | NEEDS_ACCECN | ECT_1_NEGOTIATION),\n"
"on the handshake (for data: `bbrctl ect1`); with a peer that has only\n"
"RFC 3168 ECN the connection uses that; `accecn-only` adds\n"
"TCP_CONG_NO_FALLBACK_RFC3168: such a peer gets no ECN at all; `classic`\n"
"for RFC 3168 ECN with ECT(0) (TCP_CONG_NEEDS_ECN). Both ends need such a\n"
"CC (or the sysctl) for ECN to be negotiated. bbrctl checks the kernel's\n"
"BTF for AccECN (Linux 6.18); a kernel that does not know a flag refuses\n"
"the registration (docs/l4s.md).\n"
"\n"
"Fails if NAME is already loaded by bbrctl, if a congestion control of\n"
"that name is registered by the kernel or another loader, if the object\n"
"is missing, or if the kernel refuses it.\n",
	  O(OBJ) | O(NAME) | O(ECN), false, NULL, cmd_load, true },
	{ "unload",
"  unload NAME... | all   unregister and remove the pins\n",
"Usage: bbrctl unload [--force] NAME... | all\n"
"\n"
"Detach the struct_ops link (the congestion control leaves\n"
PROC_AVAIL_CC "),\n"
"remove the pins and " PIN_ROOT "/NAME, and check that the name is gone.\n"
"Sockets that use NAME keep running its programs until they close; the\n"
"kernel frees the programs after the last one. `unload all` with nothing\n"
"loaded succeeds.\n"
"\n"
"A CC that `bbrctl attach` gives a cgroup's sockets is not unloaded: new\n"
"sockets there would silently get the namespace's default instead. bbrctl\n"
"names the cgroups and unloads nothing; --force detaches them first, each\n"
"reported.\n",
	  O(FORCE), false, NULL, cmd_unload, true },
	{ "list",
"  list                   the congestion controls bbrctl has loaded\n",
"Usage: bbrctl list [--json]\n"
"\n"
"The congestion controls pinned under " PIN_ROOT ": name, struct_ops map\n"
"id, link id, when its programs were loaded, how many sockets use it (the\n"
"records of its state iterator, all network namespaces; '-' without an\n"
"iterator) and its state:\n"
"  registered  loaded and in " PROC_AVAIL_CC "\n"
"  detached    the pinned link was detached behind bbrctl's back\n"
"  stale       pinned but no longer registered\n"
"  broken      the link pin is missing or unreadable\n"
"Run `bbrctl unload NAME` to clean up the last three.\n"
"\n"
"JSON: an array of objects with the keys name, state, registered, link_id,\n"
"struct_ops_map_id, prog_id, load_time (ISO 8601), load_time_unix_ns,\n"
"sockets (null if unknown) and state_iter.\n",
	  0, true, NULL, cmd_list },
	{ "stat",
"  stat [NAME...]         one row per socket from the state iterators\n",
"Usage: bbrctl stat [--json] [NAME...]\n"
"\n"
"Read the pinned state iterators (of NAME, or of every loaded congestion\n"
"control that has one) and print one row per socket: local and peer\n"
"address, BBR mode and PROBE_BW phase, the model's bandwidth, pacing rate,\n"
"cwnd, packets in flight, smoothed and minimum RTT, inflight_lo/hi ('-' when\n"
"unset), ECN alpha and whether STARTUP found the full bandwidth.\n"
"\n"
"--json prints one array; each element holds the members of struct\n"
"bbr3_state_rec with those of its struct bbr3 flattened in, saddr/daddr as\n"
"strings, and the derived cc, mode_name, phase_name (null outside PROBE_BW),\n"
"bw (BW_UNIT) and bw_bps (bit/s).\n",
	  0, true, NULL, cmd_stat },
	{ "top",
"  top [--interval S] [--count N] [NAME...]   stat as a refreshing table\n",
"Usage: bbrctl top [--interval S] [--count N] [--json] [NAME...]\n"
"\n"
"`stat` repeated every --interval seconds (default 1, 0.1..3600) as a\n"
"refreshing table with a time header; --count N stops after N screens\n"
"(default: until interrupted). With --json one array per refresh, one per\n"
"line, and no screen clearing.\n",
	  O(INTERVAL) | O(COUNT), true, NULL, cmd_top },
	{ "trace",
"  trace [NAME...] [--per-ack] [--csv] [--duration S] [--output FILE [--force]]\n"
"                         stream model events (per round, per ACK)\n",
"Usage: bbrctl trace [NAME...] [--per-ack] [--csv] [--duration S] [--output FILE [--force]]\n"
"\n"
"Stream the model events of the loaded congestion controls NAME (default:\n"
"every loaded one with a trace ring) until SIGINT/SIGTERM or S seconds,\n"
"then flush and exit 0. One event per round trip per socket plus one on\n"
"every mode/PROBE_BW phase change; --per-ack: one per ACK. Output: JSON\n"
"lines (one object per line), or CSV with a header (--csv), on stdout or\n"
"in FILE; nothing else is written to stdout (messages go to stderr).\n"
"FILE must not exist (--force: overwrite it) and is never reached through\n"
"a symbolic link.\n"
"\n"
"Fields: t_ns (CLOCK_MONOTONIC), cookie (SO_COOKIE; 0 if the socket's\n"
"cookie was never generated), cc, ev (round|ack|mode), mode\n"
"(STARTUP|DRAIN|PROBE_BW|PROBE_RTT), phase (DOWN|CRUISE|REFILL|UP, \"\"\n"
"outside PROBE_BW), bw_bps, pacing_bps, cwnd_pkts, inflight_pkts,\n"
"min_rtt_us, rtt_us (this ACK's sample, 0 = none), inflight_lo_pkts,\n"
"inflight_hi_pkts (0 = unset), bw_lo_bps (0 = unset), bw_hi_bps, loss_ppm,\n"
"ce_ppm (of the last completed round), network_rtt_us (bbr_swift, 0 if\n"
"no ETS sample), swift_factor_ppm (0 unless bbr_swift cut since the\n"
"round started), then srtt_us, round, delivered, lost, delivered_ce,\n"
"target_rtt_us, swift_status, ca_state, round_start.\n"
"\n"
"The command sets an enable flag in " PIN_ROOT "/NAME/" PIN_TRACE_CTL "\n"
"and clears it on exit; without a reader the CC pays one load and branch\n"
"per ACK. One reader per CC at a time. The events come from the ring\n"
PIN_ROOT "/NAME/" PIN_TRACE_RB "; events lost to a full ring are counted\n"
"on stderr at exit.\n",
	  O(PER_ACK) | O(CSV) | O(DURATION) | O(OUTPUT) | O(FORCE), false, NULL, cmd_trace },
	{ "params",
"  params NAME [KEY=VALUE...]   show or change the default parameter set\n",
"Usage: bbrctl params [--json] NAME [KEY=VALUE...]\n"
"\n"
"Show, or change, the default parameter set (set 0) of a loaded congestion\n"
"control: the same as `bbrctl set --default NAME [KEY=VALUE...]`. Sockets\n"
"in a cgroup with its own set (`bbrctl set --cgroup`) do not see it.\n"
"See `bbrctl help set` for the keys and their ranges.\n",
	  0, true, "params always works on the default set; use `bbrctl set "
	  "--cgroup PATH NAME` for a cgroup", cmd_params, true },
	{ "set",
"  set --cgroup P|--default|--socket COOKIE NAME [KEY=VALUE...|--reset]\n"
"                         runtime parameters per cgroup, of the default set\n"
"                         or of one live socket\n",
"Usage: bbrctl set [--json] --cgroup PATH NAME [KEY=VALUE...]\n"
"       bbrctl set [--json] --default NAME [KEY=VALUE...]\n"
"       bbrctl set [--json] --socket COOKIE NAME [KEY=VALUE...]\n"
"       bbrctl set --cgroup PATH|--default|--socket COOKIE NAME --reset\n"
"\n"
"Runtime parameters of the loaded congestion control NAME (bbr3, bbr_swift:\n"
"any built on bpf/lib/tcp_cc.h) for one scope:\n"
"  --socket COOKIE  one live socket, in any network namespace (COOKIE: the\n"
"                   COOKIE column of `bbrctl stat`, the socket's SO_COOKIE)\n"
"  --cgroup PATH    the TCP sockets created in cgroup PATH (PATH as for attach)\n"
"  --default        every socket without a set of its own or of its cgroup\n"
"Without KEY=VALUE it shows the set the scope uses and whose it is. The\n"
"first `set` of a socket or cgroup gives it its own parameter set, a copy\n"
"of the set it used until then with KEY=VALUE applied (63 per CC; the sets\n"
"of removed cgroups and closed sockets are reclaimed). --reset hands a\n"
"socket back to its cgroup's set (or the default), a cgroup to the default\n"
"set, and restores the built-in values of the default set.\n"
"\n"
"When: a new socket takes its set at creation. A live socket re-picks its\n"
"cgroup's at every round start, and runs with a set of its own from its\n"
"next ACK; changed values reach the sockets of a set at their next ACK,\n"
"bbr_swift's keys at their next round start. A new build (`bbrctl swap\n"
"NAME`, reload) starts from the defaults.\n"
"\n"
"Values are integers (decimal, or 0x hex); gains and fractions are in\n"
"BBR_UNIT, 256 = 1.0. `bbrctl help keys` lists every key with its range,\n"
"default and meaning (include/bbr_params.h); bbr_swift also reads\n"
"target_rtt_us, stale_us, keep_ecn (or flags, the same bit) and\n"
"raw_samples.\n"
"\n"
"Errors: an unknown key, a key the CC does not read, a value out of range\n"
"or not an integer exits 2 and changes nothing. Example:\n"
"  bbrctl set --cgroup lab/run1 bbr3 ecn_enable=1 beta=128\n"
"  bbrctl set --cgroup lab/run1 bbr_swift target_rtt_us=100\n"
"  bbrctl set --socket 4099 bbr_swift target_rtt_us=250\n",
	  O(CGROUP) | O(DEFAULT) | O(SOCKET) | O(RESET), true, NULL, cmd_set, true },
	{ "attach",
"  attach --cgroup P --cc NAME   new TCP sockets in cgroup P use NAME\n"
"  attach --cgroup P --cc A:W,B:W...   split them across CCs (A/B)\n",
"Usage: bbrctl attach --cgroup PATH --cc NAME\n"
"       bbrctl attach --cgroup PATH --cc NAME:WEIGHT,NAME:WEIGHT...\n"
"\n"
"Every TCP socket created in cgroup PATH from now on, active (connect) and\n"
"passive (listeners and their children), uses congestion control NAME: a\n"
"cgroup sock_ops program (cc_select, built into bbrctl; one instance per\n"
"cgroup) calls setsockopt(TCP_CONGESTION) at connect, listen\n"
"and passive establishment. Its bpf_link is pinned at\n"
PIN_ROOT "/" PIN_CGROUP_DIR "/CGROUP_ID/" PIN_SELECT " and survives bbrctl.\n"
"Several cgroups may have different CCs at once; other sockops programs on\n"
"the cgroup keep running (multi-attach). NAME=bbr_swift also attaches the\n"
"ETS program (ets_sockops, also built in), pinned as .../" PIN_ETS ", and\n"
"fails if it cannot be loaded.\n"
"\n"
"PATH is a cgroup v2 directory: absolute, or relative to the cgroup2 root\n"
"(" CGROUP2_PURE " if it is cgroup2, else " CGROUP2_HYBRID ", which bbrctl\n"
"mounts if nothing is mounted there). Fails (nothing attached) for a bad\n"
"path, a CC that is not registered, or a cgroup that already has one.\n"
"\n"
"Second form, an A/B split: each new TCP connection in PATH gets one of the\n"
"CCs (arms), chosen by a hash of its 4-tuple, with the weights in percent\n"
"(they add up to 100; 2 to 8 arms): `--cc bbr3:50,cubic:50`. A connection\n"
"keeps its arm for its life. Attaching again with the same arms and other\n"
"weights changes the weights for new connections only; other arms need a\n"
"detach first. The split (cc_ab, built in) records every finished\n"
"connection for `bbrctl ab report` and counts per arm for `bbrctl\n"
"metrics`; its link and maps are pinned at .../CGROUP_ID/" PIN_AB "*.\n"
"An arm with a profile is a copy of the CC: `bbrctl load --name bbr3_v3p\n"
"bbr3; bbrctl set --default bbr3_v3p profile=v3plus`, then bbr3_v3p:50.\n",
	  O(CGROUP) | O(CC), false, NULL, cmd_attach, true },
	{ "detach",
"  detach --cgroup P      undo attach\n",
"Usage: bbrctl detach --cgroup PATH\n"
"\n"
"Remove what `bbrctl attach` put on cgroup PATH. Sockets keep the CC they\n"
"already have; new ones get the namespace default again.\n",
	  O(CGROUP), false, NULL, cmd_detach, true },
	{ "ab",
"  ab report --cgroup P [--min-bytes N]   compare the arms of an A/B split\n",
"Usage: bbrctl ab report [--json] --cgroup PATH [--min-bytes N]\n"
"\n"
"Compare the arms of the A/B split on cgroup PATH (`attach --cc A:W,B:W`)\n"
"on the connections that finished since it was attached (the last 65536):\n"
"per arm the number of connections and the mean, with a 95 % interval, of\n"
"  goodput  bytes acknowledged x 8 / the connection's time from\n"
"           establishment to the ACK of its FIN (or its close), over\n"
"           transfers of at least --min-bytes (default 1000000)\n"
"  retrans  retransmitted / sent data segments, per connection\n"
"  srtt     smoothed RTT at the end\n"
"then each arm minus the first with a 95 % interval (Welch); `*` marks an\n"
"interval that excludes 0 with at least 10 connections in each arm.\n"
"JSON: cgroup, min_bytes, generation, finished, kept, and arms: each with\n"
"arm, weight_pct, connections, goodput_bps, retrans_rate, srtt_us ({n, mean,\n"
"ci95}) and vs_first ({diff, ci95, relative, significant}).\n",
	  O(CGROUP) | O(MIN_BYTES), true, NULL, cmd_ab },
	{ "metrics",
"  metrics [--output FILE]   Prometheus text format (node_exporter textfile)\n",
"Usage: bbrctl metrics [--output FILE]\n"
"\n"
"Print the state of the loaded congestion controls in the Prometheus text\n"
"exposition format: per CC and cgroup the sockets, their BBR states, bytes\n"
"acknowledged and retransmitted, ECN and L4S modes, histograms of delivery\n"
"rate, srtt, min_rtt and (bbr_swift) Network_RTT; the ETS counters; per arm\n"
"of each A/B split its counters; bbrctl's own runs. One read of each state\n"
"iterator, as `stat`. --output FILE writes FILE atomically (a temporary\n"
"file renamed over it), for node_exporter's textfile collector:\n"
"  bbrctl metrics --output /var/lib/prometheus/node-exporter/bbr-bpf.prom\n",
	  O(OUTPUT), false, NULL, cmd_metrics },
	{ "swap",
"  swap [--obj PATH] NAME replace a loaded CC in place with a new build\n"
"  swap --from A --to B [--port N] [--cgroup P] [--netns NS]\n"
"                         switch live sockets from CC A to CC B\n",
"Usage: bbrctl swap [--obj PATH] NAME\n"
"       bbrctl swap --from CC --to CC [--port N] [--cgroup PATH] [--netns NS] [--json]\n"
"\n"
"First form: replace the loaded NAME in place with a new build (PATH, or\n"
"OBJDIR/NAME.bpf.o, or for a copy made with `load --name NAME ORIG`,\n"
"ORIG's object) by updating its pinned struct_ops link, under\n"
"the same name and with the ECN flags it was loaded with (--ecn).\n"
"New sockets get the new build, existing ones\n"
"keep the old one until they close or switch; network namespace defaults\n"
"naming NAME are rewritten so they point at the new build.\n"
"\n"
"Second form: switch live sockets that use CC --from to CC --to with a TCP\n"
"socket iterator (cc_swap, built into bbrctl) calling setsockopt(TCP_CONGESTION).\n"
"Filters: --port N (local or remote port), --cgroup PATH (sockets created\n"
"in that cgroup), --netns NS (sockets of /run/netns/NS; default: bbrctl's\n"
"own netns). Prints one line per matching socket (cookie and result) and a\n"
"summary: switched, failed, TIME_WAIT and request sockets skipped (they are\n"
"not full sockets and cannot be switched). Exit 1 if any switch failed.\n",
	  O(OBJ) | O(FROM) | O(TO) | O(PORT) | O(CGROUP) | O(NETNS), true, NULL,
	  cmd_swap, true },
	{ "hwtstamp",
"  hwtstamp enable|disable|status IFACE   NIC RX hardware timestamps (ETS)\n",
"Usage: bbrctl hwtstamp enable|disable|status IFACE\n"
"\n"
"NIC receive hardware timestamps for the ETS sockops program (docs/ets.md,\n"
"\"Clocks\"). IFACE is an interface of bbrctl's network namespace.\n"
"  enable   save the device's current configuration (SIOCGHWTSTAMP) under\n"
"           /run/bbr-bpf/hwtstamp/IFACE, unless one is saved already, then\n"
"           set rx_filter HWTSTAMP_FILTER_ALL keeping tx_type (SIOCSHWTSTAMP)\n"
"  disable  restore the saved configuration and remove the saved file\n"
"  status   print tx_type, rx_filter and flags, and the saved ones if any\n"
"\n"
"A device without hardware timestamping (veth, virtio_net, lo) is reported\n"
"as such: exit 1, nothing saved. The BPF side uses NIC stamps only once a\n"
"NIC->host clock offset is published in ets_cfg (not yet done by bbrctl);\n"
"until then ETS keeps the host clock. Example:\n"
"  bbrctl hwtstamp enable eth0 && bbrctl hwtstamp status eth0\n",
	  0, false, NULL, cmd_hwtstamp },
	{ "ect1",
"  ect1 attach|detach|status [--netns NS] IFACE | prune   ECT(1) on L4S data (egress)\n",
"Usage: bbrctl ect1 attach [--netns NS] IFACE\n"
"       bbrctl ect1 detach [--netns NS] IFACE | NETNS-IFINDEX\n"
"       bbrctl ect1 status [--json] [--netns NS] [IFACE]\n"
"       bbrctl ect1 prune\n"
"\n"
"Send the data of L4S connections leaving IFACE as ECT(1), the codepoint\n"
"an L4S AQM classifies by. A copy loaded with `load --ecn accecn` gets\n"
"ECT(1) on its handshake only: Linux 6.18 sends established data as\n"
"ECT(0) (docs/l4s.md). ect1 (built into bbrctl) is a tcx egress program\n"
"that rewrites, on TCP packets carrying ECT(0),\n"
"  - to ECT(1) those of sockets whose CC has TCP_CONG_ECT_1_NEGOTIATION and\n"
"    whose handshake negotiated AccECN;\n"
"  - to Not-ECT those of sockets whose CC has TCP_CONG_NEEDS_ECN but whose\n"
"    handshake negotiated no ECN (after the handshake).\n"
"Everything else, Not-ECT and CE pass as they were. IPv4 and IPv6;\n"
"Ethernet devices and IP devices such as tun.\n"
"\n"
"  attach  attach it to IFACE's egress (one per device), the bpf_link pinned\n"
"          at " PIN_ECT1 "/NETNS-IFINDEX; fails if IFACE already has it\n"
"  detach  remove it; NETNS-IFINDEX (from status) for a device that is gone\n"
"  status  the attachments (of IFACE, or all): network namespace cookie,\n"
"          ifindex, device name (in bbrctl's namespace), state (attached,\n"
"          gone: the device was removed, broken), and of the packets of\n"
"          those sockets: rewritten (ECT(1)), cleared (Not-ECT), left alone\n"
"  prune   remove the pins of every device that is gone (state gone or\n"
"          broken), in any network namespace; those of live devices stay\n"
"\n"
"IFACE is a device of bbrctl's network namespace, or of /run/netns/NS.\n"
"Example (the sender's side of a path):\n"
"  bbrctl load bbr3_l4s\n"
"  bbrctl ect1 attach eth0\n",
	  O(NETNS), true, NULL, cmd_ect1, true },
	{ "help",
"  help [COMMAND]         this text, or the help of one command; `help keys`:\n"
"                         the parameter keys of set and params\n",
"Usage: bbrctl help [COMMAND | keys]\n",
	  0, false, NULL, cmd_help },
};
#define N_COMMANDS	(sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void usage_main(FILE *f)
{
	fprintf(f,
"Usage: bbrctl [OPTIONS] COMMAND [COMMAND OPTIONS] [ARGS]\n"
"\n"
"Load, unload and inspect the bbr-bpf TCP congestion controls (BPF\n"
"struct_ops programs). Every command except help needs root (CAP_BPF and\n"
"CAP_PERFMON, or CAP_SYS_ADMIN).\n"
"\n"
"Commands (`bbrctl help COMMAND` for each one's options):\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fputs(commands[i].synopsis, f);
	fprintf(f,
"\n"
"Options of every command, before or after it:\n"
"  --objdir DIR    where NAME.bpf.o objects are looked up; default: ../bpf\n"
"                  next to the bbrctl binary if that exists, else\n"
"                  " DEFAULT_OBJDIR " (here: %s)\n"
"  -j, --json      JSON on stdout (list, stat, top, params, set, swap, ect1, ab)\n"
"  -p, --pretty    indent the JSON\n"
"  -v, --verbose   more messages; twice: libbpf debug output\n"
"  -h, --help      help; `bbrctl COMMAND --help` for one command\n"
"  -V, --version   print the version\n"
"\n"
"bpffs layout (bpffs is mounted at " BPFFS_MOUNT " if nothing is mounted there):\n"
"  " PIN_ROOT "/NAME/" PIN_LINK "\n"
"      the pinned struct_ops link: NAME stays registered while it exists\n"
"  " PIN_ROOT "/NAME/" PIN_ITER "\n"
"      the pinned iterator link of dump_NAME_state over the map NAME_sk_stor\n"
"      (if the object has them); reading it yields one struct\n"
"      bbr3_state_rec per socket\n"
"\n"
"Object conventions: NAME.bpf.o holds one SEC(\".struct_ops.link\") map named\n"
"NAME whose struct tcp_congestion_ops has .name = \"NAME\" (at most 15\n"
"characters); optionally the iterator program dump_NAME_state, the\n"
"sk_storage map NAME_sk_stor and the runtime parameter sets of\n"
"bpf/lib/tcp_cc.h (bbr_param_sets in section .data.params, map param_cgrp).\n"
"\n"
"Exit status: 0 success, 1 failure (nothing is left half-loaded), 2 usage.\n"
"See docs/bbrctl.md.\n", resolve_objdir());
}

static int cmd_help(const struct cmd_opts *o, char **args, int nargs)
{
	const struct command *c;

	(void)o;
	if (nargs == 0) {
		usage_main(stdout);
		return EXIT_OK;
	}
	if (strcmp(args[0], "keys") == 0) {
		print_param_keys(stdout);
		return EXIT_OK;
	}
	c = find_command(args[0]);
	if (!c || nargs > 1) {
		err("help: unknown command \"%s\"", args[nargs > 1 ? 1 : 0]);
		return EXIT_USAGE;
	}
	fputs(c->help, stdout);
	return EXIT_OK;
}

/* ---- parsing ----------------------------------------------------------------------- */

/* The options a command takes, with --json as one more bit. */
#define O_JSON_BIT	(1u << N_OPTS)
static unsigned int takes(const struct command *c)
{
	return c->opts | (c->json ? O_JSON_BIT : 0);
}

/* "set", "attach, detach, set and swap": the commands that take bit. */
static void commands_taking(unsigned int bit, char *buf, size_t len)
{
	size_t n = 0, k = 0, used = 0;

	for (size_t i = 0; i < N_COMMANDS; i++)
		n += !!(takes(&commands[i]) & bit);
	buf[0] = '\0';
	for (size_t i = 0; i < N_COMMANDS && used < len; i++) {
		if (!(takes(&commands[i]) & bit))
			continue;
		k++;
		used += snprintf(buf + used, len - used, "%s%s",
				 k == 1 ? "" : k == n ? " and " : ", ", commands[i].name);
	}
}

/* An option getopt refused: what it is, and where it belongs. */
static int bad_option(const struct command *cmd, const char *arg, int c, int optc)
{
	const char *who = cmd ? cmd->name : "bbrctl";
	char name[64], where[128];

	if (c == ':') {
		err("%s: %s needs a value", who, arg);
		return EXIT_USAGE;
	}
	if (optc) {
		err("%s: unknown option -%c (try `bbrctl %s --help`)", who, optc,
		    cmd ? cmd->name : "");
		return EXIT_USAGE;
	}
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
	for (int id = 0; id < N_OPTS; id++) {
		if (strcmp(cmd_options[id].name, name))
			continue;
		commands_taking(1u << id, where, sizeof(where));
		if (!cmd)
			err("--%s is an option of %s: give it after the command", name, where);
		else
			err("%s: --%s is only for %s%s%s", who, name, where,
			    cmd->hint ? "; " : "", cmd->hint ? cmd->hint : "");
		return EXIT_USAGE;
	}
	err("%s: unknown option %s (try `bbrctl %s --help`)", who, arg,
	    cmd ? cmd->name : "");
	return EXIT_USAGE;
}

/* getopt_long takes any unambiguous prefix of a long option (--obj for
 * --objdir): only the whole name counts here. */
static bool abbreviated(const struct option *lo, char **argv, const char **typed)
{
	size_t n = strlen(lo->name);

	*typed = argv[optind - 1];
	if (lo->has_arg == required_argument && optarg == argv[optind - 1])
		*typed = argv[optind - 2];	/* --opt VALUE */
	return strncmp(*typed + 2, lo->name, n) ||
	       ((*typed)[2 + n] && (*typed)[2 + n] != '=');
}

/*
 * The options in argv: those of every command and, with a command, its
 * own. Without one (the options before the command) parsing stops at the
 * first argument that is not an option, the command's name. Returns 0 with
 * optind at the first argument, or EXIT_USAGE after a message.
 */
static int parse_opts(const struct command *cmd, int argc, char **argv,
		      struct cmd_opts *o, bool *help, bool *version)
{
	static unsigned int seen;	/* the command options given so far */
	struct option lo[N_COMMON + N_OPTS + 1];
	const char *typed;
	size_t n = 0;
	int c, idx;

	for (size_t i = 0; i < N_COMMON; i++)
		lo[n++] = common_options[i];
	for (int id = 0; cmd && id < N_OPTS; id++)
		if (cmd->opts & (1u << id))
			lo[n++] = cmd_options[id];
	memset(&lo[n], 0, sizeof(lo[n]));
	optind = 0;		/* a fresh scan (GNU) */
	opterr = 0;		/* bad_option() says what is wrong */
	while (idx = -1, (c = getopt_long(argc, argv, cmd ? ":jpvhV" : "+:jpvhV",
					    lo, &idx)) != -1) {
		if (idx >= 0 && c != '?' && c != ':' && abbreviated(&lo[idx], argv, &typed))
			return bad_option(cmd, typed, '?', 0);
		switch (c) {
		case OPT_OBJDIR:
			g_opts.objdir = optarg;
			break;
		case 'j':
			g_opts.json = true;
			break;
		case 'p':
			g_opts.pretty = g_opts.json = true;
			break;
		case 'v':
			g_opts.verbose++;
			break;
		case 'h':
			*help = true;
			break;
		case 'V':
			*version = true;
			break;
		case '?':
		case ':':
			return bad_option(cmd, argv[optind - 1], c, optopt);
		default:
			/* the last of two would win silently: refuse */
			if (c - OPT_BASE != O_OBJ && (seen & (1u << (c - OPT_BASE)))) {
				err("%s: --%s given twice", cmd ? cmd->name : "bbrctl",
				    cmd_options[c - OPT_BASE].name);
				return EXIT_USAGE;
			}
			seen |= 1u << (c - OPT_BASE);
			if (set_cmd_opt(c - OPT_BASE, optarg, o))
				return EXIT_USAGE;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct command *cmd = NULL;
	struct cmd_opts o = { 0 };
	bool help = false, version = false;
	int ret;

	o.objs = calloc(argc, sizeof(*o.objs));
	if (!o.objs) {
		err("out of memory");
		return EXIT_FAIL;
	}
	ret = parse_opts(NULL, argc, argv, &o, &help, &version);
	if (!ret && optind < argc) {
		cmd = find_command(argv[optind]);
		if (!cmd) {
			err("unknown command \"%s\" (try `bbrctl --help`)", argv[optind]);
			return EXIT_USAGE;
		}
		argc -= optind;
		argv += optind;
		ret = parse_opts(cmd, argc, argv, &o, &help, &version);
	}
	if (ret)
		return ret;
	if (version) {
		printf("bbrctl %s (libbpf %s)\n", BBRCTL_VERSION, libbpf_version_string());
		return EXIT_OK;
	}
	if (!cmd || help) {
		if (cmd)
			fputs(cmd->help, stdout);
		else
			usage_main(help ? stdout : stderr);
		return help ? EXIT_OK : EXIT_USAGE;
	}
	if (g_opts.json && !cmd->json) {
		char where[128];

		commands_taking(O_JSON_BIT, where, sizeof(where));
		err("%s: --json is only for %s", cmd->name, where);
		return EXIT_USAGE;
	}
	if (!g_opts.objdir)
		g_opts.objdir = resolve_objdir();
	setup_libbpf_logging();
	/* Privileges first: an unprivileged run must hear "permission
	 * denied ... root", not a failure to open root's lock file. */
	if (cmd->changes && (check_privileges(cmd->name) || bbrctl_lock(cmd->name)))
		return EXIT_FAIL;
	ret = cmd->run(&o, argv + optind, argc - optind);
	if (cmd->changes)	/* under the lock: `metrics` reports them */
		events_count(cmd->name, ret == EXIT_OK);
	free(o.objs);
	return ret;
}
