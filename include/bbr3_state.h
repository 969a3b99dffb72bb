/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Layouts shared by the bbr3 BPF object, the native core tests and bbrctl:
 * the per-socket state (the value of the bbr3 sk_storage map), the runtime
 * parameters, and the record the state iterator emits for each socket.
 *
 * Units are in the names: _us microseconds, _ms milliseconds, _pkts packets
 * (segments), bw in BW_UNIT (packets per microsecond << 24), gains in
 * BBR_UNIT (256 == 1.0). "Unset" bounds hold BBR_UNSET (all ones).
 *
 * Needs u8..u64 to be defined first (vmlinux.h in BPF, core/types.h natively,
 * <linux/types.h>-style typedefs in userspace).
 */
#ifndef BBR3_STATE_H
#define BBR3_STATE_H

#define BBR3_STATE_VERSION	9	/* bump when the layout below changes */

#define BBR_UNSET		0xFFFFFFFFu

/*
 * Modes, PROBE_BW phases and ACK phases, numbered as in the reference.
 * Macros rather than enums: the kernel's own BBR puts an enum bbr_mode with
 * these names into vmlinux.h, and a BBRv3 kernel would add the others.
 */
#define BBR_STARTUP		0	/* ramp up sending rate rapidly to fill pipe */
#define BBR_DRAIN		1	/* drain any queue created during startup */
#define BBR_PROBE_BW		2	/* discover, share bw: pace around estimated bw */
#define BBR_PROBE_RTT		3	/* cut inflight to min to probe min_rtt */

#define BBR_BW_PROBE_UP		0	/* push up inflight to probe for bw/vol */
#define BBR_BW_PROBE_DOWN	1	/* drain excess inflight from the queue */
#define BBR_BW_PROBE_CRUISE	2	/* use pipe, w/ headroom in queue/pipe */
#define BBR_BW_PROBE_REFILL	3	/* refill the pipe again to 100% */

#define BBR_ACKS_INIT		0	/* not probing; not getting probe feedback */
#define BBR_ACKS_REFILLING	1	/* sending at est. bw to fill pipe */
#define BBR_ACKS_PROBE_STARTING	2	/* inflight rising to probe bw */
#define BBR_ACKS_PROBE_FEEDBACK	3	/* getting feedback from bw probing */
#define BBR_ACKS_PROBE_STOPPING	4	/* stopped probing; still getting feedback */

/* What a loss that may prove spurious ended (2026 generation's undo). */
#define BBR_UNDO_NONE		0
#define BBR_UNDO_STARTUP	1	/* loss ended STARTUP */
#define BBR_UNDO_PROBE_BW_UP	2	/* loss ended a PROBE_UP */



/*
 * Send records: mainline keeps no per-packet "in flight at send" or "lost
 * at send" (a BBRv3 kernel's skb->tx.in_flight / tx.lost). What it does
 * keep is enough to rebuild them exactly, given a record of the socket each
 * time the relation between sequence space and those counts changes; see
 * "Send records" in bpf/core/bbr3.h and docs/bbr3.md.
 *
 * A record applies to every transmission after it: new data whose end_seq
 * is after snd_nxt, and retransmits sent while tp->delivered == delivered.
 */
#define BBR_TX_RECS		15	/* 15 x 16 B: the value stays in a 512 B slab object */
#define BBR_TX_PENDING_MAX	127	/* rtx_pending saturates here (s8) */

struct bbr_tx_rec {
	u32 snd_nxt;		/* tp->snd_nxt when the record opened */
	u32 delivered;		/* tp->delivered then */
	u32 lost;		/* tp->lost then */
	u32 inflight_pkts:24,	/* tcp_packets_in_flight() then */
	    rtx_pending:8;	/* lost_out - retrans_out then, as s8 */
};

/*
 * Per-connection BBRv3 state: the reference's struct bbr with fixed-width
 * fields instead of bitfields (bitfields cost verifier-visible shifts and
 * masks on every access). Saturations of the reference's narrow fields are
 * kept in code.
 */
