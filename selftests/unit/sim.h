/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A deterministic packet-level model of one bottleneck, for scenario tests
 * of the core: N bulk TCP senders, each driven by bbr_core_*(), share a
 * FIFO tail-drop queue served at a fixed rate, optionally with random
 * (Bernoulli) loss on the way in; each flow has its own base RTT (all of it
 * on the ACK path). The sender side models what the core reads from the
 * kernel: tcp_rate.c-style delivery-rate samples, SACK-style per-packet
 * ACKs, the scoreboard counters (packets_out, sacked_out, lost_out,
 * retrans_out, delivered, lost), loss marking after 3 later packets are
 * ACKed, Recovery, a retransmission timeout (200 ms + srtt) that marks
 * everything lost, retransmits before new data, EDT pacing (the first 10
 * packets unpaced) and cwnd. With a Swift target each flow runs bbr_swift's
 * hooks around the core (core/swift.h), fed the ACK's RTT as its
 * Network_RTT.
 *
 * Every transmission also carries what a BBRv3 kernel would store in its
 * skb (in flight right after it, tp->lost at its send), so a run can feed
 * the core either those exact values or what the glue has on mainline (the
 * send records, with or without the lost-packet hook), and measures how
 * well the second reproduces the first (struct sim_fidelity).
 */
#ifndef BBR_SIM_H
#define BBR_SIM_H

#include "bbr_env.h"

#define SIM_MAX_FLOWS		400
#define SIM_WIRE_BYTES		1500u	/* a full-size packet on the link */
#define SIM_BIN_NS		100000000ull	/* 100 ms goodput bins */
#define SIM_MAX_BINS		1024

/* The congestion control a flow runs. */
enum sim_cc {
	SIM_CC_BBR = 0,		/* the core (bbr_core_*), param set param_slot */
	SIM_CC_CUBIC,		/* a loss-based CUBIC (RFC 9438-like, no HyStart),
				 * unpaced, for coexistence runs */
};

struct sim_flow_cfg {
	u64 start_ns;
	u64 stop_ns;		/* 0: runs to the end */
	u64 base_rtt_ns;
	u8 cc;			/* enum sim_cc; 0: the core */
	u8 param_slot;		/* the core's parameter set; 0: the default */
	u64 app_rate_bps;	/* the application writes at this rate (in
				 * link-rate units, wire packets); 0: bulk,
				 * always something to send */
	u64 app_resume_ns;	/* from then on bulk again (0: never) */
};

/* sim_set_app_rate(): no limit, and nothing written. */
#define SIM_APP_BULK		(~0ull)
#define SIM_APP_PAUSED		0ull

/* Where the core's per-packet inputs (tx_in_flight, lost) come from. */
enum sim_inputs {
	SIM_INPUTS_MAINLINE = 0,	/* what the glue does: send records, and
					 * lost skbs found in the retransmit queue */
	SIM_INPUTS_NO_WALK,		/* send records; lost packets judged only
					 * as one skb per ACK */
	SIM_INPUTS_EXACT,		/* a BBRv3 kernel's per-skb values and
					 * per-lost-skb hook */
};

struct sim_cfg {
	u64 rate_bps;		/* bottleneck rate */
	u32 buffer_pkts;	/* tail-drop limit */
	u32 loss_ppm;		/* random loss on entering the queue, per 10^6 */
	u32 loss_seed;		/* seed of that loss process; 0: a fixed one */
	enum sim_inputs inputs;
	u64 duration_ns;
	int nflows;
	u32 tx_ring;		/* transmissions each flow remembers, power of 2;
				 * 0: 65536 (enough for 100 BDP of 4 flows) */
	u32 swift_target_us;	/* BBR.Swift (core/swift.h) with this target and
				 * Network_RTT = each ACK's RTT; 0: BBRv3 */
	u32 net_rtt_jitter_us;	/* plus a uniform [0, this) measurement noise
				 * (host delay in the lab's samples) */
	u32 net_rtt_exp_us;	/* plus an exponential noise of this mean */
	u8 core_rtt_noise;	/* add that noise to a BBRv3 flow's RTT samples
				 * too (rs->rtt_us, srtt, the kernel's min_rtt):
				 * the lab's host and emulator delay */
	u32 swift_path_win_us;	/* the ETS path filter over all flows (one
				 * host, one peer) with this window; 0: none */
	/* ACK path aggregation (0: one ACK per packet, sent at once):
	 * ack_burst_us releases ACKs only on a grid of this period (Wi-Fi /
	 * cable-like ACK bursts); ack_every > 1 has the receiver ACK every
	 * ack_every-th packet (delayed / stretch ACKs; a held ACK goes after
	 * delack_us, 0: 40 ms). */
	u32 ack_burst_us;
	u32 ack_every;
	u32 delack_us;
	/* the loss threshold (BBR_UNIT) at which struct sim_fidelity judges
	 * inexact lookups; 0: not judged */
	u32 fid_loss_thresh;
	/* A token-bucket policer in front of the queue (0: none): packets
	 * that find fewer than a packet's tokens are dropped. */
	u64 policer_rate_bps;
	u32 policer_burst_bytes;
	/* called after each ACK a core flow processes (NULL: none) */
	void (*on_ack)(int flow, u64 now_ns, const struct bbr3 *b,
		       const struct bbr_sock *sk);
	struct sim_flow_cfg flow[SIM_MAX_FLOWS];
};

