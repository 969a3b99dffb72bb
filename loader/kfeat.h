/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the running kernel's tcp_congestion_ops looks like, read from its
 * BTF, and which build of an object it takes.
 *
 * Linux 7.1 moved CA_EVENT_TX_START (the first send after idle) out of
 * cwnd_event into an op of its own, cwnd_event_tx_start. An object whose
 * struct_ops has that member does not load on older kernels, and one
 * without it loads on 7.1 but never sees an idle restart; so each CC is
 * built twice and bbrctl picks the build the kernel takes.
 */
#ifndef BBRCTL_KFEAT_H
#define BBRCTL_KFEAT_H

#include <stdbool.h>
#include <bpf/btf.h>

/* Builds of a CC object, by the ops the kernel has. */
enum cc_build {
	CC_BUILD_BASE = 0,	/* 6.10 - 7.0: TX_START through cwnd_event */
	CC_BUILD_TX_START,	/* 7.1+: the cwnd_event_tx_start op */
};

/* Subdirectory of the object directory that holds a build ("" for base). */
#define CC_BUILD_TX_START_DIR	"tx_start"

/* Byte offset of member in struct type, -1 if either is missing. */
int btf_member_offset(const struct btf *btf, const char *type,
		      const char *member);
/* Does struct `type` in btf have a member `member`? */
bool btf_struct_has_member(const struct btf *btf, const char *type,
			   const char *member);

/*
 * Length of a BTF type name without libbpf's flavour suffix: in "X___Y"
 * (X and Y not ending/starting with '_') everything from the last "___"
 * on is a flavour, which CO-RE and struct_ops matching ignore; so
 * tcp_congestion_ops___tx_start is a tcp_congestion_ops to the kernel.
 */
size_t btf_essential_name_len(const char *name);

/* Is type name `name`, flavour suffix aside, `base`? */
bool btf_name_is_flavour_of(const char *name, const char *base);

/*
 * The struct type behind struct_ops map `map_name` of an object's BTF:
 * the variable of that name in the .struct_ops.link or .struct_ops
 * DATASEC, typedefs and modifiers resolved. NULL if there is none.
 */
const struct btf_type *btf_st_ops_map_struct(const struct btf *btf,
					     const char *map_name);

/*
 * The number of arguments tcp_congestion_ops.cong_control takes in this
 * vmlinux BTF, -1 if there is no such member. 4 since Linux 6.10 (sk, ack,
 * flag, rs), the form every bbr-bpf CC implements; 2 before (sk, rs).
 */
#define CONG_CONTROL_ARGS	4
int cong_control_nargs(const struct btf *vmlinux);

/* The build a kernel with this vmlinux BTF takes. */
enum cc_build cc_build_for(const struct btf *vmlinux);

/* The same for the running kernel (/sys/kernel/btf/vmlinux); the base
 * build if its BTF cannot be read. */
enum cc_build cc_build_running(void);

const char *cc_build_name(enum cc_build b);

/*
 * Does the running kernel have AccECN (RFC 9768), which `load --ecn accecn`
 * asks for? Its ops flags are #defines, not in BTF; the per-socket state
 * that came with them in 6.18 is: struct tcp_sock's received_ce.
 */
bool kernel_has_accecn(void);

#endif