struct bbr3 {
	/* Timestamps. µs ones are from tp->tcp_mstamp (CLOCK_MONOTONIC). */
	u64 cycle_mstamp_us;		/* start of current PROBE_BW phase; in
					 * the L4S gain cycle, of its up round */
	u64 ack_epoch_mstamp_us;	/* start of current ACK-aggregation epoch */
	u64 min_rtt_stamp_us;		/* when min_rtt_us was taken */
	u64 probe_rtt_min_stamp_us;	/* when probe_rtt_min_us was taken */
	u64 probe_rtt_done_stamp_us;	/* end of PROBE_RTT's 200 ms hold; 0 = unset */

	/* Long-term model. */
	u32 min_rtt_us;			/* min RTT over min_rtt_win; BBR_UNSET = none */
	u32 probe_rtt_min_us;		/* min RTT over probe_rtt_win */
	u32 bw_hi[2];			/* 2-slot max-bw filter, one slot per cycle */
	u32 inflight_hi;		/* upper bound of in-flight volume, pkts */

	/* Short-term model. */
	u32 bw_lo;			/* lower bound on bw after loss/ECN */
	u32 inflight_lo;		/* lower bound on inflight after loss/ECN */
	u32 bw_latest;			/* max delivery rate in the latest loss round */
	u32 inflight_latest;		/* max delivered in the latest loss round */

	/* Rounds. */
	u32 next_rtt_delivered;		/* tp->delivered at end of this round */
	u32 loss_round_delivered;	/* tp->delivered at end of this loss round */

	/* STARTUP plateau detector. */
	u32 full_bw;			/* baseline bw for the plateau test */

	/* Bandwidth probing. */
	u32 bw_probe_up_cnt;		/* ACKed pkts per inflight_hi increment */
	u32 bw_probe_up_acks;		/* ACKed pkts since last increment */
	u32 probe_wait_us;		/* PROBE_BW wait before the next probe */

	/* ECN. */
	u32 alpha_last_delivered;	/* tp->delivered at last alpha update */
	u32 alpha_last_delivered_ce;	/* tp->delivered_ce at last alpha update */

	/* ACK aggregation. */
	u32 ack_epoch_acked;		/* pkts ACKed in this epoch, <= 0xFFFFF */

	/* Recovery and undo. */
	u32 prior_cwnd;			/* cwnd before loss recovery / PROBE_RTT */
	u32 undo_bw_lo;
	u32 undo_inflight_lo;
	u32 undo_inflight_hi;
	u32 recovery_round_delivered;	/* end of the packet-conservation round */

	/* Reconstruction of inputs mainline lacks (docs/bbr3.md). */
	u32 last_lost;			/* tp->lost already accounted as losses */
	u32 tlp_high_seq;		/* tp->tlp_high_seq seen by in_ack_event */
	u32 round_count;		/* packet-timed rounds since init (wraps) */

	u16 extra_acked[2];		/* 2-slot max filter of extra ACKed pkts */
	u16 pacing_gain;		/* current, BBR_UNIT */
	u16 cwnd_gain;			/* current, BBR_UNIT */
	u16 ecn_alpha;			/* EWMA of CE fraction, 0..BBR_UNIT */

	u8 mode;			/* BBR_STARTUP .. BBR_PROBE_RTT */
	u8 cycle_idx;			/* BBR_BW_PROBE_UP .. _REFILL */
	u8 ack_phase;			/* BBR_ACKS_* */
	u8 prev_ca_state;		/* TCP_CA_* at the previous ACK */
	u8 init_cwnd;			/* cwnd at init, <= 127 */
	u8 rounds_since_probe;		/* saturates at 255; in the L4S gain
					 * cycle the round of the cycle */
	u8 bw_probe_up_rounds;		/* <= 30 */
	u8 loss_events_in_round;	/* <= 15 */
	u8 full_bw_cnt;			/* rounds without growth, <= 3 */
	u8 startup_ecn_rounds;		/* consecutive high-CE rounds in STARTUP;
					 * in the L4S mode rounds with CE */
	u8 extra_acked_win_rtts;	/* rounds in this extra_acked slot, <= 31 */
	u8 extra_acked_win_idx;		/* current extra_acked slot, 0 or 1 */
	u8 tx_rec_head;			/* index of the newest bbr_tx_rec */
	u8 in_recovery;			/* packet conservation active */

