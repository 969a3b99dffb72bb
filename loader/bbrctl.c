// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl: the operator tool of bbr-bpf. Loads the project's congestion
 * controls (BPF struct_ops objects) into the kernel, keeps them registered
 * by pinning their links on bpffs, removes them again, and shows what is
 * loaded and the per-socket state their iterators export.
 *
 * Uses only libbpf's generic object API (no skeletons): see
 * docs/bbrctl.md and /work/shared/docs/kernel-bpf-facts.md §1.6, §3.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "num.h"

struct opts g_opts;

/* ---- help ------------------------------------------------------------------ */

static void usage_main(FILE *f)
{
	fprintf(f,
"Usage: bbrctl [OPTIONS] COMMAND [ARGS]\n"
"\n"
"Load, unload and inspect the bbr-bpf TCP congestion controls (BPF\n"
"struct_ops programs). Every command except help needs root (CAP_BPF and\n"
"CAP_PERFMON, or CAP_SYS_ADMIN).\n"
"\n"
"Commands:\n"
"  load NAME... | all     load NAME.bpf.o from the object directory, register\n"
"                         the congestion control and pin it (all or nothing)\n"
"  load --obj PATH...     the same for explicit object files\n"
"  unload NAME... | all   unregister and remove the pins\n"
"  list                   the congestion controls bbrctl has loaded\n"
"  stat [NAME...]         one row per socket from the state iterators\n"
"  top [--interval S] [--count N] [NAME...]   stat as a refreshing table\n"
"  trace [NAME...] [--per-ack] [--csv] [--duration S] [--output FILE]\n"
"                         stream model events (per round, per ACK)\n"
"  params NAME [KEY=VALUE...]   show or change the default parameter set\n"
"  set --cgroup P|--default|--socket COOKIE NAME [KEY=VALUE...|--reset]\n"
"                         runtime parameters per cgroup (gains, thresholds,\n"
"                         ecn_enable, bbr_swift's target_rtt_us) or per\n"
"                         bbr_swift socket (target_rtt_us)\n"
"  hwtstamp enable|disable|status IFACE   NIC RX hardware timestamps (ETS)\n"
"  attach --cgroup P --cc NAME   new TCP sockets in cgroup P use NAME\n"
"  detach --cgroup P      undo attach\n"
"  swap [--obj PATH] NAME replace a loaded CC in place with a new build\n"
"  swap --from A --to B [--port N] [--cgroup P] [--netns NS]\n"
"                         switch live sockets from CC A to CC B\n"
"  help [COMMAND]         this text, or the help of one command\n"
"\n"
"Options:\n"
"  --objdir DIR    where NAME.bpf.o objects are looked up; default: ../bpf\n"
"                  next to the bbrctl binary if that exists, else\n"
"                  " DEFAULT_OBJDIR " (here: %s)\n"
"  --obj PATH      load the congestion control in PATH (repeatable; load only)\n"
"  --cgroup PATH, --cc NAME, --from CC, --to CC, --port N, --netns NS\n"
"                  arguments of attach, detach and swap (see their help)\n"
"  --default, --socket COOKIE, --reset   arguments of set (see its help)\n"
"  -j, --json      JSON on stdout (list, stat, top, params, set, swap)\n"
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
"characters); optionally the iterator program dump_NAME_state\n"
"(SEC(\"iter/bpf_sk_storage_map\")), the sk_storage map NAME_sk_stor and\n"
"runtime parameter sets, an array bbr_param_sets in section .data.params, with\n"
"a hash map param_cgrp (cgroup id -> set), as bpf/lib/tcp_cc.h defines them.\n"
"\n"
"Exit status: 0 success, 1 failure (nothing is left half-loaded), 2 usage.\n"
"See docs/bbrctl.md.\n", resolve_objdir());
}

struct cmd_help {
	const char *name;
	const char *text;
};

