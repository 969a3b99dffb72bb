// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl ect1 attach|detach|status [--netns NS] IFACE: ECT(1) on the data
 * of L4S connections leaving IFACE (bpf/ect1.bpf.c, built in as a
 * skeleton; docs/l4s.md, "On the wire: AccECN, ECT(1), and bbrctl ect1").
 *
 * attach loads one instance of ect1 per device and attaches it to the
 * device's egress as a tcx bpf_link, pinned at PIN_ECT1/NETNS-IFINDEX so it
 * outlives bbrctl; detach removes the pin (the kernel then detaches the
 * program). A device that disappears takes the attachment with it: status
 * shows its pin as "gone" and detach removes it. The pin name carries the
 * network namespace's cookie because ifindexes repeat across namespaces.
 */
#include <errno.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "ect1.h"
#include "ect1.skel.h"	/* generated: build/skel (Makefile) */

#define ECT1_STATS_MAP		"ect1_stats"

/*
 * The cookie of bbrctl's current network namespace (SO_NETNS_COOKIE, Linux
 * 5.14): unlike its inode, never reused while the system runs, so a pin
 * left by a removed namespace cannot be taken for a new one's. 0 after a
 * message.
 */
static unsigned long long netns_cookie(void)
{
	unsigned long long cookie = 0;
	socklen_t len = sizeof(cookie);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len)) {
		err("ect1: reading the network namespace's cookie failed: %s",
		    strerror(errno));
		cookie = 0;
	}
	if (fd >= 0)
		close(fd);
	return cookie;
}

/* The pin's name under PIN_ECT1, and its path for messages. */
static int pin_path(unsigned long long ns, int ifindex, char *buf, size_t len,
		    char *name, size_t nlen)
{
	int n = snprintf(buf, len, PIN_ECT1 "/" PIN_ECT1_FMT, ns, ifindex);
	int k = snprintf(name, nlen, PIN_ECT1_FMT, ns, ifindex);

	return n < 0 || (size_t)n >= len || k < 0 || (size_t)k >= nlen ?
	       -ENAMETOOLONG : 0;
}

/* Is arg a pin's name, NETNS-IFINDEX (as `ect1 status` shows it)? */
static bool pin_name_of(const char *arg, unsigned long long *ns, int *ifindex)
{
	char again[64];

	if (sscanf(arg, PIN_ECT1_FMT, ns, ifindex) != 2)
		return false;
	snprintf(again, sizeof(again), PIN_ECT1_FMT, *ns, *ifindex);
	return strcmp(again, arg) == 0;
}

/* IFACE's index in the current network namespace; 0 after a message. */
static int iface_index(const char *ifname)
{
	int idx = strlen(ifname) < IFNAMSIZ ? (int)if_nametoindex(ifname) : 0;

	if (!idx)
		err("ect1: no interface \"%s\" in this network namespace (another "
		    "one: --netns NAME; a device that is gone: detach NETNS-IFINDEX "
		    "as `bbrctl ect1 status` shows it)", ifname);
	return idx;
}

/*
 * IFACE's index in the current network namespace and where the IP header
 * starts in what it sends (*l3_off): an Ethernet device, or an IP device
 * without a link-layer header (tun, rawip). 0 after a message otherwise.
 */
static int device_of(const char *ifname, uint32_t *l3_off)
{
	struct ifreq ifr = {};
	int fd, idx = iface_index(ifname);

	if (!idx)
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err("ect1: socket: %s", strerror(errno));
		return 0;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		err("ect1: %s: SIOCGIFHWADDR: %s", ifname, strerror(errno));
		idx = 0;
	} else if (ifr.ifr_hwaddr.sa_family == ARPHRD_ETHER) {
		*l3_off = ECT1_L3_OFF_ETHER;
	} else if (ifr.ifr_hwaddr.sa_family == ARPHRD_NONE ||
		   ifr.ifr_hwaddr.sa_family == ARPHRD_RAWIP) {
		*l3_off = ECT1_L3_OFF_IP;
	} else {
		err("ect1: %s is neither an Ethernet device nor an IP device "
		    "without a link-layer header such as tun (ARPHRD %u): the "
		    "program would not find the IP header", ifname,
		    ifr.ifr_hwaddr.sa_family);
		idx = 0;
	}
	close(fd);
	return idx;
}

