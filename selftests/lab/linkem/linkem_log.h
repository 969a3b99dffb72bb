/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * linkem per-packet log: one fixed-size little-endian record per packet that
 * reached the emulator, written when the packet leaves it (released to the
 * output TUN, or dropped). The file starts with a 16-byte header.
 *
 * All times are CLOCK_MONOTONIC nanoseconds, so they join directly with
 * bpf_ktime_get_ns() from a CC's ring buffer and with tracefs in "mono"
 * clock mode. A time that never happened (a dropped packet's dequeue) is 0.
 *
 *   queueing delay  = t_dequeue_ns - t_arrive_ns  (sojourn in the queue)
 *   serialisation   = t_depart_ns - t_dequeue_ns  (at the link rate)
 *   propagation     = delay_us (base + per-port extra), scheduled release
 *                     = t_depart_ns + delay_us * 1000
 *   release lateness= t_release_ns - scheduled release
 *
 * selftests/lab/labkit/linkem_log.py reads this layout with numpy; keep both in
 * step (the header's version field guards against a mismatch).
 */
#ifndef LINKEM_LOG_H
#define LINKEM_LOG_H

#include <stdint.h>

#define LINKEM_LOG_MAGIC   0x4d454b4cu	/* "LKEM" little-endian */
#define LINKEM_LOG_VERSION 1u

struct linkem_log_hdr {
	uint32_t magic;
	uint32_t version;
	uint32_t rec_size;		/* sizeof(struct linkem_log_rec) */
	uint32_t reserved;
};

enum linkem_drop {
	LEM_DROP_NONE = 0,
	LEM_DROP_LOSS = 1,	/* loss model (bernoulli/gilbert/nth) */
	LEM_DROP_QUEUE = 2,	/* tail drop: bottleneck queue full */
	LEM_DROP_NOROUTE = 3,	/* destination not in any port's addrs, or not IPv4 */
	LEM_DROP_POOL = 4,	/* packet pool exhausted (raise pool_pkts) */
	LEM_DROP_WRITE = 5,	/* write to the output TUN failed */
};

enum linkem_dir { LEM_DIR_FWD = 0, LEM_DIR_REV = 1 };

struct linkem_log_rec {
	uint64_t t_arrive_ns;	/* read from the input TUN */
	uint64_t t_dequeue_ns;	/* left the queue, serialisation starts */
	uint64_t t_depart_ns;	/* serialisation done (last bit on the wire) */
	uint64_t t_release_ns;	/* written to the output TUN (actual) */
	uint32_t saddr;		/* IPv4, network byte order */
	uint32_t daddr;
	uint16_t sport;		/* host byte order; 0 if not TCP/UDP */
	uint16_t dport;
	uint16_t size;		/* IP packet bytes */
	uint8_t proto;
	uint8_t dir;		/* enum linkem_dir */
	uint8_t in_port;	/* index into the config's ports */
	uint8_t out_port;	/* 255 when unrouted */
	uint8_t ecn_in;		/* 2-bit ECN field as read */
	uint8_t ecn_out;	/* as written (3 = CE) */
	uint8_t drop;		/* enum linkem_drop */
	uint8_t pad0;
	uint16_t pad1;
	uint32_t delay_us;	/* propagation delay applied */
	uint32_t qbytes;	/* queue backlog in bytes when it arrived */
};

_Static_assert(sizeof(struct linkem_log_rec) == 64, "log record is 64 bytes");

#endif