static const struct cmd_help cmd_helps[] = {
	{ "load",
"Usage: bbrctl load [--objdir DIR] NAME... | all\n"
"       bbrctl load --obj PATH [--obj PATH...] [NAME...]\n"
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
"Fails if NAME is already loaded by bbrctl, if a congestion control of\n"
"that name is registered by the kernel or another loader, if the object\n"
"is missing, or if the kernel refuses it.\n" },
	{ "unload",
"Usage: bbrctl unload NAME... | all\n"
"\n"
"Detach the struct_ops link (the congestion control leaves\n"
PROC_AVAIL_CC "),\n"
"remove the pins and " PIN_ROOT "/NAME, and check that the name is gone.\n"
"Sockets that use NAME keep running its programs until they close; the\n"
"kernel frees the programs after the last one. `unload all` with nothing\n"
"loaded succeeds.\n" },
	{ "list",
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
"sockets (null if unknown) and state_iter.\n" },
	{ "stat",
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
"bw (BW_UNIT) and bw_bps (bit/s).\n" },
	{ "params",
"Usage: bbrctl params [--json] NAME [KEY=VALUE...]\n"
"\n"
"Show, or change, the default parameter set (set 0) of a loaded congestion\n"
"control: the same as `bbrctl set --default NAME [KEY=VALUE...]`. Sockets\n"
"in a cgroup with its own set (`bbrctl set --cgroup`) do not see it.\n"
"See `bbrctl help set` for the keys and their ranges.\n" },
	{ "set",
"Usage: bbrctl set [--json] --cgroup PATH NAME [KEY=VALUE...]\n"
"       bbrctl set [--json] --default NAME [KEY=VALUE...]\n"
"       bbrctl set [--json] --socket COOKIE bbr_swift [KEY=VALUE...]\n"
"       bbrctl set --cgroup PATH NAME --reset\n"
"       bbrctl set --default NAME --reset\n"
"       bbrctl set --socket COOKIE bbr_swift --reset\n"
"\n"
"Runtime parameters of the loaded congestion control NAME (bbr3, bbr_swift)\n"
"for the TCP sockets created in cgroup PATH, or with --default for the\n"
"sockets of every cgroup without its own parameters. Without KEY=VALUE it\n"
"shows the values in force for that scope. A cgroup's first `set` gives it\n"
"its own parameter set, a copy of the default set with KEY=VALUE applied\n"
"(at most 63 cgroups per CC; sets of removed cgroups are reclaimed).\n"
"--reset removes the cgroup's entry (its sockets return to the default\n"
"set), or with --default restores the built-in defaults.\n"
"\n"
"--socket COOKIE (the COOKIE column of `bbrctl stat bbr_swift`): bbr_swift's\n"
"own keys for that one live socket, in any network namespace; they come\n"
"before its cgroup's and the default ones. Keys not given keep the values\n"
"the socket uses now. --reset removes the socket's entry.\n"
"\n"
"Live sockets pick up a change at their next round trip; new sockets at\n"
"creation. A new build (`bbrctl swap NAME`, reload) starts from defaults.\n"
"PATH: as for attach. Values are integers (decimal or 0x hex); gains and\n"
"fractions are in BBR_UNIT, 256 = 1.0.\n"
"\n"
"Keys: `bbrctl help keys` lists every key with its range, default and\n"
"meaning (include/bbr_params.h).\n"
"bbr_swift only (its pinned map swift_cgrp_cfg, same cgroup id):\n"
"  target_rtt_us 0..3600000000 (0 = no target)  stale_us 0..3600000000\n"
"  keep_ecn 0..1 (or flags 0..1, the same bit of struct swift_cfg)\n"
"\n"
"Errors: an unknown key, a value out of range or not an integer exits 2\n"
"and changes nothing. Example:\n"
"  bbrctl set --cgroup lab/run1 bbr3 ecn_enable=1 beta=128\n"
"  bbrctl set --cgroup lab/run1 bbr_swift target_rtt_us=100\n"
"  bbrctl set --socket 4099 bbr_swift target_rtt_us=250\n" },
	{ "top",
"Usage: bbrctl top [--interval S] [--count N] [--json] [NAME...]\n"
"\n"
"`stat` repeated every --interval seconds (default 1, 0.1..3600) as a\n"
"refreshing table with a time header; --count N stops after N screens\n"
"(default: until interrupted). With --json one array per refresh, one per\n"
"line, and no screen clearing.\n" },
	{ "trace",
"Usage: bbrctl trace [NAME...] [--per-ack] [--csv] [--duration S] [--output FILE]\n"
"\n"
"Stream the model events of the loaded congestion controls NAME (default:\n"
"every loaded one with a trace ring) until SIGINT/SIGTERM or S seconds,\n"
"then flush and exit 0. One event per round trip per socket plus one on\n"
"every mode/PROBE_BW phase change; --per-ack: one per ACK. Output: JSON\n"
"lines (one object per line), or CSV with a header (--csv), on stdout or\n"
"in FILE; nothing else is written to stdout (messages go to stderr).\n"
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
"on stderr at exit.\n" },
	{ "attach",
"Usage: bbrctl attach --cgroup PATH --cc NAME\n"
"\n"
"Every TCP socket created in cgroup PATH from now on, active (connect) and\n"
"passive (listeners and their children), uses congestion control NAME: a\n"
"cgroup sock_ops program (cc_select.bpf.o from the object directory, one\n"
"instance per cgroup) calls setsockopt(TCP_CONGESTION) at connect, listen\n"
"and passive establishment. Its bpf_link is pinned at\n"
PIN_ROOT "/" PIN_CGROUP_DIR "/CGROUP_ID/" PIN_SELECT " and survives bbrctl.\n"
"Several cgroups may have different CCs at once; other sockops programs on\n"
"the cgroup keep running (multi-attach). NAME=bbr_swift also attaches the\n"
"ETS program (ets.bpf.o, ets_sockops), pinned as .../" PIN_ETS ", and fails\n"
"if it is unavailable.\n"
"\n"
"PATH is a cgroup v2 directory: absolute, or relative to the cgroup2 root\n"
"(" CGROUP2_PURE " if it is cgroup2, else " CGROUP2_HYBRID ", which bbrctl\n"
"mounts if nothing is mounted there). Fails (nothing attached) for a bad\n"
"path, a CC that is not registered, or a cgroup that already has one.\n" },
	{ "detach",
"Usage: bbrctl detach --cgroup PATH\n"
"\n"
"Remove what `bbrctl attach` put on cgroup PATH. Sockets keep the CC they\n"
"already have; new ones get the namespace default again.\n" },
	{ "swap",
"Usage: bbrctl swap [--obj PATH] NAME\n"
"       bbrctl swap --from CC --to CC [--port N] [--cgroup PATH] [--netns NS] [--json]\n"
"\n"
"First form: replace the loaded NAME in place with a new build (PATH, or\n"
"OBJDIR/NAME.bpf.o) by updating its pinned struct_ops link; the new object\n"
"must register the same name. New sockets get the new build, existing ones\n"
"keep the old one until they close or switch; network namespace defaults\n"
"naming NAME are rewritten so they point at the new build.\n"
"\n"
"Second form: switch live sockets that use CC --from to CC --to with a TCP\n"
"socket iterator (cc_swap.bpf.o) calling setsockopt(TCP_CONGESTION).\n"
"Filters: --port N (local or remote port), --cgroup PATH (sockets created\n"
"in that cgroup), --netns NS (sockets of /run/netns/NS; default: bbrctl's\n"
"own netns). Prints one line per matching socket (cookie and result) and a\n"
"summary: switched, failed, TIME_WAIT and request sockets skipped (they are\n"
"not full sockets and cannot be switched). Exit 1 if any switch failed.\n" },
	{ "hwtstamp",
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
"  bbrctl hwtstamp enable eth0 && bbrctl hwtstamp status eth0\n" },
	{ "help",
"Usage: bbrctl help [COMMAND]\n" },
};