/* Is the link pinned at pin attached to a device (not gone, not broken)? */
static bool pin_attached(int dfd, const char *pin)
{
	struct bpf_link_info li = {};
	uint32_t len = sizeof(li);
	int fd = pt_obj_get(dfd, pin);
	bool ok;

	if (fd < 0)
		return false;
	ok = !bpf_link_get_info_by_fd(fd, &li, &len) && li.tcx.ifindex;
	close(fd);
	return ok;
}

static int ect1_attach(const char *ifname, unsigned long long ns, int ifindex,
		       uint32_t l3_off)
{
	struct bpf_link *link = NULL;
	struct ect1 *skel = NULL;
	char pin[PATH_MAX], pname[64];
	int ret = EXIT_FAIL, dfd, e;

	if (pin_path(ns, ifindex, pin, sizeof(pin), pname, sizeof(pname)))
		return EXIT_FAIL;
	dfd = pt_dir(PIN_ECT1_DIR, PT_CREATE);
	if (dfd < 0)
		return EXIT_FAIL;
	if (pt_exists(dfd, pname)) {
		if (pin_attached(dfd, pname)) {
			err("ect1: %s already has ect1 attached (%s); `bbrctl ect1 "
			    "detach %s` first", ifname, pin, ifname);
			goto out;
		}
		/* an ifindex reused after its device was removed */
		info("ect1: replacing %s, an attachment to a device that is gone",
		     pin);
		if ((e = pt_unlink(dfd, pname))) {
			err("ect1: removing %s failed: %s", pin, strerror(-e));
			goto out;
		}
	}
	skel = ect1__open();
	if (skel)
		skel->rodata->l3_off = l3_off;
	if (!skel || ect1__load(skel)) {
		err("ect1: loading the ect1 program failed: %s (the verifier's "
		    "log is above with -v)", strerror(errno));
		goto out;
	}
	link = bpf_program__attach_tcx(skel->progs.ect1_egress, ifindex, NULL);
	if (!link) {
		err("ect1: attaching to the egress of %s failed: %s (tcx needs "
		    "Linux 6.6 or later)", ifname, strerror(errno));
		goto out;
	}
	if ((e = pt_pin(bpf_link__fd(link), dfd, pname))) {
		err("ect1: pinning %s failed: %s", pin, strerror(-e));
		goto out;		/* destroying the link detaches it */
	}
	info("ect1: attached to the egress of %s; pinned at %s", ifname, pin);
	ret = EXIT_OK;
out:
	bpf_link__destroy(link);	/* the pin keeps it attached */
	ect1__destroy(skel);
	close(dfd);
	return ret;
}

/* Remove the ect1/ directory and the pin root once they are empty. */
static void ect1_tidy(void)
{
	int root = pt_root(PT_SILENT);

	if (root >= 0) {
		pt_rmdir(root, PIN_ECT1_DIR);	/* when it was the last */
		close(root);
	}
	pt_remove_root_if_empty();
}

/*
 * `ect1 prune`: remove every pin whose link has lost its device (a
 * removed device, or the whole namespace gone: the kernel detached the
 * program and the link reads ifindex 0) or cannot be read; those of
 * devices still there, in any namespace, stay.
 */
static int ect1_prune(void)
{
	char **names = NULL;
	int n, dfd, removed = 0, ret = EXIT_OK;

	dfd = pt_dir(PIN_ECT1_DIR, PT_QUIET);
	if (dfd == -ENOENT) {
		info("ect1: nothing to prune");
		return EXIT_OK;
	}
	if (dfd < 0)
		return EXIT_FAIL;
	n = pt_list(dfd, false, &names);
	for (int k = 0; k < n; k++) {
		unsigned long long ns;
		int ifindex, e;

		if (sscanf(names[k], PIN_ECT1_FMT, &ns, &ifindex) != 2 ||
		    pin_attached(dfd, names[k]))
			continue;
		e = pt_unlink(dfd, names[k]);
		if (e) {
			err("ect1: removing %s/%s failed: %s", PIN_ECT1, names[k], strerror(-e));
			ret = EXIT_FAIL;
			continue;
		}
		printf("pruned %s/%s (device gone)\n", PIN_ECT1, names[k]);
		removed++;
	}
	free_names(names, n > 0 ? n : 0);
	close(dfd);
	ect1_tidy();
	if (!removed && ret == EXIT_OK)
		info("ect1: nothing to prune");
	return ret;
}