	/* One byte per flag: cheap to test, cheap for userspace to print. */
	u8 round_start;
	u8 loss_round_start;
	u8 full_bw_reached;
	u8 full_bw_now;
	u8 has_seen_rtt;
	u8 idle_restart;
	u8 try_fast_path;
	u8 probe_rtt_round_done;
	u8 loss_in_round;
	u8 ecn_in_round;
	u8 loss_in_cycle;
	u8 ecn_in_cycle;
	u8 ecn_eligible;
	u8 bw_probe_samples;
	u8 prev_probe_too_high;
	u8 stopped_risky_probe;
	u8 initialized;
	u8 tlp_retrans_seen;		/* tp->tlp_retrans seen by in_ack_event */
	u8 param_slot;			/* parameter set in use (bbr_params_of) */
	/* 2026 reference generation (BBR_GEN_2026). */
	u8 drain_rounds;		/* round starts in DRAIN, <= 7 */
	u8 undo_state;			/* BBR_UNDO_*: what a spurious loss ended */
	u8 loss_yet_in_recovery;	/* undo state saved for this episode */
	u8 idle_restarts;		/* sends after idle seen (wraps): stat */
	u8 l4s;				/* the L4S mode is in force: the l4s key
					 * and AccECN (docs/l4s.md) */
	u16 round_queue_max_us;		/* highest RTT excess over min_rtt in
					 * this loss round (saturates at 65.5 ms;
					 * loss_queue_thresh) */
	u16 round_queue_min_us;		/* lowest one (0xFFFF: no sample yet) */
	u16 probe_queue_us;		/* max RTT excess over min_rtt in STARTUP
					 * and the PROBE_UPs since, each new one
					 * keeping 3/4: the deepest queue
					 * (saturates at 65.5 ms) */
	u16 rtt_noise_us;		/* RTT excess over min_rtt a loss round
					 * shows with no queue: follows a lower
					 * round max at once, a higher one by
					 * 1/8 per round (loss_queue_thresh) */
};

/* The sk_storage value: model state plus the send records. */
struct bbr3_sk {
	struct bbr3 st;
	struct bbr_tx_rec rec[BBR_TX_RECS];
};

/* The runtime parameters (struct bbr_params): include/bbr_params.h. */
#include "bbr_params.h"


/*
 * One record per socket from the state iterator (iter/bpf_sk_storage_map):
 * enough to join with `ss -e` (cookie, addresses) and to print the model.
 */
/* bbr3_state_rec.ecn_mode, from the mode bits of tp->ecn_flags. */
#define BBR_ECN_MODE_OFF	0	/* no ECN */
#define BBR_ECN_MODE_RFC3168	1	/* classic ECN: one ECE per round trip */
#define BBR_ECN_MODE_ACCECN	2	/* AccECN (RFC 9768): CE counts per ACK */
#define BBR_ECN_MODE_PENDING	3	/* AccECN asked, handshake not finished */

/* bbr3_state_rec.l4s_mode */
#define BBR_L4S_OFF		0	/* the l4s key is 0 */
#define BBR_L4S_ON		1	/* l4s = 1 and AccECN: in force */
#define BBR_L4S_FALLBACK	2	/* l4s = 1 without AccECN: BBRv3's normal mode */

struct bbr3_state_rec {
	u64 cookie;			/* SO_COOKIE, as `ss -e` prints it */
	u64 pacing_rate_Bps;		/* sk->sk_pacing_rate, bytes/s */
	u32 version;			/* BBR3_STATE_VERSION */
	u32 snd_cwnd_pkts;
	u32 inflight_pkts;
	u32 mss_bytes;
	u32 srtt_us;
	u32 delivered;
	u32 lost;
	u32 delivered_ce;
	u16 family;			/* AF_INET or AF_INET6 */
	u16 sport;			/* host order */
	u16 dport;			/* host order */
	u16 _pad;
	u8 saddr[16];			/* IPv4 in the first 4 bytes */
	u8 daddr[16];
	/* tcp_info's view of the socket (read with CO-RE, not through the
	 * CC), so `bbrctl stat` needs no inet_diag per namespace. */
	u64 bytes_acked;		/* tcpi_bytes_acked */
	u64 bytes_retrans;		/* tcpi_bytes_retrans */
	u32 total_retrans;		/* tcpi_total_retrans, segments */
	u32 retrans_out;		/* tcpi_retrans: retransmits in flight */
	u32 lost_out;			/* tcpi_lost */
	u32 sacked_out;			/* tcpi_sacked */
	u32 snd_ssthresh;		/* tcpi_snd_ssthresh */
	u32 rttvar_us;			/* tcpi_rttvar */
	u32 kernel_min_rtt_us;		/* tcpi_min_rtt */
	u8 ca_state;			/* tcpi_ca_state: TCP_CA_* */
	u8 ecn_mode;			/* BBR_ECN_MODE_*: what the handshake negotiated */
	u8 l4s_mode;			/* BBR_L4S_*: the L4S mode asked and in force */
	u8 _pad2;
	u32 _pad3;
	u64 cgroup_id;			/* cgroup v2 id the socket was created in
					 * (0: none): `bbrctl metrics` per cgroup */
	struct bbr3 st;
};