static const struct cmd_help *find_help(const char *cmd)
{
	for (size_t i = 0; i < sizeof(cmd_helps) / sizeof(cmd_helps[0]); i++)
		if (strcmp(cmd_helps[i].name, cmd) == 0)
			return &cmd_helps[i];
	return NULL;
}

/* ---- load ------------------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n > m && strcmp(s + n - m, suf) == 0;
}

/* NAMEs of the NAME.bpf.o files in dir, sorted. */
static int objdir_names(const char *dir, char ***out)
{
	char **names = NULL;
	struct dirent **ents = NULL;
	int n, cnt = 0;

	*out = NULL;
	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0)
		return -errno;
	names = calloc(n ? n : 1, sizeof(*names));
	for (int i = 0; i < n; i++) {
		const char *d = ents[i]->d_name;

		if (names && has_suffix(d, OBJ_SUFFIX) && d[0] != '.') {
			names[cnt] = strndup(d, strlen(d) - strlen(OBJ_SUFFIX));
			if (names[cnt])
				cnt++;
		}
		free(ents[i]);
	}
	free(ents);
	if (!names)
		return -ENOMEM;
	*out = names;
	return cnt;
}

static void hint_objdir(void)
{
	char **names;
	int n = objdir_names(g_opts.objdir, &names);

	if (n < 0) {
		fprintf(stderr, "bbrctl: object directory %s: %s (set it with "
			"--objdir, or use --obj PATH)\n", g_opts.objdir,
			strerror(-n));
		return;
	}
	fprintf(stderr, "bbrctl: objects in %s:", g_opts.objdir);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %s", names[i]);
	fprintf(stderr, "%s\n", n ? "" : " (none)");
	free_names(names, n);
}

/* Is path an object with a struct_ops map? Quietly. */
static bool is_cc_object(const char *path)
{
	struct bpf_object *obj;
	struct bpf_map *map;
	bool yes = false;

	libbpf_set_print(NULL);
	obj = bpf_object__open_file(path, NULL);
	setup_libbpf_logging();
	if (!obj)
		return false;
	bpf_object__for_each_map(map, obj)
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS)
			yes = true;
	bpf_object__close(obj);
	return yes;
}