/* Error buckets of (reconstructed - exact): <-20, -20..-6, -5..-2, -1, 0,
 * 1, 2..5, 6..20, >20. */
#define SIM_ERR_BUCKETS		9
#define SIM_ERR_ZERO		4	/* the bucket of exact agreement */

/*
 * How the glue's view of tx_in_flight/lost compares with a BBRv3 kernel's,
 * over a run: per rate sample, and per ACK that marks losses while a probe
 * is evaluated (the only time lost packets can cut inflight_hi). "Decisive"
 * samples are those where either view has a loss, so only they can be
 * judged "too high".
 */
struct sim_fidelity {
	u64 samples;			/* rate samples of a delivered packet */
	u64 decisive;
	u64 decisive_agree;		/* same "too high" verdict */
	u64 too_high_exact, too_high_recon;
	u64 err_inflight[SIM_ERR_BUCKETS], err_lost[SIM_ERR_BUCKETS];
	u64 rtx_samples;		/* samples of a retransmitted packet */
	double rtx_inflight_exact, rtx_inflight_recon;	/* sums */
	double rtx_lost_exact, rtx_lost_recon;
	double lost_exact, lost_recon;			/* sums, all samples */
	u64 inexact_lookups;		/* the ring no longer reached the send */
	/* of those: sums of lost and tx_in_flight, exact and rebuilt, and
	 * the "too high" verdicts at a loss threshold of fid_loss_thresh
	 * (BBR_UNIT; 0: not judged) */
	double inexact_lost_exact, inexact_lost_recon;
	double inexact_inflight_exact, inexact_inflight_recon;
	u64 inexact_decisive, inexact_agree;
	u64 lost_pkts;			/* packets marked lost */
	u64 lost_found;			/* of those, found by the walk */
	u64 lost_misfound;		/* skbs the walk took that were not lost
					 * in this batch */
	/* ACKs that marked losses while a probe was evaluated; those where
	 * the core's judgement reaches the inflight_hi the reference's
	 * per-skb one does (the same verdict: no cut, or the same level) */
	u64 ack_losses_probing, ack_losses_agree;
	u64 ack_too_high_exact, ack_too_high_recon;
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
	/* time spent at each queue length (pkts; the last bin: at or above
	 * it), from t >= measure_from_ns: for the median queue */
#define SIM_QHIST		4096
	double queue_hist_ns[SIM_QHIST];
	/* Network_RTT samples fed to BBR.Swift, from t >= measure_from_ns */
	u64 net_rtt_sum_us;		/* as measured (with the noise) */
	u64 net_rtt_true_sum_us;	/* without the measurement noise */
	u64 net_rtt_samples;
	u8 final_mode[SIM_MAX_FLOWS];
	u32 final_cwnd[SIM_MAX_FLOWS];
	u32 final_min_rtt_us[SIM_MAX_FLOWS];
	u32 final_swift_milli[SIM_MAX_FLOWS];	/* Swift's window (0: not engaged) */
	u32 mode_changes[SIM_MAX_FLOWS];
	u32 probe_rtt_entries[SIM_MAX_FLOWS];
	u32 inflight_hi_cuts[SIM_MAX_FLOWS];	/* inflight_hi lowered */
	u32 final_inflight_hi[SIM_MAX_FLOWS];
	struct sim_fidelity fid;		/* all flows */
};

/* Runs the scenario; returns 0, or -1 if it could not allocate. */
int sim_run(const struct sim_cfg *cfg, struct sim_result *res);

/*
 * Changes to the running scenario, for a cfg->on_ack callback (no effect
 * outside sim_run()): the bottleneck rate, the random loss, the ACK
 * path's burst grid, and what flow f's application writes (SIM_APP_BULK,
 * SIM_APP_PAUSED, or a rate). A flow with an application rate is
 * app-limited as tcp_rate_check_app_limited() marks it (nothing to send,
 * cwnd open, no retransmit pending), and its first send after an idle
 * period calls the core's tx_start (CA_EVENT_TX_START).
 */
void sim_set_rate(u64 rate_bps);
void sim_set_loss_ppm(u32 loss_ppm);
void sim_set_ack_burst_us(u32 ack_burst_us);
void sim_set_app_rate(int flow, u64 rate_bps);

/* Mean goodput of flow f over [from_ns, to_ns), in bit/s (of MSS payload
 * per wire packet, i.e. link-rate units). */
double sim_goodput_bps(const struct sim_result *res, int f, u64 from_ns,
		       u64 to_ns);

/* Share of `n` in `total`, 0 if total is 0. */
double sim_ratio(u64 n, u64 total);

/* Queue length (pkts) not exceeded for fraction `q` of the measured time
 * (0.5: the median). */
u32 sim_queue_quantile(const struct sim_result *res, double q);

/* Jain's fairness index of the given flows' goodput over [from, to). */
double sim_jain(const struct sim_result *res, int nflows, u64 from_ns,
		u64 to_ns);

#endif /* BBR_SIM_H */
