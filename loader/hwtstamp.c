// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl hwtstamp enable|disable|status IFACE: NIC receive hardware
 * timestamps for the ETS sockops program (docs/ets.md, "Clocks").
 *
 * enable reads the device's current configuration (SIOCGHWTSTAMP), saves it
 * under HWTS_STATE_DIR/<iface> unless a saved one already exists (so a
 * second enable does not overwrite the original), and sets rx_filter =
 * HWTSTAMP_FILTER_ALL keeping tx_type (SIOCSHWTSTAMP). disable restores
 * the saved configuration and removes the file. status prints both.
 *
 * A device without hardware timestamping (veth, virtio_net, lo) answers
 * EOPNOTSUPP/EINVAL/ERANGE: reported as such, exit 1, nothing saved.
 *
 * Enabling the NIC is only half of the hardware path: the BPF side uses a
 * stamp only once a PHC->CLOCK_MONOTONIC offset is published in the
 * ets_cfg map (hw_off_valid); until then it keeps the software clock.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/net_tstamp.h>
#include <linux/sockios.h>

#include "bbrctl.h"

/* Saved configurations: tmpfs, so a reboot (which resets NICs) forgets them. */
#define HWTS_STATE_SUBDIR	"hwtstamp"		/* in BBRCTL_RUN_DIR */
#define HWTS_STATE_DIR		BBRCTL_RUN_DIR "/" HWTS_STATE_SUBDIR

static int hwts_ioctl(const char *ifname, unsigned long req,
		      struct hwtstamp_config *cfg)
{
	struct ifreq ifr = {};
	int fd, ret;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)cfg;
	ret = ioctl(fd, req, &ifr) ? -errno : 0;
	close(fd);
	return ret;
}

static int no_hw(const char *ifname, int e)
{
	if (e == -EOPNOTSUPP || e == -EINVAL || e == -ERANGE || e == -ENOTTY)
		err("hwtstamp: %s has no hardware timestamping (%s); veth, "
		    "virtio and lo never have it: ETS uses the software clock",
		    ifname, strerror(-e));
	else
		err("hwtstamp: %s: %s", ifname, strerror(-e));
	return EXIT_FAIL;
}

/*
 * The saved configurations live under BBRCTL_RUN_DIR by its rules (a
 * directory root owns and only root may write, no symbolic link followed:
 * run_subdir_open()), one file per interface opened relative to it with
 * O_NOFOLLOW, so that nobody can make bbrctl write or read elsewhere.
 */
static int save_state(const char *ifname, const struct hwtstamp_config *c)
{
	int dfd = run_subdir_open(HWTS_STATE_SUBDIR, true), fd;
	FILE *f;

	if (dfd < 0)
		return dfd;
	/* O_EXCL: a second enable keeps the original configuration */
	fd = openat(dfd, ifname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	close(dfd);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -errno;
	}
	fprintf(f, "%d %d %d\n", c->flags, c->tx_type, c->rx_filter);
	return fclose(f) ? -errno : 0;
}

static int load_state(const char *ifname, struct hwtstamp_config *c)
{
	int dfd = run_subdir_open(HWTS_STATE_SUBDIR, false), fd, n;
	struct stat st;
	FILE *f;

	if (dfd < 0)
		return dfd;
	fd = openat(dfd, ifname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "r"))) {
		close(fd);
		return -EINVAL;
	}
	n = fscanf(f, "%d %d %d", &c->flags, &c->tx_type, &c->rx_filter);
	fclose(f);
	return n == 3 ? 0 : -EINVAL;
}

static void forget_state(const char *ifname)
{
	int dfd = run_subdir_open(HWTS_STATE_SUBDIR, false);

	if (dfd < 0)
		return;
	unlinkat(dfd, ifname, 0);
	close(dfd);
}

static int hwts_enable(const char *ifname)
{
	struct hwtstamp_config cur = {}, want;
	int e;

	e = hwts_ioctl(ifname, SIOCGHWTSTAMP, &cur);
	if (e)
		return no_hw(ifname, e);
	e = save_state(ifname, &cur);
	if (e) {
		err("hwtstamp: cannot save %s's configuration: %s", ifname,
		    strerror(-e));
		return EXIT_FAIL;
	}
	want = cur;
	want.rx_filter = HWTSTAMP_FILTER_ALL;
	e = hwts_ioctl(ifname, SIOCSHWTSTAMP, &want);
	if (e)
		return no_hw(ifname, e);
	info("hwtstamp: %s rx_filter %d -> %d (driver granted %d); previous "
	     "configuration saved in %s", ifname, cur.rx_filter,
	     HWTSTAMP_FILTER_ALL, want.rx_filter, HWTS_STATE_DIR);
	return EXIT_OK;
}

static int hwts_disable(const char *ifname)
{
	struct hwtstamp_config old = {};
	int e;

	e = load_state(ifname, &old);
	if (e) {
		err("hwtstamp: nothing saved for %s (was `bbrctl hwtstamp enable "
		    "%s` run?)", ifname, ifname);
		return EXIT_FAIL;
	}
	e = hwts_ioctl(ifname, SIOCSHWTSTAMP, &old);
	if (e)
		return no_hw(ifname, e);
	forget_state(ifname);
	info("hwtstamp: %s restored to tx_type %d rx_filter %d", ifname,
	     old.tx_type, old.rx_filter);
	return EXIT_OK;
}

static int hwts_status(const char *ifname)
{
	struct hwtstamp_config cur = {}, old = {};
	int e;

	e = hwts_ioctl(ifname, SIOCGHWTSTAMP, &cur);
	if (e)
		return no_hw(ifname, e);
	printf("%s: tx_type %d rx_filter %d flags %d", ifname, cur.tx_type,
	       cur.rx_filter, cur.flags);
	if (!load_state(ifname, &old))
		printf(" (saved by enable: tx_type %d rx_filter %d)",
		       old.tx_type, old.rx_filter);
	printf("\n");
	return EXIT_OK;
}

int cmd_hwtstamp(const struct cmd_opts *o, char **args, int nargs)
{
	(void)o;
	if (nargs != 2 || (strcmp(args[0], "enable") && strcmp(args[0], "disable") &&
			   strcmp(args[0], "status"))) {
		err("usage: bbrctl hwtstamp enable|disable|status IFACE");
		return EXIT_USAGE;
	}
	if (strlen(args[1]) >= IFNAMSIZ || !if_nametoindex(args[1])) {
		err("hwtstamp: no interface \"%s\" in this network namespace", args[1]);
		return EXIT_USAGE;
	}
	if (check_privileges("hwtstamp"))
		return EXIT_FAIL;
	if (!strcmp(args[0], "enable"))
		return hwts_enable(args[1]);
	if (!strcmp(args[0], "disable"))
		return hwts_disable(args[1]);
	return hwts_status(args[1]);
}