static int preflight(const struct cc_target *t)
{
	char dir[PATH_MAX];
	struct stat st;
	int avail = cc_available(t->name);

	snprintf(dir, sizeof(dir), PIN_CC_FMT, t->name);
	if (stat(dir, &st) == 0) {
		if (avail == 1)
			err("%s is already loaded by bbrctl (%s); run `bbrctl "
			    "unload %s` first", t->name, dir, t->name);
		else
			err("%s has stale pins in %s but is not registered; run "
			    "`bbrctl unload %s` to clean up", t->name, dir, t->name);
		return -1;
	}
	if (avail == 1) {
		err("a congestion control named %s is already registered (a "
		    "kernel module or another loader, see %s); bbrctl will not "
		    "replace it", t->name, PROC_AVAIL_CC);
		return -1;
	}
	if (avail < 0) {
		err("cannot read %s", PROC_AVAIL_CC);
		return -1;
	}
	return 0;
}

static uint32_t map_id_of(struct bpf_map *map)
{
	struct bpf_map_info mi;
	__u32 len = sizeof(mi);

	memset(&mi, 0, sizeof(mi));
	if (bpf_map_get_info_by_fd(bpf_map__fd(map), &mi, &len))
		return 0;
	return mi.id;
}

static int cmd_load(char **args, int nargs)
{
	struct cc_target *t = NULL;
	char **names = NULL;
	int nnames = 0, nt = 0, i, ret = EXIT_FAIL, loaded = 0;
	sigset_t block, old;
	bool all = nargs == 1 && strcmp(args[0], "all") == 0;

	if (nargs == 0 && g_opts.nobjs == 0) {
		err("load: name a congestion control, `all`, or --obj PATH");
		return EXIT_USAGE;
	}
	if (all && g_opts.nobjs) {
		err("load: `all` and --obj do not go together");
		return EXIT_USAGE;
	}
	for (i = 0; i < nargs && !all; i++) {
		if (strcmp(args[i], "all") == 0) {
			err("load: `all` must be the only argument");
			return EXIT_USAGE;
		}
		if (!valid_cc_name(args[i])) {
			err("load: invalid congestion control name \"%s\" "
			    "(1-%d letters, digits, '_', '-', '.')",
			    args[i], CC_NAME_MAX);
			return EXIT_USAGE;
		}
	}
	if (g_opts.nobjs && nargs && g_opts.nobjs != nargs) {
		err("load: with --obj, give either no NAMEs or one NAME per --obj");
		return EXIT_USAGE;
	}
	if (check_privileges("load") || check_kernel_btf() ||
	    check_struct_ops_cc())
		return EXIT_FAIL;

	if (all) {
		nnames = objdir_names(g_opts.objdir, &names);
		if (nnames < 0) {
			err("load all: cannot read object directory %s: %s",
			    g_opts.objdir, strerror(-nnames));
			return EXIT_FAIL;
		}
	}

	t = calloc((size_t)(all ? nnames : nargs) + g_opts.nobjs, sizeof(*t));
	if (!t) {
		err("out of memory");
		goto out;
	}
	/* Open (parse) everything first: no kernel state changes yet. */
	for (i = 0; i < g_opts.nobjs; i++) {
		/* With --obj, NAMEs select the map in the objects, in order. */
		const char *want = !all && i < nargs && g_opts.nobjs == nargs ?
				   args[i] : NULL;

		if (cc_open(&t[nt], g_opts.objs[i], want))
			goto out;
		nt++;
	}
	if (!g_opts.nobjs) {
		int n = all ? nnames : nargs;

		for (i = 0; i < n; i++) {
			const char *name = all ? names[i] : args[i];
			char path[PATH_MAX];

			if (cc_object_path(path, sizeof(path), name)) {
				err("object path too long");
				goto out;
			}
			if (all && !is_cc_object(path)) {
				dbg("%s: no congestion control, skipped", path);
				continue;
			}
			if (!all && access(path, F_OK) != 0) {
				err("%s: object not found: %s", name, path);
				hint_objdir();
				goto out;
			}
			if (cc_open(&t[nt], path, name))
				goto out;
			nt++;
		}
		if (all && nt == 0) {
			err("load all: no congestion control objects in %s",
			    g_opts.objdir);
			goto out;
		}
	}
	for (i = 0; i < nt; i++)
		for (int k = 0; k < i; k++)
			if (strcmp(t[i].name, t[k].name) == 0) {
				err("load: %s given twice (%s, %s)", t[i].name,
				    t[k].path, t[i].path);
				ret = EXIT_USAGE;
				goto out;
			}
	for (i = 0; i < nt; i++)
		if (preflight(&t[i]))
			goto out;
	if (ensure_bpffs())
		goto out;

	/* No half-done state if interrupted: signals wait until we are done. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigprocmask(SIG_BLOCK, &block, &old);
	for (i = 0; i < nt; i++) {
		if (cc_attach(&t[i]))
			break;
		loaded++;
	}
	if (loaded < nt) {
		for (i = loaded - 1; i >= 0; i--) {
			cc_rollback(&t[i]);
			info("%s: unloaded again (all or nothing)", t[i].name);
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (loaded < nt)
		goto out;

	for (i = 0; i < nt; i++)
		printf("loaded %s from %s (struct_ops map id %u%s), pinned at "
		       "%s/%s\n", t[i].name, t[i].path, map_id_of(t[i].st_map),
		       t[i].iter_link ? ", state iterator" : "", PIN_ROOT,
		       t[i].name);
	ret = EXIT_OK;
out:
	for (i = 0; t && i < nt; i++)
		cc_close(&t[i]);
	free(t);
	free_names(names, nnames);
	return ret;
}

/* ---- unload ----------------------------------------------------------------- */

/*
 * Maps pinned by name under PIN_ROOT/shared (the ETS storage and Swift's
 * target config) are shared by the CC objects and the ETS sockops program.
 * Once no CC is loaded by bbrctl and no cgroup attachment remains, nothing
 * can use them any more: unpin them so an unload leaves bpffs clean.
 */
static void release_shared_pins(void)
{
	char dir[PATH_MAX], path[PATH_MAX + NAME_MAX + 2];
	char **names = NULL;
	struct dirent *de;
	DIR *d;
	int n;

	n = list_pinned_names(&names);
	free_names(names, n > 0 ? n : 0);
	if (n != 0)
		return;
	snprintf(dir, sizeof(dir), PIN_CC_FMT, PIN_CGROUP_DIR);
	if (rmdir(dir) != 0 && errno != ENOENT)
		return;			/* attachments remain */
	snprintf(dir, sizeof(dir), PIN_CC_FMT, PIN_SHARED_DIR);
	d = opendir(dir);
	if (d) {
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (unlink(path) != 0)
				warn("cannot unpin %s: %s", path, strerror(errno));
		}
		closedir(d);
		rmdir(dir);
	}
	rmdir(PIN_ROOT);		/* fails harmlessly when not empty */
}