static int ect1_detach(const char *ifname, unsigned long long ns, int ifindex)
{
	char pin[PATH_MAX], pname[64];
	int dfd, e;

	if (pin_path(ns, ifindex, pin, sizeof(pin), pname, sizeof(pname)))
		return EXIT_FAIL;
	dfd = pt_dir(PIN_ECT1_DIR, PT_QUIET);
	if (dfd < 0 && dfd != -ENOENT)
		return EXIT_FAIL;
	if (dfd < 0 || !pt_exists(dfd, pname)) {
		err("ect1: %s has no ect1 attached by bbrctl", ifname);
		if (dfd >= 0)
			close(dfd);
		return EXIT_FAIL;
	}
	e = pt_unlink(dfd, pname);
	close(dfd);
	if (e) {
		err("ect1: removing %s failed: %s", pin, strerror(-e));
		return EXIT_FAIL;
	}
	ect1_tidy();
	info("ect1: detached from %s", ifname);
	return EXIT_OK;
}

/* The sum over CPUs of the program's counters; -1 if unreadable. */
static int read_stats(uint32_t prog_id, struct ect1_stats *sum)
{
	int ncpu = libbpf_num_possible_cpus(), ret = -1;
	int mfd = prog_map_fd(prog_id, ECT1_STATS_MAP, sizeof(*sum));
	uint32_t key = 0;
	struct ect1_stats *per;

	memset(sum, 0, sizeof(*sum));
	if (mfd < 0)
		return -1;
	per = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*per)) : NULL;
	if (per && !bpf_map_lookup_elem(mfd, &key, per)) {
		for (int c = 0; c < ncpu; c++) {
			sum->rewritten += per[c].rewritten;
			sum->cleared += per[c].cleared;
			sum->left_alone += per[c].left_alone;
		}
		ret = 0;
	}
	free(per);
	close(mfd);
	return ret;
}

/* One pin's row: {pin, netns_cookie, ifindex, iface, state, prog_id, ...}. */
static json_t *pin_row(int dfd, const char *name, unsigned long long self_ns)
{
	struct bpf_link_info li = {};
	uint32_t len = sizeof(li);
	struct ect1_stats st;
	char path[PATH_MAX], ifname[IF_NAMESIZE] = "";
	unsigned long long ns;
	int ifindex, fd;
	json_t *j;

	if (sscanf(name, PIN_ECT1_FMT, &ns, &ifindex) != 2)
		return NULL;
	j = json_object();
	snprintf(path, sizeof(path), PIN_ECT1 "/%s", name);
	js_set_str(j, "pin", path);
	js_set_u64(j, "netns_cookie", ns);
	js_set_u64(j, "ifindex", (uint64_t)ifindex);
	if (ns == self_ns && if_indextoname((unsigned int)ifindex, ifname))
		js_set_str(j, "iface", ifname);
	else
		js_set(j, "iface", json_null());	/* another namespace's */
	fd = pt_obj_get(dfd, name);
	if (fd < 0 || bpf_link_get_info_by_fd(fd, &li, &len)) {
		js_set_str(j, "state", "broken");
	} else {
		/* a link whose device went away reads ifindex 0 */
		js_set_str(j, "state", li.tcx.ifindex ? "attached" : "gone");
		js_set_u64(j, "link_id", li.id);
		js_set_u64(j, "prog_id", li.prog_id);
		if (!read_stats(li.prog_id, &st)) {
			js_set_u64(j, "rewritten", st.rewritten);
			js_set_u64(j, "cleared", st.cleared);
			js_set_u64(j, "left_alone", st.left_alone);
		}
	}
	if (fd >= 0)
		close(fd);
	return j;
}