/*
 * Tracing (bpf/lib/trace.h, `bbrctl trace`): one struct bbr_trace_ev per
 * event in the ring <prefix>_trace_rb; the control word is the only entry
 * of the array <prefix>_trace_ctl. Both are pinned as
 * PIN_ROOT/NAME/{trace_rb,trace_ctl} (include/bbr_pins.h).
 */
#define BBR_TRACE_VERSION	2	/* bump when struct bbr_trace_ev changes */

#define BBR_TRACE_CTL_ON	0x1	/* a reader is draining the ring */
#define BBR_TRACE_CTL_PER_ACK	0x2	/* one event per ACK, not per round */

struct bbr_trace_ctl {
	u32 flags;			/* BBR_TRACE_CTL_* */
	u32 owner_pid;			/* pid of the `bbrctl trace` that set them */
	u64 dropped;			/* events lost to a full ring (wraps) */
};

#define BBR_TRACE_EV_ROUND	0	/* first ACK of a packet-timed round */
#define BBR_TRACE_EV_ACK	1	/* any ACK (--per-ack) */
#define BBR_TRACE_EV_MODE	2	/* mode or PROBE_BW phase changed */

#define BBR_TRACE_F_ROUND_START	0x1	/* this ACK started a round */
#define BBR_TRACE_F_MODE_CHANGE	0x2	/* mode/phase differs from before it */

struct bbr_trace_ev {
	u64 t_ns;			/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	u64 cookie;			/* SO_COOKIE; 0 if never generated */
	u64 pacing_Bps;			/* sk_pacing_rate after the ACK, bytes/s */
	u32 bw;				/* model bw = min(max bw, bw_lo), BW_UNIT */
	u32 bw_lo;			/* BW_UNIT; 0 = unset */
	u32 bw_hi;			/* max of the 2-slot filter, BW_UNIT */
	u32 mss_bytes;			/* to turn BW_UNIT into bytes/s */
	u32 cwnd_pkts;
	u32 inflight_pkts;
	u32 min_rtt_us;			/* 0 = none yet */
	u32 rtt_us;			/* this ACK's RTT sample; 0 = none */
	u32 srtt_us;
	u32 inflight_lo;		/* pkts; 0 = unset */
	u32 inflight_hi;		/* pkts; 0 = unset */
	u32 delivered;			/* tp->delivered (loss/CE rates per round) */
	u32 lost;			/* tp->lost */
	u32 delivered_ce;		/* tp->delivered_ce */
	u32 round_count;		/* the model's round counter (wraps) */
	u32 network_rtt_us;		/* bbr_swift: latest ETS Network_RTT; else 0 */
	u32 swift_factor;		/* bbr_swift: last decrease, 65536 == 1.0 */
	u32 swift_decreases;		/* bbr_swift: decreases so far (wraps) */
	u32 target_rtt_us;		/* bbr_swift: target in force; 0 = none */
	u16 version;			/* BBR_TRACE_VERSION */
	u8 ev;				/* BBR_TRACE_EV_* */
	u8 mode;			/* BBR_STARTUP .. BBR_PROBE_RTT */
	u8 phase;			/* cycle_idx, meaningful in PROBE_BW */
	u8 flags;			/* BBR_TRACE_F_* */
	u8 swift_status;		/* bbr_swift: SWIFT_ST_*; else 0 */
	u8 ca_state;			/* TCP_CA_* */
	u32 decided_rtt_us;		/* bbr_swift: the Network_RTT its last
					 * decision used (path value or the round's
					 * least sample); else 0 */
};

#endif /* BBR3_STATE_H */