static int cmd_unload(char **args, int nargs)
{
	char **names = NULL;
	int n = 0, ret = EXIT_OK, i;
	bool all = nargs == 1 && strcmp(args[0], "all") == 0;

	if (nargs == 0) {
		err("unload: name a congestion control or `all`");
		return EXIT_USAGE;
	}
	for (i = 0; i < nargs && !all; i++) {
		if (strcmp(args[i], "all") == 0) {
			err("unload: `all` must be the only argument");
			return EXIT_USAGE;
		}
		if (!valid_cc_name(args[i])) {
			err("unload: invalid congestion control name \"%s\"", args[i]);
			return EXIT_USAGE;
		}
	}
	if (check_privileges("unload"))
		return EXIT_FAIL;
	warn_if_bpffs_hidden();

	if (all) {
		n = list_pinned_names(&names);
		if (n < 0)
			return EXIT_FAIL;
		if (n == 0)
			printf("nothing to unload\n");
		for (i = 0; i < n; i++)
			if (cc_unload_pinned(names[i]))
				ret = EXIT_FAIL;
		free_names(names, n);
		release_shared_pins();
		return ret;
	}
	/* Check every name first, so a typo unloads nothing. */
	for (i = 0; i < nargs; i++) {
		char dir[PATH_MAX];
		struct stat st;

		snprintf(dir, sizeof(dir), PIN_CC_FMT, args[i]);
		if (stat(dir, &st) == 0)
			continue;
		if (cc_available(args[i]) == 1)
			err("%s is not loaded by bbrctl (no %s); it is registered "
			    "by the kernel or another loader, and bbrctl leaves it "
			    "alone", args[i], dir);
		else
			err("%s is not loaded (no %s)", args[i], dir);
		ret = EXIT_FAIL;
	}
	if (ret != EXIT_OK)
		return ret;
	for (i = 0; i < nargs; i++)
		if (cc_unload_pinned(args[i]))
			ret = EXIT_FAIL;
	release_shared_pins();
	return ret;
}