static const char *row_str(json_t *j, const char *key)
{
	const char *s = json_string_value(json_object_get(j, key));

	return s ? s : "-";
}

static int ect1_status(const char *ifname, unsigned long long ns, int ifindex)
{
	char want[64] = "";
	json_t *rows = json_array(), *j;
	char **names = NULL;
	int n = 0, dfd;
	size_t i;

	if (ifname)
		snprintf(want, sizeof(want), PIN_ECT1_FMT, ns, ifindex);
	dfd = pt_dir(PIN_ECT1_DIR, PT_QUIET);
	if (dfd < 0 && dfd != -ENOENT) {
		json_decref(rows);
		return EXIT_FAIL;
	}
	if (dfd >= 0)
		n = pt_list(dfd, false, &names);
	for (int k = 0; k < n; k++) {
		if (ifname && strcmp(names[k], want))
			continue;
		j = pin_row(dfd, names[k], ns);
		if (j)
			json_array_append_new(rows, j);
	}
	free_names(names, n > 0 ? n : 0);
	if (dfd >= 0)
		close(dfd);
	if (ifname && json_array_size(rows) == 0) {
		json_decref(rows);
		err("ect1: %s has no ect1 attached by bbrctl", ifname);
		return EXIT_FAIL;
	}
	if (g_opts.json)
		return js_print(rows) ? EXIT_FAIL : EXIT_OK;
	printf("%-20s %-7s %-15s %-8s %-8s %12s %10s %12s\n", "NETNS", "IFINDEX",
	       "IFACE", "STATE", "PROG_ID", "REWRITTEN", "CLEARED", "LEFT_ALONE");
	json_array_foreach(rows, i, j) {
		printf("%-20llu %-7llu %-15s %-8s %-8lld %12lld %10lld %12lld\n",
		       (unsigned long long)json_integer_value(json_object_get(j, "netns_cookie")),
		       (unsigned long long)json_integer_value(json_object_get(j, "ifindex")),
		       row_str(j, "iface"), row_str(j, "state"),
		       json_integer_value(json_object_get(j, "prog_id")),
		       json_integer_value(json_object_get(j, "rewritten")),
		       json_integer_value(json_object_get(j, "cleared")),
		       json_integer_value(json_object_get(j, "left_alone")));
	}
	json_decref(rows);
	return EXIT_OK;
}

int cmd_ect1(const struct cmd_opts *o, char **args, int nargs)
{
	const char *verb = nargs ? args[0] : "";
	bool status = !strcmp(verb, "status"), prune = !strcmp(verb, "prune");
	unsigned long long ns;
	uint32_t l3_off = 0;
	int ifindex = 0;

	if (!((nargs == 2 && (!strcmp(verb, "attach") || !strcmp(verb, "detach"))) ||
	      (status && nargs <= 2) || (prune && nargs == 1 && !o->netns))) {
		err("usage: bbrctl ect1 attach|detach [--netns NS] IFACE; "
		    "bbrctl ect1 status [--netns NS] [IFACE]; bbrctl ect1 prune");
		return EXIT_USAGE;
	}
	if (check_privileges("ect1"))
		return EXIT_FAIL;
	if (prune)
		return ect1_prune();
	if (o->netns && enter_netns("ect1", o->netns))
		return EXIT_FAIL;
	ns = netns_cookie();
	if (!ns)
		return EXIT_FAIL;
	if (nargs == 2 && !strcmp(verb, "detach") && pin_name_of(args[1], &ns, &ifindex))
		return ect1_detach(args[1], ns, ifindex);	/* a device gone */
	if (nargs == 2) {
		ifindex = strcmp(verb, "attach") ? iface_index(args[1]) :
			  device_of(args[1], &l3_off);
		if (!ifindex)
			return EXIT_FAIL;
	}
	if (!strcmp(verb, "attach"))
		return ensure_bpffs() ? EXIT_FAIL : ect1_attach(args[1], ns, ifindex, l3_off);
	if (!strcmp(verb, "detach"))
		return ect1_detach(args[1], ns, ifindex);
	return ect1_status(nargs == 2 ? args[1] : NULL, ns, ifindex);
}
