/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A deterministic packet-level model of one bottleneck, for scenario tests
 * of the core: N bulk TCP senders, each driven by bbr_core_*(), share a
 * FIFO tail-drop queue served at a fixed rate; each flow has its own base
 * RTT (all of it on the ACK path). The sender side models what the core
 * reads from the kernel: tcp_rate.c-style delivery-rate samples, SACK-style
 * per-packet ACKs, loss marking after 3 later packets are ACKed, Recovery,
 * a retransmission timeout (200 ms + srtt) that marks everything lost,
 * EDT pacing (the first 10 packets unpaced) and cwnd. With a Swift target
 * each flow runs bbr_swift's hooks around the core (swift_core.h), fed the
 * ACK's RTT as its Network_RTT.
 */
#ifndef BBR_SIM_H
#define BBR_SIM_H

#include "bbr_env.h"

#define SIM_MAX_FLOWS		400
#define SIM_WIRE_BYTES		1500u	/* a full-size packet on the link */
#define SIM_BIN_NS		100000000ull	/* 100 ms goodput bins */
#define SIM_MAX_BINS		1024

struct sim_flow_cfg {
	u64 start_ns;
	u64 stop_ns;		/* 0: runs to the end */
	u64 base_rtt_ns;
};

struct sim_cfg {
	u64 rate_bps;		/* bottleneck rate */
	u32 buffer_pkts;	/* tail-drop limit */
	u64 duration_ns;
	int nflows;
	u32 tx_ring;		/* transmissions each flow remembers, power of 2;
				 * 0: 65536 (enough for 100 BDP of 4 flows) */
	u32 swift_target_us;	/* BBR.Swift (swift_core.h) with this target and
				 * Network_RTT = each ACK's RTT; 0: BBRv3 */
	u32 net_rtt_jitter_us;	/* plus a uniform [0, this) measurement noise
				 * (host delay in the lab's samples) */
	struct sim_flow_cfg flow[SIM_MAX_FLOWS];
};

struct sim_result {
	/* goodput per flow per 100 ms bin, in packets */
	u32 bin_pkts[SIM_MAX_FLOWS][SIM_MAX_BINS];
	int nbins;
	u64 drops;
	u64 rtos;			/* retransmission timeouts, all flows */
	u64 retransmits[SIM_MAX_FLOWS];
	/* queue occupancy integrated over time, from t >= measure_from_ns */
	u64 measure_from_ns;
	double queue_pkt_ns;		/* integral of queue length dt */
	double queue_time_ns;
	u32 queue_max_pkts;
	/* Network_RTT samples fed to BBR.Swift, from t >= measure_from_ns */
	u64 net_rtt_sum_us;
	u64 net_rtt_samples;
	u8 final_mode[SIM_MAX_FLOWS];
	u32 final_cwnd[SIM_MAX_FLOWS];
	u32 final_min_rtt_us[SIM_MAX_FLOWS];
	u32 final_subpkt_milli[SIM_MAX_FLOWS];	/* Swift's fractional window */
	u32 mode_changes[SIM_MAX_FLOWS];
	u32 probe_rtt_entries[SIM_MAX_FLOWS];
};

/* Runs the scenario; returns 0, or -1 if it could not allocate. */
int sim_run(const struct sim_cfg *cfg, struct sim_result *res);

/* Mean goodput of flow f over [from_ns, to_ns), in bit/s (of MSS payload
 * per wire packet, i.e. link-rate units). */
double sim_goodput_bps(const struct sim_result *res, int f, u64 from_ns,
		       u64 to_ns);

/* Jain's fairness index of the given flows' goodput over [from, to). */
double sim_jain(const struct sim_result *res, int nflows, u64 from_ns,
		u64 to_ns);

#endif /* BBR_SIM_H */