/* ---- list -------------------------------------------------------------------- */

static const char *state_word(const struct cc_info *ci)
{
	if (!ci->has_link)
		return "broken";	/* no usable link pin */
	if (!ci->map_id)
		return "detached";	/* the link exists, nothing behind it */
	if (ci->registered == 1)
		return "registered";
	return "stale";
}

static int cmd_list(char **args, int nargs)
{
	char **names = NULL;
	struct cc_info *infos = NULL;
	int n, i;
	struct json j;
	(void)args;

	if (nargs) {
		err("list: takes no arguments");
		return EXIT_USAGE;
	}
	if (check_privileges("list"))
		return EXIT_FAIL;
	warn_if_bpffs_hidden();
	n = list_pinned_names(&names);
	if (n < 0)
		return EXIT_FAIL;
	infos = calloc(n ? n : 1, sizeof(*infos));
	if (!infos) {
		free_names(names, n);
		err("out of memory");
		return EXIT_FAIL;
	}
	for (i = 0; i < n; i++)
		cc_get_info(names[i], &infos[i]);

	if (g_opts.json) {
		json_init(&j, stdout, g_opts.pretty);
		json_begin_array(&j);
		for (i = 0; i < n; i++) {
			const struct cc_info *ci = &infos[i];
			char ts[64];

			json_begin_object(&j);
			json_kv_string(&j, "name", ci->name);
			json_kv_string(&j, "state", state_word(ci));
			json_kv_bool(&j, "registered", ci->registered == 1);
			json_kv_u64(&j, "link_id", ci->link_id);
			json_kv_u64(&j, "struct_ops_map_id", ci->map_id);
			json_kv_u64(&j, "prog_id", ci->prog_id);
			if (ci->load_time_boot_ns) {
				int64_t ns = boottime_ns_to_unix_ns(ci->load_time_boot_ns);

				format_unix_ns(ns, ts, sizeof(ts));
				json_kv_string(&j, "load_time", ts);
				json_kv_i64(&j, "load_time_unix_ns", ns);
			} else {
				json_kv_null(&j, "load_time");
				json_kv_null(&j, "load_time_unix_ns");
			}
			if (ci->sockets >= 0)
				json_kv_i64(&j, "sockets", ci->sockets);
			else
				json_kv_null(&j, "sockets");
			json_kv_bool(&j, "state_iter", ci->has_iter);
			json_end_object(&j);
		}
		json_end_array(&j);
		if (json_end(&j))
			err("writing JSON output failed");
	} else if (n == 0) {
		printf("no congestion controls loaded by bbrctl (nothing under %s)\n",
		       PIN_ROOT);
	} else {
		printf("%-15s  %6s  %7s  %-24s  %7s  %s\n", "NAME", "MAP_ID",
		       "LINK_ID", "LOADED", "SOCKETS", "STATE");
		for (i = 0; i < n; i++) {
			const struct cc_info *ci = &infos[i];
			char ts[64] = "-", socks[24] = "-";

			if (ci->load_time_boot_ns)
				format_unix_ns(boottime_ns_to_unix_ns(ci->load_time_boot_ns),
					       ts, sizeof(ts));
			if (ci->sockets >= 0)
				snprintf(socks, sizeof(socks), "%ld", ci->sockets);
			printf("%-15s  %6u  %7u  %-24s  %7s  %s\n", ci->name,
			       ci->map_id, ci->link_id, ts, socks, state_word(ci));
			if (ci->note[0])
				dbg("%s: %s", ci->name, ci->note);
		}
	}
	free(infos);
	free_names(names, n);
	return EXIT_OK;
}

/* ---- stat, params ------------------------------------------------------------ */

static int cmd_stat(char **args, int nargs)
{
	if (!valid_cc_names("stat", args, nargs))
		return EXIT_USAGE;
	if (check_privileges("stat"))
		return EXIT_FAIL;
	warn_if_bpffs_hidden();
	return cmd_stat_impl(args, nargs) ? EXIT_FAIL : EXIT_OK;
}

static int cmd_params(char **args, int nargs)
{
	return cmd_params_set_impl(args, nargs);
}

static int cmd_set(char **args, int nargs)
{
	return cmd_set_impl(args, nargs);
}

/* ---- main ---------------------------------------------------------------------- */

struct command {
	const char *name;
	int (*fn)(char **args, int nargs);
	bool json_ok;
	bool obj_ok;
};

static int cmd_top(char **args, int nargs)
{
	struct timespec ts;
	char when[64];
	int ret = EXIT_OK;
	bool tty = isatty(STDOUT_FILENO);

	if (!valid_cc_names("top", args, nargs))
		return EXIT_USAGE;
	if (check_privileges("top"))
		return EXIT_FAIL;
	for (uint64_t k = 0; !g_opts.count || k < g_opts.count; k++) {
		if (k) {
			ts.tv_sec = (time_t)(g_opts.interval_us / 1000000);
			ts.tv_nsec = (long)(g_opts.interval_us % 1000000) * 1000;
			nanosleep(&ts, NULL);
		}
		if (!g_opts.json) {
			clock_gettime(CLOCK_REALTIME, &ts);
			format_unix_ns((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec,
				       when, sizeof(when));
			printf("%sbbrctl top  %s  every %.1f s\n\n", tty ? "\033[H\033[2J" : "",
			       when, g_opts.interval_us / 1e6);
		}
		if (cmd_stat_impl(args, nargs))
			ret = EXIT_FAIL;
		if (g_opts.json)
			putchar('\n');
		else if (!tty)
			putchar('\n');
		fflush(stdout);
	}
	return ret;
}

static int cmd_attach(char **args, int nargs)
{
	return cmd_attach_impl(args, nargs);
}

static int cmd_detach(char **args, int nargs)
{
	return cmd_detach_impl(args, nargs);
}

static int cmd_swap(char **args, int nargs)
{
	return cmd_swap_impl(args, nargs);
}

/* loader/hwtstamp.c (ETS area): NIC RX hardware timestamps. */
int cmd_hwtstamp(char **args, int nargs);

static int cmd_trace(char **args, int nargs)
{
	return cmd_trace_impl(args, nargs);
}

static const struct command commands[] = {
	{ "load",   cmd_load,   false, true },
	{ "unload", cmd_unload, false, false },
	{ "list",   cmd_list,   true,  false },
	{ "stat",   cmd_stat,   true,  false },
	{ "params", cmd_params, true,  false },
	{ "set",    cmd_set,    true,  false },
	{ "top",    cmd_top,    true,  false },
	{ "trace",  cmd_trace,  false, false },
	{ "attach", cmd_attach, false, false },
	{ "detach", cmd_detach, false, false },
	{ "swap",   cmd_swap,   true,  true },
	{ "hwtstamp", cmd_hwtstamp, false, false },
};

static int cmd_help(char **args, int nargs)
{
	const struct cmd_help *h;

	if (nargs == 0) {
		usage_main(stdout);
		return EXIT_OK;
	}
	if (strcmp(args[0], "keys") == 0) {
		print_param_keys(stdout);
		return EXIT_OK;
	}
	h = find_help(args[0]);
	if (!h) {
		err("help: unknown command \"%s\"", args[0]);
		return EXIT_USAGE;
	}
	fputs(h->text, stdout);
	return EXIT_OK;
}

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

/* Options of `trace` (numbered apart from main's own enum). */
enum { OPT_PER_ACK = 512, OPT_CSV, OPT_DURATION, OPT_OUTPUT };

int main(int argc, char **argv)
{
	enum { OPT_OBJDIR = 256, OPT_OBJ, OPT_CGROUP, OPT_CC, OPT_FROM,
	       OPT_TO, OPT_PORT, OPT_NETNS, OPT_INTERVAL, OPT_COUNT,
	       OPT_DEFAULT, OPT_RESET, OPT_SOCKET };
	static const struct option longopts[] = {
		{ "objdir",  required_argument, NULL, OPT_OBJDIR },
		{ "obj",     required_argument, NULL, OPT_OBJ },
		{ "cgroup",  required_argument, NULL, OPT_CGROUP },
		{ "cc",      required_argument, NULL, OPT_CC },
		{ "from",    required_argument, NULL, OPT_FROM },
		{ "to",      required_argument, NULL, OPT_TO },
		{ "port",    required_argument, NULL, OPT_PORT },
		{ "netns",   required_argument, NULL, OPT_NETNS },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "count",   required_argument, NULL, OPT_COUNT },
		{ "per-ack", no_argument,       NULL, OPT_PER_ACK },
		{ "csv",     no_argument,       NULL, OPT_CSV },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "output",  required_argument, NULL, OPT_OUTPUT },
		{ "default", no_argument,       NULL, OPT_DEFAULT },
		{ "reset",   no_argument,       NULL, OPT_RESET },
		{ "socket",  required_argument, NULL, OPT_SOCKET },
		{ "json",    no_argument,       NULL, 'j' },
		{ "pretty",  no_argument,       NULL, 'p' },
		{ "verbose", no_argument,       NULL, 'v' },
		{ "help",    no_argument,       NULL, 'h' },
		{ "version", no_argument,       NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *cmd = NULL;
	bool help = false;
	const char *cmdname;
	int c;

	g_opts.objs = calloc(argc, sizeof(*g_opts.objs));
	if (!g_opts.objs) {
		err("out of memory");
		return EXIT_FAIL;
	}
	while ((c = getopt_long(argc, argv, "jpvhV", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_OBJDIR:
			g_opts.objdir = optarg;
			g_opts.objdir_explicit = true;
			break;
		case OPT_OBJ:
			g_opts.objs[g_opts.nobjs++] = optarg;
			break;
		case OPT_CGROUP:
			g_opts.cgroup = optarg;
			break;
		case OPT_CC:
			g_opts.cc = optarg;
			break;
		case OPT_FROM:
			g_opts.from = optarg;
			break;
		case OPT_TO:
			g_opts.to = optarg;
			break;
		case OPT_NETNS:
			g_opts.netns = optarg;
			break;
		case OPT_DEFAULT:
			g_opts.set_default = true;
			break;
		case OPT_RESET:
			g_opts.set_reset = true;
			break;
		case OPT_SOCKET:
			if (opt_num("socket", optarg, 1, UINT64_MAX, 0,
				    "; a socket cookie is its SO_COOKIE, the COOKIE "
				    "column of `bbrctl stat`", &g_opts.socket_cookie))
				return EXIT_USAGE;
			g_opts.set_socket = true;
			break;
		case OPT_INTERVAL:
			if (opt_num("interval", optarg, INTERVAL_MIN_US, INTERVAL_MAX_US,
				    NUM_MICRO, " (seconds)", &g_opts.interval_us))
				return EXIT_USAGE;
			break;
		case OPT_COUNT:
			if (opt_num("count", optarg, 1, UINT32_MAX, 0, " (screens)",
				    &g_opts.count))
				return EXIT_USAGE;
			break;
		case OPT_PER_ACK:
			g_opts.per_ack = true;
			break;
		case OPT_CSV:
			g_opts.csv = true;
			break;
		case OPT_OUTPUT:
			g_opts.output = optarg;
			break;
		case OPT_DURATION:
			if (opt_num("duration", optarg, 1, DURATION_MAX_US, NUM_MICRO,
				    " (seconds)", &g_opts.duration_us))
				return EXIT_USAGE;
			break;
		case OPT_PORT: {
			uint64_t v;

			if (opt_num("port", optarg, 1, 65535, 0, "", &v))
				return EXIT_USAGE;
			g_opts.port = (int)v;
			break;
		}
		case 'j':
			g_opts.json = true;
			break;
		case 'p':
			g_opts.pretty = true;
			g_opts.json = true;
			break;
		case 'v':
			g_opts.verbose++;
			break;
		case 'h':
			help = true;
			break;
		case 'V':
			printf("bbrctl %s (libbpf %s)\n", BBRCTL_VERSION,
			       libbpf_version_string());
			return EXIT_OK;
		default:
			fprintf(stderr, "Try `bbrctl --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (!g_opts.objdir)
		g_opts.objdir = resolve_objdir();
	if (g_opts.interval_us == 0)
		g_opts.interval_us = INTERVAL_DEFAULT_US;
	setup_libbpf_logging();

	if (optind >= argc) {
		if (help) {
			usage_main(stdout);
			return EXIT_OK;
		}
		usage_main(stderr);
		return EXIT_USAGE;
	}
	cmdname = argv[optind];
	if (strcmp(cmdname, "help") == 0)
		return cmd_help(argv + optind + 1, argc - optind - 1);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, cmdname) == 0)
			cmd = &commands[i];
	if (!cmd) {
		err("unknown command \"%s\" (try `bbrctl --help`)", cmdname);
		return EXIT_USAGE;
	}
	if (help) {
		const struct cmd_help *h = find_help(cmdname);

		if (h)
			fputs(h->text, stdout);
		else
			usage_main(stdout);	/* a command without its own text */
		return EXIT_OK;
	}
	if (g_opts.json && !cmd->json_ok) {
		err("%s: --json is only for list, stat, top, params, set and swap", cmdname);
		return EXIT_USAGE;
	}
	if ((g_opts.set_default || g_opts.set_reset || g_opts.set_socket) &&
	    strcmp(cmdname, "set")) {
		err("%s: --default, --socket and --reset are only for set", cmdname);
		return EXIT_USAGE;
	}
	if (g_opts.nobjs && !cmd->obj_ok) {
		err("%s: --obj is only for load and swap", cmdname);
		return EXIT_USAGE;
	}
	return cmd->fn(argv + optind + 1, argc - optind - 1);
}
