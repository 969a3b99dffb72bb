/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * BBRv3 congestion control: the algorithm core.
 *
 * BBR builds an explicit model of the path from the stream of ACKs and paces
 * to it, instead of reacting to loss as the only signal of congestion:
 *
 *   - bottleneck bandwidth: the max delivery rate seen over the last two
 *     bandwidth-probing cycles (bw_hi[2], the "max-bw filter");
 *   - round-trip propagation time: the min RTT seen over 10 s (min_rtt_us);
 *   - the volume the path can hold before loss or ECN marks become
 *     excessive (inflight_hi, the long-term upper bound), and short-term
 *     lower bounds on rate and volume after recent loss or ECN (bw_lo,
 *     inflight_lo).
 *
 * From bw = min(max_bw, bw_lo) and min_rtt it sets the pacing rate
 * (pacing_gain * bw) and cwnd (cwnd_gain * BDP plus allowances for ACK
 * aggregation and TSO bursts), then caps cwnd by inflight_hi/inflight_lo.
 *
 * The state machine:
 *
 *   STARTUP   pacing 2.77x, cwnd 2x: grow exponentially until the delivery
 *             rate stops growing 25 % per round for 3 rounds, or loss/ECN
 *             are too high (then inflight_hi is seeded).
 *   DRAIN     pacing 0.34x until in-flight falls to one BDP.
 *   PROBE_BW  a cycle of phases, 2-3 s apart (or sooner for Reno
 *             coexistence):
 *               DOWN   pace 0.91x to drain any queue the probe made;
 *               CRUISE pace 1.0x, keeping headroom below inflight_hi;
 *               REFILL pace 1.0x for one round with the lower bounds reset;
 *               UP     pace 1.25x, growing inflight_hi exponentially per
 *                      round until loss/ECN exceed their thresholds (2 % /
 *                      50 %) or the bandwidth plateaus.
 *   PROBE_RTT every 5 s without a new min RTT: cwnd 0.5 BDP for 200 ms and
 *             one round, to let queues drain and re-measure min_rtt.
 *
 * This file is plain C that compiles both with `clang -target bpf` and
 * natively: a CC's cong_control program reads the kernel's inputs into a
 * struct bbr_sock and a struct bbr_rs (lib/tcp_cc.h), calls bbr_core_main(),
 * and writes back cwnd and pacing rate; the unit tests drive the same
 * functions with synthetic inputs.
 *
 * In BPF every function the compiler does not inline is a BPF-to-BPF call,
 * ~10 ns here with the kernel's return thunks (docs/performance.md). The
 * entry points and the few large per-ACK steps are global functions
 * (BBR_API: the verifier checks each once, on its own); the small functions
 * an ordinary ACK runs, which clang would outline for their several call
 * sites, are BBR_INLINE. Inlining a static function costs the verifier
 * little: it walks a static callee once per call site anyway. Names of states, variables and constants follow the
 * reference implementation (google/bbr v3, net/ipv4/tcp_bbr.c) so the two
 * can be compared side by side; the code is our own. The sections follow
 * the order of the IETF BBR draft (draft-ietf-ccwg-bbr): pacing rate and
 * cwnd helpers, the delivery rate and rounds, congestion signals, the
 * PROBE_BW cycle, lower bounds, STARTUP and DRAIN, PROBE_RTT, the control
 * (gains, cwnd), losses, then the entry points.
 *
 * What this file is not: the inputs mainline Linux lacks and the glue
 * rebuilds are core/reconstruct.h; the tunables and profiles are
 * core/bbr3_params.h; variants (the L4S mode: core/l4s.h, BBR.Swift:
 * core/swift.h) are hook sets an object includes after this file, never
 * the other way round (see "Hooks" below), and so is the 2023 reference
 * generation (core/bbr3_2023.h), whose hooks every object includes and
 * which a socket selects with the key `generation`. The "beyond v3" keys
 * (v3plus) are runtime keys of every socket: cheap compares on the
 * per-ACK path.
 *
 * The includer must, before including this file:
 *   - define u8..u64 (vmlinux.h, or core/types.h natively);
 *   - define BBR_PRANDOM_U32() returning a random u32;
 *   - define BBR_CFG as the name of a global array
 *     struct bbr_params BBR_CFG[BBR_PARAM_SLOTS] (the parameter sets);
 *   - optionally define BBR_EXT, the type of its variant's per-socket state;
 * and after it: define the hooks its variant provides (each with
 * BBR_HOOK_<NAME> defined), then include core/bbr3_hooks.h for the rest.
 */
#ifndef BBR3_CORE_H
#define BBR3_CORE_H

#include "core/types.h"
#include "bbr3_state.h"

/* ---- Fixed-point scales ---------------------------------------------- */

/* Bandwidth is packets per microsecond scaled by 2^24: one unit is ~715
 * bit/s at a 1500-byte MSS, and a u32 holds up to ~3 Tbit/s. */
#define BW_SCALE		24
#define BW_UNIT			(1ULL << BW_SCALE)

/* Gains and fractions are scaled by 256 (BBR_UNIT == 1.0). */
#define BBR_SCALE		8
#define BBR_UNIT		(1u << BBR_SCALE)

#define BBR_USEC_PER_MSEC	1000ULL
#define BBR_USEC_PER_SEC	1000000ULL
#define BBR_NSEC_PER_USEC	1000ULL

/* ---- Constants of the model (reference values, same integer rounding) -- */

/* Floor of cwnd and of every cap: enough for pipelining with delayed ACKs
 * (2 data packets and 2 ACKs in flight). Reference: bbr_cwnd_min_target. */
#define BBR_CWND_MIN_TARGET_PKTS	4u
/* Halve the RTT-based TSO burst allowance per 512 µs of min_rtt.
 * Reference: bbr_tso_rtt_shift. */
#define BBR_TSO_RTT_SHIFT		9
/* Pace 1 % below the model rate so queues drain. Reference:
 * bbr_pacing_margin_percent. */
#define BBR_PACING_MARGIN_PERCENT	1
/* Bandwidth must grow by 25 % per round to count as still growing. */
#define BBR_FULL_BW_THRESH		(BBR_UNIT * 5 / 4)
/* Rounds without 25 % growth that mean the pipe is full. */
#define BBR_FULL_BW_CNT			3u
/* Consecutive rounds with CE ratio >= ecn_thresh that end STARTUP. */
#define BBR_FULL_ECN_CNT		2u
/* Rounds per extra_acked filter slot once the pipe is full (1 before). */
#define BBR_EXTRA_ACKED_WIN_RTTS	5u
/* Restart the ACK-aggregation epoch when its counter would reach this. */
#define BBR_ACK_EPOCH_ACKED_RESET_THRESH (1u << 20)
#define BBR_ACK_EPOCH_ACKED_MAX_PKTS	0xFFFFFu	/* 20-bit field in the reference */
/* The aggregation allowance is at most bw * 100 ms. */
#define BBR_EXTRA_ACKED_MAX_US		100000ULL
/* PROBE_RTT holds cwnd at 0.5 BDP (floored at BBR_CWND_MIN_TARGET_PKTS). */
#define BBR_PROBE_RTT_CWND_GAIN		(BBR_UNIT / 2)
/* Reno coexistence: probe at least every min(63, BDP) rounds. */
#define BBR_BW_PROBE_MAX_ROUNDS		63u
/* rounds_since_probe starts at a random value in [0, 2). */
#define BBR_BW_PROBE_RAND_ROUNDS	2u
/* Wall-clock wait between probes: 2 s + uniform [0, 1 s). */
#define BBR_BW_PROBE_BASE_US		(2u * 1000000u)
#define BBR_BW_PROBE_RAND_US		(1u * 1000000u)
/* Saturations of the reference's narrow bitfields. */
#define BBR_ROUNDS_SINCE_PROBE_MAX	255u
#define BBR_BW_PROBE_UP_ROUNDS_MAX	30u
#define BBR_LOSS_EVENTS_MAX		15u
#define BBR_EXTRA_ACKED_WIN_RTTS_MAX	31u
#define BBR_STARTUP_ECN_ROUNDS_MAX	3u
#define BBR_INIT_CWND_MAX_PKTS		127u
#define BBR_U16_MAX			0xFFFFu
/* GSO_LEGACY_MAX_SIZE: the TSO goal used for cwnd budgeting. */
#define BBR_GSO_LEGACY_MAX_SIZE_BYTES	65536u
/* DRAIN pacing gain: 0.5 (the key drain_gain = 0 picks this, or the 2023
 * generation's: core/bbr3_2023.h). */
#define BBR_DRAIN_GAIN_2026		(BBR_UNIT / 2)
/* 2026: DRAIN ends after more than this many round starts even if in
 * flight is still above the BDP (a DRAIN that could stick cannot). */
#define BBR_MAX_DRAIN_ROUNDS		3u
#define BBR_DRAIN_ROUNDS_MAX		7u	/* 3-bit field in the reference */
/* Default of net.ipv4.tcp_min_tso_segs. */
#define BBR_MIN_TSO_SEGS		2u
/* Default sk_pacing_shift: TSO autosizing sends 1 ms of data per skb. */
#define BBR_PACING_SHIFT_DEFAULT	10u
/* Beyond the reference (v3plus): a new PROBE_UP keeps 3/4 of the deepest
 * queue (excess RTT over min_rtt) the probes before it saw, in BBR_UNIT;
 * see bbr_age_probe_queue(). */
#define BBR_PROBE_QUEUE_KEEP		(BBR_UNIT * 3 / 4)
/* ... and never allows less than 1/4 of loss_queue_thresh x min_rtt: a
 * real path's RTT samples sit above min_rtt by host and ACK noise even
 * with no queue, so with no probe queue seen yet (early STARTUP) nothing
 * could look random. */
#define BBR_LOSS_QUEUE_FLOOR_DIV	4u
/* ... nor less than this many times the RTT noise (rtt_noise_us: how far
 * a loss round's highest sample sits above min_rtt when the round holds
 * no queue; see bbr_update_rtt_noise()). A round's highest sample scatters
 * around that level (the maximum of a few hundred noisy samples), so the
 * allowance keeps a factor of 2 above it; a queue that overflows shows an
 * excess beyond that, unless the buffer is no deeper than the noise. In
 * the packet model with uniform 0-2 ms noise on each sample (the lab's
 * loaded host: samples ~1.5 ms above min_rtt) 3 % random loss keeps 0.49
 * of a 50 Mbit/s, 40 ms link against the constant floor's 1.25 ms. */
#define BBR_LOSS_NOISE_MULT		2u
/* rtt_noise_us rises toward a higher round max by 1/2^this per round (and
 * falls to a lower one at once): a min filter that forgets within ~8
 * rounds, so the probes' own queue hardly enters it. */
#define BBR_RTT_NOISE_RISE_SHIFT	3u
/* A loss round teaches the noise level only if its lowest excess over
 * min_rtt is at most 1/this of its highest: the queue drained within the
 * round, so its highest excess is noise, not a queue that stood. In the
 * packet model 4 flows in a buffer of 0.1 BDP, which they keep partly
 * full, otherwise raise the level to the buffer's depth and pass its
 * drops off as random (retransmits 1.9 % -> 7.3 %, Jain 0.97 -> 0.68). */
#define BBR_RTT_NOISE_DRAINED_DIV	4u
/* Beyond the reference (v3plus, with loss_queue_thresh): a sample's loss
 * is "too high" only if at least this many packets were lost. Below
 * 1 / loss_thresh = 50 packets in flight one random loss is already above
 * the 2 % threshold: at 1 % random loss a flow with 40 in flight meets it
 * in a third of its rounds, one with 150 in 7 %, so the smaller flow's
 * probes end early and its inflight_hi is cut, and two flows keep any
 * split they have (lab, 2 flows at 1 % loss: 16 vs 32 Mbit/s for 20 s). */
#ifndef BBR_LOSS_MIN_PKTS
#define BBR_LOSS_MIN_PKTS		3u
#endif
/* No usable RTT yet: assume 1 ms for the initial pacing rate. */
#define BBR_INIT_RTT_US			1000u
/* A live connection switched to this CC (warm start, bbr_core_init) must
 * have delivered at least this much for its cwnd/srtt to describe the
 * path: two initial windows of 10 segments (RFC 6928). */
#define BBR_WARM_START_MIN_DELIVERED_PKTS	20u
#define BBR_TCP_INFINITE_SSTHRESH	0x7fffffffu

/* TCP congestion-avoidance states (enum tcp_ca_state). */
#define BBR_CA_OPEN		0
#define BBR_CA_DISORDER		1
#define BBR_CA_CWR		2
#define BBR_CA_RECOVERY		3
#define BBR_CA_LOSS		4

/* The tunables: core/bbr3_params.h. */
_Static_assert(BBR_PARAM_UNIT == BBR_UNIT, "bbr_params.h's unit is BBR_UNIT");

#include "core/bbr3_params.h"

/* ---- Inputs ------------------------------------------------------------ */

/*
 * The socket as the core sees it on one call: what the glue read from
 * struct tcp_sock / struct sock, plus the outputs (snd_cwnd, snd_ssthresh,
 * pacing_rate, app_limited), which the glue writes back if they changed.
 */
struct bbr_sock {
	u64 now_us;			/* tp->tcp_mstamp */
	u64 delivered_mstamp_us;	/* tp->delivered_mstamp */
	u64 edt_lead_ns;		/* max(tcp_wstamp_ns, clock_cache) - clock_cache */
	u64 max_pacing_rate;		/* sk->sk_max_pacing_rate, bytes/s */
	u32 delivered;			/* tp->delivered */
	u32 delivered_ce;		/* tp->delivered_ce */
	u32 lost;			/* tp->lost */
	u32 inflight;			/* tcp_packets_in_flight(tp) */
	u32 packets_out;		/* tp->packets_out */
	u32 sacked_out;			/* tp->sacked_out */
	u32 lost_out;			/* tp->lost_out */
	u32 retrans_out;		/* tp->retrans_out */
	u32 mss;			/* tp->mss_cache */
	u32 srtt_us;			/* tp->srtt_us >> 3; 0 = no sample */
	u32 kernel_min_rtt_us;		/* tcp_min_rtt(tp); ~0 = none */
	u32 snd_cwnd_clamp;
	u32 snd_nxt;
	u32 snd_una;
	u32 tlp_high_seq;		/* tp->tlp_high_seq */
	u32 prior_cwnd;			/* tp->prior_cwnd (init only) */
	u32 rate_delivered;		/* tp->rate_delivered (init only) */
	u32 rate_interval_us;		/* tp->rate_interval_us (init only) */
	u32 ack;			/* cong_control's ack argument */
	u8 pacing_shift;		/* sk->sk_pacing_shift */
	u8 ca_state;			/* icsk_ca_state */
	u8 is_cwnd_limited;		/* tp->is_cwnd_limited */
	u8 tlp_retrans;			/* tp->tlp_retrans */
	u8 ecn_ok;			/* ECN negotiated (RFC 3168 or AccECN) */
	u8 ece;				/* this ACK echoed CE (FLAG_ECE) */
	u8 dsack_tlp;			/* this ACK DSACKed a TLP (FLAG_DSACK_TLP) */
	u8 accecn;			/* AccECN negotiated: CE counts per ACK */
	/* in/out */
	u32 snd_cwnd;
	u32 snd_ssthresh;
	u32 app_limited;		/* tp->app_limited */
	u64 pacing_rate;		/* sk->sk_pacing_rate, bytes/s */
};

/*
 * A rate sample: the fields of the kernel's struct rate_sample that BBR
 * uses, plus what mainline does not provide and the glue reconstructs
 * (tx_in_flight, lost, is_acking_tlp_retrans_seq), plus the per-ACK bw
 * sample the core computes (the reference keeps it in a bbr_context).
 */
struct bbr_rs {
	s32 interval_us;		/* < 0 or 0: not a valid sample */
	s32 rtt_us;			/* < 0: no RTT sample */
	u32 prior_delivered;		/* tp->delivered when the acked pkt was sent */
	s32 delivered;			/* pkts delivered over interval_us */
	s32 delivered_ce;		/* of which CE-marked */
	s32 losses;			/* pkts newly marked lost by this ACK */
	u32 acked_sacked;		/* pkts newly ACKed or SACKed */
	u32 prior_in_flight;		/* in flight before this ACK */
	u32 last_end_seq;		/* end_seq of the most recently sent acked pkt */
	u8 is_app_limited;
	u8 is_retrans;
	u8 is_ack_delayed;
	u8 is_acking_tlp_retrans_seq;	/* reconstructed */
	u8 has_tx;			/* tx_in_flight and lost are given (a
					 * BBRv3 kernel's values): don't rebuild */
	u8 _pad[3];
	u32 tx_in_flight;		/* in flight right after it was sent */
	s32 lost;			/* tp->lost now - tp->lost when it was sent */
	u32 bw;				/* computed: this ACK's delivery rate, BW_UNIT */
};

/*
 * A transmission the stack just marked lost, as a hook on the stack's loss
 * marking (tcp_mark_skb_lost) sees it, or as the model gives it.
 */
struct bbr_lost_skb {
	u32 end_seq;			/* TCP_SKB_CB(skb)->end_seq */
	u32 tx_delivered;		/* tx.delivered: tp->delivered at its send */
	u32 pcount;			/* tcp_skb_pcount(skb) */
	u8 is_retrans;			/* TCPCB_EVER_RETRANS: sent more than once */
	u8 is_app_limited;		/* tx.is_app_limited */
	u8 has_tx;			/* tx_in_flight and lost are given */
	u8 _pad;
	u32 tx_in_flight;		/* in flight right after it was sent */
	s32 lost;			/* tp->lost now (counting it) - at its send */
};

/* ---- Hooks: where a variant's behaviour enters ----------------------------------------- */

/*
 * The core is plain BBRv3. A variant (an object that includes it: bbr3_l4s,
 * bbr_swift) changes it only at the points below, each a function the
 * includer defines after including this file; core/bbr3_hooks.h, included
 * last, gives every hook the includer did not define (by defining
 * BBR_HOOK_<NAME>) BBRv3's own behaviour, which is to do nothing. The
 * hooks are static inline: a hook left at its default costs nothing.
 *
 * Per socket, per ACK:
 *   bbr_hook_mode(b, sk)            at the start of the pipeline: whether
 *                                   the variant's mode is in force for this
 *                                   connection (L4S: AccECN negotiated).
 *   bbr_hook_signal(b, x, sk, rs)   before the model: a congestion signal
 *                                   of the variant's own (Swift: the delay),
 *                                   acting through bbr_signal_*() below.
 *   bbr_hook_cap(b, x, sk)          after the control: caps on cwnd and
 *                                   pacing rate (Swift's window).
 * Bandwidth sample:
 *   bbr_hook_bw_sample(b, rs, &pkts, &scale)
 *                                   the packets the sample counts, in
 *                                   1/scale packet (L4S: CE discount).
 * STARTUP exit:
 *   bbr_hook_reads_ce(b)            true: the round's CE ratio is read even
 *                                   without BBRv3's ECN response.
 *   bbr_hook_startup_ce(b, sk, ce)  at a round start in STARTUP, ce the
 *                                   round's CE-marked packets: true if the
 *                                   variant's rule replaces BBRv3's ECN rule.
 *   bbr_hook_skip_drain(b)          true: STARTUP ended with no queue to
 *                                   drain, go straight to PROBE_BW.
 *   bbr_hook_undo_startup(b)        a spurious loss's undo returns to STARTUP.
 * PROBE_BW cycle policy:
 *   bbr_hook_cycle(b, sk)           true: the variant ran its own cycle
 *                                   instead of BBRv3's phases on this ACK.
 *   bbr_hook_cycle_gains(b)         true: it set PROBE_BW's gains itself.
 *   bbr_hook_cycle_down(b)          a probe ended (DOWN starts).
 *   bbr_hook_cycle_owns_bw_filter(b) true: the variant ages the max-bw
 *                                   filter, not the end of a probe.
 *   bbr_hook_round_start(b)         at every round start.
 * PROBE_RTT policy:
 *   bbr_hook_probe_rtt_allowed(b)   false: no PROBE_RTT.
 * Glue (bpf/lib/trace.h):
 *   bbr_hook_trace(ev, x)           the variant's fields of a trace event.
 * The reference generation (core/bbr3_2023.h, per socket by the key
 * generation; this file is the 2026 one):
 *   bbr_hook_tso_max_bytes(b, gso)  the cap of a TSO burst's bytes.
 *   bbr_hook_drain_gain(b)          DRAIN's pacing gain when drain_gain is 0.
 *   bbr_hook_drain_rounds(b)        true: DRAIN ends after
 *                                   BBR_MAX_DRAIN_ROUNDS rounds.
 *   bbr_hook_startup_loss_too_high(b, rs)  the test of STARTUP's loss exit.
 *   bbr_hook_loss_undo(b)           true: the undo state is saved at the
 *                                   first lost packet, and undo returns to
 *                                   the phase a spurious loss ended.
 *
 * BBR_EXT is the type of the variant's per-socket state that signal, cap
 * and trace receive (`x`; struct bbr_delay for Swift); an includer without
 * one leaves it to the default. Which socket runs a variant is decided per
 * object (the CC name the socket uses); within an object the variant's
 * hooks may still test per-socket conditions (L4S: AccECN).
 */
#ifndef BBR_EXT
struct bbr_ext_none {
	u8 unused;
};
#define BBR_EXT			struct bbr_ext_none
#endif

struct bbr_trace_ev;

static inline void bbr_hook_mode(struct bbr3 *b, const struct bbr_sock *sk);
static inline void bbr_hook_signal(struct bbr3 *b, BBR_EXT *x, struct bbr_sock *sk,
				   const struct bbr_rs *rs);
static inline void bbr_hook_cap(const struct bbr3 *b, BBR_EXT *x,
				struct bbr_sock *sk);
static inline void bbr_hook_bw_sample(const struct bbr3 *b, const struct bbr_rs *rs,
				      u64 *pkts, u64 *scale);
static inline bool bbr_hook_reads_ce(const struct bbr3 *b);
static inline bool bbr_hook_startup_ce(struct bbr3 *b, const struct bbr_sock *sk,
				       u32 delivered_ce);
static inline bool bbr_hook_skip_drain(const struct bbr3 *b);
static inline void bbr_hook_undo_startup(struct bbr3 *b);
static inline bool bbr_hook_cycle(struct bbr3 *b, const struct bbr_sock *sk);
static inline bool bbr_hook_cycle_gains(struct bbr3 *b);
static inline void bbr_hook_cycle_down(struct bbr3 *b);
static inline bool bbr_hook_cycle_owns_bw_filter(const struct bbr3 *b);
static inline void bbr_hook_round_start(struct bbr3 *b);
static inline bool bbr_hook_probe_rtt_allowed(const struct bbr3 *b);
static inline void bbr_hook_trace(struct bbr_trace_ev *ev, const BBR_EXT *x);
static inline u32 bbr_hook_tso_max_bytes(const struct bbr3 *b, u32 gso_max_size);
static inline u32 bbr_hook_drain_gain(const struct bbr3 *b);
static inline bool bbr_hook_drain_rounds(const struct bbr3 *b);
static inline bool bbr_hook_startup_loss_too_high(const struct bbr3 *b,
						  const struct bbr_rs *rs);
static inline bool bbr_hook_loss_undo(const struct bbr3 *b);

/* The reconstruction's entry points (core/reconstruct.h, included at the
 * end of this file), called by the ops below. */
static inline void bbr_reconstruct_inputs(struct bbr3_sk *sks,
					  struct bbr_sock *sk, struct bbr_rs *rs);
static inline void bbr_tx_note(struct bbr3_sk *sks, const struct bbr_sock *sk);
static inline void bbr_tx_reset(struct bbr3_sk *sks, const struct bbr_sock *sk);

/* ---- Small accessors ---------------------------------------------------- */

static inline u32 bbr_max_bw(const struct bbr3 *b)
{
	return bbr_max_u32(b->bw_hi[0], b->bw_hi[1]);
}

/* The bandwidth the model uses: the max filter, bounded by bw_lo. */
static inline u32 bbr_bw(const struct bbr3 *b)
{
	return bbr_min_u32(bbr_max_bw(b), b->bw_lo);
}

static inline u16 bbr_extra_acked(const struct bbr3 *b)
{
	return b->extra_acked[0] > b->extra_acked[1] ?
	       b->extra_acked[0] : b->extra_acked[1];
}

static inline bool bbr_can_use_ecn(const struct bbr3 *b,
				   const struct bbr_sock *sk)
{
	/* The reference also needs the route's "low-threshold ECN" feature,
	 * which mainline lacks: the operator opts in with ecn_enable. The
	 * 2026 generation removed ECN from the algorithm; with ecn_enable
	 * (default off) bbr3 keeps the 2023 generation's ECN response. */
	return BBR_P(b).ecn_enable && sk->ecn_ok;
}

static inline bool bbr_is_probing_bandwidth(const struct bbr3 *b)
{
	return b->mode == BBR_STARTUP ||
	       (b->mode == BBR_PROBE_BW &&
		(b->cycle_idx == BBR_BW_PROBE_REFILL ||
		 b->cycle_idx == BBR_BW_PROBE_UP));
}

/* Strictly more than interval_us since the current phase started? */
static inline bool bbr_has_elapsed_in_phase(const struct bbr3 *b,
					    const struct bbr_sock *sk,
					    u32 interval_us)
{
	return (s64)(sk->now_us - (b->cycle_mstamp_us + interval_us)) > 0;
}

/* ---- Pacing rate --------------------------------------------------------- */

/* bw (BW_UNIT) * gain (BBR_UNIT) * (100 - margin) % -> bytes per second.
 * The order of operations keeps u64 from overflowing below ~2.9 Tbit/s. */
static inline u64 bbr_rate_bytes_per_sec(const struct bbr_sock *sk, u64 rate,
					 u32 gain, u32 margin_percent)
{
	rate *= sk->mss;
	rate *= gain;
	rate >>= BBR_SCALE;
	rate *= BBR_USEC_PER_SEC / 100 * (100 - margin_percent);
	rate >>= BW_SCALE;
	return bbr_max_u64(rate, 1);
}

static inline u64 bbr_bw_to_pacing_rate(const struct bbr_sock *sk, u32 bw,
					u32 gain)
{
	u64 rate = bbr_rate_bytes_per_sec(sk, bw, gain,
					  BBR_PACING_MARGIN_PERCENT);

	return bbr_min_u64(rate, sk->max_pacing_rate);
}

/* Before any bw sample: cwnd per smoothed RTT (or 1 ms) at STARTUP gain. */
static inline void bbr_init_pacing_rate_from_rtt(struct bbr3 *b,
						 struct bbr_sock *sk)
{
	u32 rtt_us = BBR_INIT_RTT_US;
	u64 bw;

	if (sk->srtt_us) {
		rtt_us = bbr_max_u32(sk->srtt_us, 1);
		b->has_seen_rtt = 1;
	}
	bw = (u64)sk->snd_cwnd * BW_UNIT / rtt_us;
	bw = bbr_min_u64(bw, 0xFFFFFFFFu);
	sk->pacing_rate = bbr_bw_to_pacing_rate(sk, (u32)bw,
						BBR_P(b).startup_pacing_gain);
}

/* Until the pipe is full the pacing rate only goes up: a low early sample
 * must not slow STARTUP down. */
static inline void bbr_set_pacing_rate(struct bbr3 *b, struct bbr_sock *sk,
				       u32 bw, u32 gain)
{
	u64 rate = bbr_bw_to_pacing_rate(sk, bw, gain);

	if (!b->has_seen_rtt && sk->srtt_us)
		bbr_init_pacing_rate_from_rtt(b, sk);
	if (b->full_bw_reached || rate > sk->pacing_rate)
		sk->pacing_rate = rate;
}

/* ---- cwnd helpers ------------------------------------------------------ */

/* Segments per TSO burst: 1 ms of data at the pacing rate (rate >>
 * pacing_shift) plus an allowance that halves per 512 µs of min_rtt, so
 * low-RTT paths get bigger bursts. */
BBR_INLINE u32 bbr_tso_segs_generic(const struct bbr3 *b,
				       const struct bbr_sock *sk,
				       u32 mss, u32 gso_max_size)
{
	u32 shift = sk->pacing_shift < 64 ? sk->pacing_shift : 63;
	u64 bytes = sk->pacing_rate >> shift;
	u32 r = b->min_rtt_us >> BBR_TSO_RTT_SHIFT;

	if (r < 32)
		bytes += gso_max_size >> r;
	bytes = bbr_min_u64(bytes, bbr_hook_tso_max_bytes(b, gso_max_size));
	if (!mss)
		return BBR_MIN_TSO_SEGS;
	return bbr_max_u32((u32)(bytes / mss), BBR_MIN_TSO_SEGS);
}

BBR_INLINE u32 bbr_tso_segs_goal(const struct bbr3 *b,
				    const struct bbr_sock *sk)
{
	return bbr_tso_segs_generic(b, sk, sk->mss,
				    BBR_GSO_LEGACY_MAX_SIZE_BYTES);
}

/* Remember the last-known good cwnd before recovery or PROBE_RTT. */
static inline void bbr_save_cwnd(struct bbr3 *b, const struct bbr_sock *sk)
{
	if (b->prev_ca_state < BBR_CA_RECOVERY && b->mode != BBR_PROBE_RTT)
		b->prior_cwnd = sk->snd_cwnd;
	else
		b->prior_cwnd = bbr_max_u32(b->prior_cwnd, sk->snd_cwnd);
}

/* gain * BDP in packets, rounded up; init_cwnd before any RTT sample. */
static inline u32 bbr_bdp(const struct bbr3 *b, u32 bw, u32 gain)
{
	u64 w, bdp;

	if (b->min_rtt_us == BBR_UNSET)
		return b->init_cwnd;
	w = (u64)bw * b->min_rtt_us;
	bdp = (((w * gain) >> BBR_SCALE) + BW_UNIT - 1) / BW_UNIT;
	return (u32)bbr_min_u64(bdp, 0xFFFFFFFFu);
}

/* Room for TSO bursts at both ends, the pipelining floor, and +2 in UP so
 * the probe can actually put more in flight. */
BBR_INLINE u32 bbr_quantization_budget(const struct bbr3 *b,
					  const struct bbr_sock *sk, u32 cwnd)
{
	u32 tso_segs_goal = bbr_tso_segs_goal(b, sk);

	cwnd = bbr_max_u32(cwnd, 3 * tso_segs_goal);
	cwnd = bbr_max_u32(cwnd, BBR_CWND_MIN_TARGET_PKTS);
	if (b->mode == BBR_PROBE_BW && b->cycle_idx == BBR_BW_PROBE_UP)
		cwnd += 2;
	return cwnd;
}

BBR_INLINE u32 bbr_inflight(const struct bbr3 *b, const struct bbr_sock *sk,
			       u32 bw, u32 gain)
{
	return bbr_quantization_budget(b, sk, bbr_bdp(b, bw, gain));
}

/* What will still be in the network when the next packet's departure time
 * (EDT) arrives: pacing may already have scheduled it in the future. */
BBR_INLINE u32 bbr_packets_in_net_at_edt(const struct bbr3 *b,
					    const struct bbr_sock *sk,
					    u32 inflight_now)
{
	u64 interval_us = sk->edt_lead_ns / BBR_NSEC_PER_USEC;
	u64 interval_delivered = ((u64)bbr_bw(b) * interval_us) >> BW_SCALE;
	u64 inflight_at_edt = inflight_now;

	if (b->pacing_gain > BBR_UNIT)		/* a probe sends a TSO burst more */
		inflight_at_edt += bbr_tso_segs_goal(b, sk);
	if (interval_delivered >= inflight_at_edt)
		return 0;
	return (u32)(inflight_at_edt - interval_delivered);
}

/* cwnd allowance for ACK aggregation: extra_acked, at most bw * 100 ms. */
static inline u32 bbr_ack_aggregation_cwnd(const struct bbr3 *b)
{
	u64 max_aggr_cwnd, aggr_cwnd = 0;

	if (BBR_P(b).extra_acked_gain) {
		max_aggr_cwnd = ((u64)bbr_bw(b) * BBR_EXTRA_ACKED_MAX_US) / BW_UNIT;
		aggr_cwnd = ((u64)BBR_P(b).extra_acked_gain *
			     bbr_extra_acked(b)) >> BBR_SCALE;
		aggr_cwnd = bbr_min_u64(aggr_cwnd, max_aggr_cwnd);
	}
	return (u32)aggr_cwnd;
}

static inline u32 bbr_probe_rtt_cwnd(const struct bbr3 *b)
{
	return bbr_max_u32(bbr_bdp(b, bbr_bw(b), BBR_PROBE_RTT_CWND_GAIN),
			   BBR_CWND_MIN_TARGET_PKTS);
}

/* BDP with quantization budget, but no more than cwnd. */
BBR_INLINE u32 bbr_target_inflight(const struct bbr3 *b,
				      const struct bbr_sock *sk)
{
	return bbr_min_u32(bbr_inflight(b, sk, bbr_bw(b), BBR_UNIT),
			   sk->snd_cwnd);
}

/* inflight_hi less 15 % headroom, so cruising leaves room for others. */
static inline u32 bbr_inflight_with_headroom(const struct bbr3 *b)
{
	u32 headroom;
	s64 inflight;

	if (b->inflight_hi == BBR_UNSET)
		return BBR_UNSET;
	headroom = (u32)(((u64)b->inflight_hi * BBR_P(b).inflight_headroom) >>
			 BBR_SCALE);
	headroom = bbr_max_u32(headroom, 1);
	inflight = (s64)b->inflight_hi - headroom;
	if (inflight < BBR_CWND_MIN_TARGET_PKTS)
		inflight = BBR_CWND_MIN_TARGET_PKTS;
	return (u32)inflight;
}

/* ---- Rounds, signals, filters ---------------------------------------------- */

static inline void bbr_reset_full_bw(struct bbr3 *b)
{
	b->full_bw = 0;
	b->full_bw_cnt = 0;
	b->full_bw_now = 0;
}

static inline void bbr_reset_lower_bounds(struct bbr3 *b)
{
	b->bw_lo = BBR_UNSET;
	b->inflight_lo = BBR_UNSET;
}

static inline void bbr_reset_congestion_signals(struct bbr3 *b)
{
	b->loss_in_round = 0;
	b->ecn_in_round = 0;
	b->loss_in_cycle = 0;
	b->ecn_in_cycle = 0;
	b->bw_latest = 0;
	b->inflight_latest = 0;
}

static inline void bbr_start_round(struct bbr3 *b, const struct bbr_sock *sk)
{
	b->next_rtt_delivered = sk->delivered;
}

/* A round ends when a packet sent after the previous round's end is ACKed. */
static inline void bbr_update_round_start(struct bbr3 *b,
					  const struct bbr_sock *sk,
					  const struct bbr_rs *rs)
{
	b->round_start = 0;
	if (rs->interval_us > 0 &&
	    !bbr_before(rs->prior_delivered, b->next_rtt_delivered)) {
		b->next_rtt_delivered = sk->delivered;
		b->round_start = 1;
	}
}

/* The rate sample's bandwidth: delivered over interval, rounded up (a
 * variant may count the delivered packets otherwise: bbr_hook_bw_sample()). */
static inline void bbr_calculate_bw_sample(const struct bbr3 *b, struct bbr_rs *rs)
{
	u64 bw = 0, pkts, scale = 1;

	if (rs->interval_us > 0 && rs->delivered >= 0) {
		pkts = (u64)rs->delivered;
		bbr_hook_bw_sample(b, rs, &pkts, &scale);
		bw = bbr_div_round_up_u64(pkts * BW_UNIT, (u64)rs->interval_us * scale);
		bw = bbr_min_u64(bw, 0xFFFFFFFFu);
	}
	rs->bw = (u32)bw;
}

/* Beyond the reference (loss_queue_thresh): an RTT sample's excess over
 * min_rtt, the queue it saw plus its noise; 0 below min_rtt, at most 65.5 ms. */
static inline u16 bbr_rtt_queue_us(const struct bbr3 *b, const struct bbr_rs *rs)
{
	u64 rtt = (u64)rs->rtt_us;

	return rtt > b->min_rtt_us ?
	       (u16)bbr_min_u64(rtt - b->min_rtt_us, BBR_U16_MAX) : 0;
}

/* Track the max bw and delivered volume within each loss round; a new loss
 * round starts when a packet sent after the last one's end is ACKed. */
static inline void bbr_update_latest_delivery_signals(struct bbr3 *b,
						      const struct bbr_sock *sk,
						      const struct bbr_rs *rs)
{
	b->loss_round_start = 0;
	if (rs->rtt_us >= 0 && b->min_rtt_us != BBR_UNSET) {
		u16 q = bbr_rtt_queue_us(b, rs);

		b->round_queue_max_us = (u16)bbr_max_u32(b->round_queue_max_us, q);
		b->round_queue_min_us = (u16)bbr_min_u32(b->round_queue_min_us, q);
		if (b->mode == BBR_STARTUP ||
		    (b->mode == BBR_PROBE_BW && b->cycle_idx == BBR_BW_PROBE_UP))
			b->probe_queue_us = (u16)bbr_max_u32(b->probe_queue_us, q);
	}
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;
	b->bw_latest = bbr_max_u32(b->bw_latest, rs->bw);
	b->inflight_latest = bbr_max_u32(b->inflight_latest,
					 rs->delivered > 0 ? (u32)rs->delivered : 0);
	if (!bbr_before(rs->prior_delivered, b->loss_round_delivered)) {
		b->loss_round_delivered = sk->delivered;
		b->loss_round_start = 1;
	}
}

/*
 * Beyond the reference (loss_queue_thresh): at the end of a loss round
 * whose queue drained -- its lowest RTT sample came within 1/4 of its
 * highest excess of min_rtt (BBR_RTT_NOISE_DRAINED_DIV) -- fold its highest
 * excess into rtt_noise_us, the level a round reaches through host, ACK
 * and emulator delay alone. A round that kept a queue throughout (a buffer
 * other flows keep full, a probe's standing queue) says nothing about the
 * noise and is left out: such a queue must not raise the allowance. A
 * lower round is taken at once, a higher one by 1/8 of the step, so a
 * probe's or another flow's passing queue barely moves the level.
 */
static inline void bbr_update_rtt_noise(struct bbr3 *b)
{
	u32 excess = b->round_queue_max_us, noise = b->rtt_noise_us;

	if (b->round_queue_min_us == BBR_U16_MAX ||
	    b->round_queue_min_us > excess / BBR_RTT_NOISE_DRAINED_DIV)
		return;
	if (excess <= noise)
		noise = excess;
	else
		noise += (excess - noise) >> BBR_RTT_NOISE_RISE_SHIFT;
	b->rtt_noise_us = (u16)noise;
}

/* At each loss round boundary restart the "latest" filters, except on an
 * ACK of a TLP retransmit, whose sample says little about the path. */
static inline void bbr_advance_latest_delivery_signals(struct bbr3 *b,
						       const struct bbr_rs *rs)
{
	if (b->loss_round_start && !rs->is_acking_tlp_retrans_seq) {
		b->bw_latest = rs->bw;
		b->inflight_latest = rs->delivered > 0 ? (u32)rs->delivered : 0;
	}
	if (b->loss_round_start) {	/* a new loss round: its own RTT range */
		bbr_update_rtt_noise(b);
		b->round_queue_max_us = 0;
		b->round_queue_min_us = BBR_U16_MAX;
		if (rs->rtt_us >= 0 && b->min_rtt_us != BBR_UNSET) {
			b->round_queue_max_us = bbr_rtt_queue_us(b, rs);
			b->round_queue_min_us = b->round_queue_max_us;
		}
	}
}

static inline void bbr_take_max_bw_sample(struct bbr3 *b, u32 bw)
{
	b->bw_hi[1] = bbr_max_u32(bw, b->bw_hi[1]);
}

/* Age the max-bw filter by one probing cycle. */
static inline void bbr_advance_max_bw_filter(struct bbr3 *b)
{
	if (!b->bw_hi[1])
		return;		/* no sample this cycle: keep the old window */
	b->bw_hi[0] = b->bw_hi[1];
	b->bw_hi[1] = 0;
}

/* A loss opens a loss round (if none is open) and marks the cycle. */
static inline void bbr_note_loss(struct bbr3 *b, const struct bbr_sock *sk)
{
	if (!b->loss_in_round)
		b->loss_round_delivered = sk->delivered;
	b->loss_in_round = 1;
	b->loss_in_cycle = 1;
}

/* ---- ECN --------------------------------------------------------------------- */

static inline u32 bbr_ecn_cut(const struct bbr3 *b)
{
	return BBR_UNIT - (((u32)b->ecn_alpha * BBR_P(b).ecn_factor) >> BBR_SCALE);
}

static inline void bbr_handle_queue_too_high_in_startup(struct bbr3 *b,
							const struct bbr_sock *sk)
{
	u32 inflight;

	b->full_bw_reached = 1;
	inflight = bbr_inflight(b, sk, bbr_max_bw(b), BBR_UNIT);
	/* v3: max(BDP, what was actually delivered in the last round) */
	b->inflight_hi = bbr_max_u32(inflight, b->inflight_latest);
}

/* Two consecutive rounds with a CE ratio at or above ecn_thresh end
 * STARTUP. */
static inline void bbr_check_ecn_too_high_in_startup(struct bbr3 *b,
						     const struct bbr_sock *sk,
						     u32 ce_ratio, u32 delivered_ce)
{
	if (b->full_bw_reached)
		return;
	if (bbr_hook_startup_ce(b, sk, delivered_ce))
		return;		/* the variant's own rule */
	if (!b->ecn_eligible || !BBR_P(b).ecn_thresh)
		return;
	if (ce_ratio >= BBR_P(b).ecn_thresh) {
		if (b->startup_ecn_rounds < BBR_STARTUP_ECN_ROUNDS_MAX)
			b->startup_ecn_rounds++;
	} else {
		b->startup_ecn_rounds = 0;
	}
	if (b->startup_ecn_rounds >= BBR_FULL_ECN_CNT)
		bbr_handle_queue_too_high_in_startup(b, sk);
}

/* Once per round: EWMA of the fraction of delivered packets that were CE
 * marked. Returns the round's CE ratio (BBR_UNIT), or -1 if not tracked. */
static inline s32 bbr_update_ecn_alpha(struct bbr3 *b, const struct bbr_sock *sk)
{
	u32 delivered, delivered_ce, gain = BBR_P(b).ecn_alpha_gain;
	u64 ce_ratio, alpha;

	if (!b->ecn_eligible && bbr_can_use_ecn(b, sk) && BBR_P(b).ecn_factor &&
	    (b->min_rtt_us <= BBR_P(b).ecn_max_rtt_us || !BBR_P(b).ecn_max_rtt_us))
		b->ecn_eligible = 1;
	if (!b->ecn_eligible && !bbr_hook_reads_ce(b))
		return -1;

	delivered = sk->delivered - b->alpha_last_delivered;
	delivered_ce = sk->delivered_ce - b->alpha_last_delivered_ce;
	if (!delivered || (s32)delivered < 0 || (s32)delivered_ce < 0)
		return -1;

	ce_ratio = ((u64)delivered_ce << BBR_SCALE) / delivered;
	ce_ratio = bbr_min_u64(ce_ratio, 0x7FFFFFFF);
	if (b->ecn_eligible) {
		alpha = ((u64)(BBR_UNIT - gain) * b->ecn_alpha) >> BBR_SCALE;
		alpha += (gain * ce_ratio) >> BBR_SCALE;
		b->ecn_alpha = (u16)bbr_min_u64(alpha, BBR_UNIT);
	}

	b->alpha_last_delivered = sk->delivered;
	b->alpha_last_delivered_ce = sk->delivered_ce;

	bbr_check_ecn_too_high_in_startup(b, sk, (u32)ce_ratio, delivered_ce);
	return b->ecn_eligible ? (s32)ce_ratio : -1;
}

/* ---- Loss / ECN "too high" tests ------------------------------------------- */

/*
 * "Beyond v3" (docs/bbr3.md): the reference plus two mechanisms, runtime
 * keys of every socket, each off (0) in the table's defaults:
 *   - random-loss tolerance: a loss round whose RTT samples never rose
 *     1/8 min_rtt above min_rtt, with at most 15 % loss, did not overflow
 *     a queue: it cuts neither the lower bounds nor inflight_hi, nor ends
 *     STARTUP or a probe (bbr_loss_looks_random); and a sample's loss is
 *     too high only from BBR_LOSS_MIN_PKTS lost packets;
 *   - a time-based queue allowance: PROBE_BW cwnd is 1.0 x BDP plus
 *     bw x 15 ms (plus 40 ms more in PROBE_UP, capped at the reference's
 *     2 / 2.25 x BDP), instead of 2 x BDP (2.25 in UP) (bbr_time_headroom_cwnd).
 * The profile `v3plus` of include/bbr_params.h sets them; `v3` resets them.
 */

/*
 * Beyond the reference (loss_queue_thresh, 0 = off): do `lost` packets out
 * of `tx_in_flight` look random rather than congestive? They do if no RTT
 * sample of this loss round (so far) exceeded min_rtt by loss_queue_thresh
 * nor by half the deepest queue the last probe (or STARTUP) saw -- the
 * bottleneck queue did not build toward where it overflows, so it cannot
 * have overflowed -- and the loss rate is at most random_loss_max (a
 * policer, or a buffer too small to show a queue, still counts once it
 * drops that much). The second bound keeps a buffer smaller than
 * loss_queue_thresh x min_rtt from passing its drops off as random; it
 * never goes below the larger of a fixed floor and twice the path's RTT
 * noise (BBR_LOSS_NOISE_MULT), which no queue is needed to reach.
 */
static inline bool bbr_loss_looks_random(const struct bbr3 *b, s64 lost,
					 u32 tx_in_flight)
{
	u32 q = BBR_P(b).loss_queue_thresh;
	u64 allow, seen, noise;

	if (!q || b->min_rtt_us == BBR_UNSET || !tx_in_flight)
		return false;
	allow = ((u64)b->min_rtt_us * q) >> BBR_SCALE;
	noise = (u64)b->rtt_noise_us * BBR_LOSS_NOISE_MULT;
	seen = bbr_max_u64(b->probe_queue_us / 2, noise);
	allow = bbr_min_u64(allow, bbr_max_u64(seen, allow / BBR_LOSS_QUEUE_FLOOR_DIV));
	/* a saturated round excess (65.5 ms) is always a queue */
	allow = bbr_min_u64(allow, BBR_U16_MAX - 1);
	if (b->round_queue_max_us > allow)
		return false;
	return (u64)(lost > 0 ? lost : 0) <=
	       (((u64)tx_in_flight * BBR_P(b).random_loss_max) >> BBR_SCALE);
}

/* Did this sample lose more than loss_thresh of what was in flight (and,
 * beyond the reference, not at random)? */
static inline bool bbr_is_loss_too_high(const struct bbr3 *b,
					const struct bbr_rs *rs)
{
	u64 loss_thresh;

	if (rs->lost <= 0 || !rs->tx_in_flight)
		return false;
	loss_thresh = ((u64)rs->tx_in_flight * BBR_P(b).loss_thresh) >> BBR_SCALE;
	if (BBR_P(b).loss_queue_thresh)
		loss_thresh = bbr_max_u64(loss_thresh, BBR_LOSS_MIN_PKTS - 1);
	return (u64)rs->lost > loss_thresh &&
	       !bbr_loss_looks_random(b, rs->lost, rs->tx_in_flight);
}

/* Did this sample see loss above loss_thresh, or CE above ecn_thresh?
 * (2026: loss only; ecn_eligible never becomes set there.) */
static inline bool bbr_is_inflight_too_high(const struct bbr3 *b,
					    const struct bbr_rs *rs)
{
	u64 ecn_thresh;

	if (bbr_is_loss_too_high(b, rs))
		return true;
	if (rs->delivered_ce > 0 && rs->delivered > 0 && b->ecn_eligible &&
	    BBR_P(b).ecn_thresh) {
		ecn_thresh = ((u64)rs->delivered * BBR_P(b).ecn_thresh) >>
			     BBR_SCALE;
		if ((u64)rs->delivered_ce > ecn_thresh)
			return true;
	}
	return false;
}

/*
 * The in-flight level at which the loss rate crossed loss_thresh, assuming
 * the last `pcount` packets of the sample are the lost ones: solve
 * (lost_prev + x) / (inflight_prev + x) = loss_thresh for x.
 */
static inline u32 bbr_inflight_hi_from_lost(const struct bbr3 *b,
					    const struct bbr_rs *rs, u32 pcount)
{
	u32 loss_thresh = BBR_P(b).loss_thresh;
	s64 inflight_prev, lost_prev;
	u64 loss_budget, lost_prefix;

	inflight_prev = (s64)rs->tx_in_flight - pcount;
	lost_prev = (s64)rs->lost - pcount;
	if (inflight_prev < 0 || lost_prev < 0)
		return BBR_UNSET;
	loss_budget = bbr_div_round_up_u64((u64)inflight_prev * loss_thresh,
					   BBR_UNIT);
	if ((u64)lost_prev >= loss_budget) {
		lost_prefix = 0;
	} else {
		lost_prefix = ((loss_budget - (u64)lost_prev) << BBR_SCALE) /
			      (BBR_UNIT - loss_thresh);
	}
	return (u32)bbr_min_u64((u64)inflight_prev + lost_prefix, BBR_UNSET);
}

/* ---- PROBE_BW phase transitions ------------------------------------------------ */

static inline void bbr_set_cycle_idx(struct bbr3 *b, u8 idx)
{
	b->cycle_idx = idx;
	b->try_fast_path = 0;	/* gains change: recompute the control */
}

/* Randomize the next probe: desynchronizes flows sharing a bottleneck. */
static inline void bbr_pick_probe_wait(struct bbr3 *b)
{
	b->rounds_since_probe = BBR_PRANDOM_U32() % BBR_BW_PROBE_RAND_ROUNDS;
	b->probe_wait_us = BBR_BW_PROBE_BASE_US +
			   BBR_PRANDOM_U32() % BBR_BW_PROBE_RAND_US;
}

/* inflight_hi may grow 1, 2, 4, ... packets per round while probing up. */
static inline void bbr_raise_inflight_hi_slope(struct bbr3 *b,
					       const struct bbr_sock *sk)
{
	u32 growth_this_round = 1u << b->bw_probe_up_rounds;

	b->bw_probe_up_rounds = (u8)bbr_min_u32(b->bw_probe_up_rounds + 1u,
						BBR_BW_PROBE_UP_ROUNDS_MAX);
	b->bw_probe_up_cnt = bbr_max_u32(sk->snd_cwnd / growth_this_round, 1);
}

/*
 * The deepest queue seen while probing bounds what a loss may pass off as
 * random (bbr_loss_looks_random()). A probe keeps 3/4 of the previous
 * probes' excess over min_rtt and adds its own: restarting from nothing
 * would leave a probe that meets a loss in its first round with no
 * allowance at all, so on a real path, where RTT samples sit a few hundred
 * microseconds above min_rtt, every random loss then counts as congestion
 * and cuts bw_lo every round. A buffer that really shrank still brings the
 * bound down within a few probes.
 */
static inline void bbr_age_probe_queue(struct bbr3 *b)
{
	b->probe_queue_us = (u16)(((u32)b->probe_queue_us *
				   BBR_PROBE_QUEUE_KEEP) >> BBR_SCALE);
}

static inline void bbr_start_bw_probe_up(struct bbr3 *b, const struct bbr_sock *sk,
					 const struct bbr_rs *rs)
{
	b->ack_phase = BBR_ACKS_PROBE_STARTING;
	bbr_start_round(b, sk);
	b->cycle_mstamp_us = sk->now_us;
	bbr_reset_full_bw(b);
	b->full_bw = rs->bw;
	bbr_age_probe_queue(b);
	bbr_set_cycle_idx(b, BBR_BW_PROBE_UP);
	bbr_raise_inflight_hi_slope(b, sk);
}

/* REFILL: send at the estimated bw with the lower bounds lifted for one
 * round, so the pipe is full when UP starts; n = initial slope exponent. */
static inline void bbr_start_bw_probe_refill(struct bbr3 *b,
					     const struct bbr_sock *sk, u32 n)
{
	bbr_reset_lower_bounds(b);
	b->bw_probe_up_rounds = (u8)bbr_min_u32(n, BBR_BW_PROBE_UP_ROUNDS_MAX);
	b->bw_probe_up_acks = 0;
	b->stopped_risky_probe = 0;
	b->ack_phase = BBR_ACKS_REFILLING;
	bbr_start_round(b, sk);
	bbr_set_cycle_idx(b, BBR_BW_PROBE_REFILL);
}

static inline void bbr_start_bw_probe_down(struct bbr3 *b,
					   const struct bbr_sock *sk)
{
	bbr_reset_congestion_signals(b);
	b->bw_probe_up_cnt = BBR_UNSET;
	bbr_pick_probe_wait(b);
	b->cycle_mstamp_us = sk->now_us;
	b->ack_phase = BBR_ACKS_PROBE_STOPPING;
	bbr_start_round(b, sk);
	bbr_set_cycle_idx(b, BBR_BW_PROBE_DOWN);
	bbr_hook_cycle_down(b);
}

static inline void bbr_start_bw_probe_cruise(struct bbr3 *b)
{
	if (b->inflight_lo != BBR_UNSET)
		b->inflight_lo = bbr_min_u32(b->inflight_lo, b->inflight_hi);
	bbr_set_cycle_idx(b, BBR_BW_PROBE_CRUISE);
}

/* Loss or ECN during a probe: lower inflight_hi and stop probing. */
static inline void bbr_handle_inflight_too_high(struct bbr3 *b,
						const struct bbr_sock *sk,
						const struct bbr_rs *rs)
{
	u32 beta = BBR_P(b).beta;

	b->prev_probe_too_high = 1;
	b->bw_probe_samples = 0;	/* react once per probe */
	if (!rs->is_app_limited) {
		u64 cut = ((u64)bbr_target_inflight(b, sk) * (BBR_UNIT - beta)) >>
			  BBR_SCALE;
		b->inflight_hi = bbr_max_u32(rs->tx_in_flight, (u32)cut);
	}
	if (b->mode == BBR_PROBE_BW && b->cycle_idx == BBR_BW_PROBE_UP) {
		/* 2026: remember that loss ended this probe, for undo. */
		if (bbr_hook_loss_undo(b) && bbr_is_loss_too_high(b, rs))
			b->undo_state = BBR_UNDO_PROBE_BW_UP;
		bbr_start_bw_probe_down(b, sk);
	}
}

/* While probing up and limited by inflight_hi, grow it by
 * bw_probe_up_rounds' slope per cwnd of ACKs. */
static inline void bbr_probe_inflight_hi_upward(struct bbr3 *b,
						const struct bbr_sock *sk,
						const struct bbr_rs *rs)
{
	u32 delta;

	if (!sk->is_cwnd_limited || sk->snd_cwnd < b->inflight_hi)
		return;		/* not fully using inflight_hi: don't grow it */

	b->bw_probe_up_acks += rs->acked_sacked;
	if (b->bw_probe_up_acks >= b->bw_probe_up_cnt) {
		delta = b->bw_probe_up_acks / b->bw_probe_up_cnt;
		b->bw_probe_up_acks -= delta * b->bw_probe_up_cnt;
		b->inflight_hi = (u32)bbr_min_u64((u64)b->inflight_hi + delta,
						  BBR_UNSET - 1);
		b->try_fast_path = 0;
	}
	if (b->round_start)
		bbr_raise_inflight_hi_slope(b, sk);
}

/* Track probe feedback (ack_phase) and move inflight_hi: down when the
 * probe found loss/ECN too high, up when a higher level proved safe.
 * Returns true if it changed the PROBE_BW phase. */
static inline bool bbr_adapt_upper_bounds(struct bbr3 *b,
					  const struct bbr_sock *sk,
					  const struct bbr_rs *rs)
{
	if (b->ack_phase == BBR_ACKS_PROBE_STARTING && b->round_start)
		b->ack_phase = BBR_ACKS_PROBE_FEEDBACK;	/* first probe ACKs */

	if (b->ack_phase == BBR_ACKS_PROBE_STOPPING && b->round_start) {
		/* End of the feedback of the last probe. */
		b->bw_probe_samples = 0;
		b->ack_phase = BBR_ACKS_INIT;
		if (b->mode == BBR_PROBE_BW && !rs->is_app_limited &&
		    !bbr_hook_cycle_owns_bw_filter(b))
			bbr_advance_max_bw_filter(b);
		/* A probe stopped before loss at a level that was too high
		 * last time: probe again soon (REFILL now). */
		if (b->mode == BBR_PROBE_BW && b->stopped_risky_probe &&
		    !b->prev_probe_too_high) {
			bbr_start_bw_probe_refill(b, sk, 0);
			return true;
		}
	}

	if (bbr_is_inflight_too_high(b, rs)) {
		if (b->bw_probe_samples)
			bbr_handle_inflight_too_high(b, sk, rs);
	} else {
		if (b->inflight_hi == BBR_UNSET)
			return false;
		if (rs->tx_in_flight > b->inflight_hi)
			b->inflight_hi = rs->tx_in_flight;
		if (b->mode == BBR_PROBE_BW && b->cycle_idx == BBR_BW_PROBE_UP)
			bbr_probe_inflight_hi_upward(b, sk, rs);
	}
	return false;
}

/* Reno coexistence: a Reno flow takes ~BDP rounds to regrow, so probe at
 * least that often (capped at 63 rounds). */
BBR_INLINE bool bbr_is_reno_coexistence_probe_time(const struct bbr3 *b,
						      const struct bbr_sock *sk)
{
	u32 rounds = bbr_min_u32(BBR_BW_PROBE_MAX_ROUNDS,
				 bbr_target_inflight(b, sk));

	return b->rounds_since_probe >= rounds;
}

BBR_INLINE bool bbr_check_time_to_probe_bw(struct bbr3 *b,
					  const struct bbr_sock *sk)
{
	u32 n;

	/* ECN-only cycle: re-probe soon, starting from a larger slope. */
	if (BBR_P(b).ecn_reprobe_gain && b->ecn_eligible && b->ecn_in_cycle &&
	    !b->loss_in_cycle && sk->ca_state == BBR_CA_OPEN) {
		n = bbr_ilog2_u32((u32)(((u64)b->inflight_hi *
					 BBR_P(b).ecn_reprobe_gain) >> BBR_SCALE));
		bbr_start_bw_probe_refill(b, sk, n);
		return true;
	}
	if (bbr_has_elapsed_in_phase(b, sk, b->probe_wait_us) ||
	    bbr_is_reno_coexistence_probe_time(b, sk)) {
		bbr_start_bw_probe_refill(b, sk, 0);
		return true;
	}
	return false;
}

/* DOWN ends when the queue is drained: in flight within the headroom and
 * at most one BDP. */
BBR_INLINE bool bbr_check_time_to_cruise(const struct bbr3 *b,
					const struct bbr_sock *sk,
					u32 inflight, u32 bw)
{
	if (inflight > bbr_inflight_with_headroom(b))
		return false;
	return inflight <= bbr_inflight(b, sk, bw, BBR_UNIT);
}

/* The PROBE_BW phase machine; runs only once the pipe has been full. */
BBR_API int bbr_update_cycle_phase(struct bbr3 *b, struct bbr_sock *sk,
				    const struct bbr_rs *rs)
{
	bool is_bw_probe_done = false;
	u32 inflight, bw;

	if (!b || !sk || !rs)
		return 0;
	if (!b->full_bw_reached)
		return 0;
	if (bbr_adapt_upper_bounds(b, sk, rs))
		return 0;		/* already decided the phase */
	if (b->mode != BBR_PROBE_BW)
		return 0;
	if (bbr_hook_cycle(b, sk))
		return 0;		/* the variant's own cycle */

	inflight = bbr_packets_in_net_at_edt(b, sk, rs->prior_in_flight);
	bw = bbr_max_bw(b);

	switch (b->cycle_idx) {
	case BBR_BW_PROBE_CRUISE:
		bbr_check_time_to_probe_bw(b, sk);
		break;
	case BBR_BW_PROBE_REFILL:
		/* One round of refilling done: start probing. */
		if (b->round_start) {
			b->bw_probe_samples = 1;
			bbr_start_bw_probe_up(b, sk, rs);
		}
		break;
	case BBR_BW_PROBE_UP:
		if (b->prev_probe_too_high && inflight >= b->inflight_hi) {
			/* Back at the level that was too high: stop early. */
			b->stopped_risky_probe = 1;
			is_bw_probe_done = true;
		} else if (sk->is_cwnd_limited &&
			   sk->snd_cwnd >= b->inflight_hi) {
			/* inflight_hi, not the path, limits growth: restart
			 * the plateau detector. */
			bbr_reset_full_bw(b);
			b->full_bw = rs->bw;
		} else if (b->full_bw_now) {
			/* bw plateaued for 3 rounds: the pipe is full. */
			is_bw_probe_done = true;
		}
		if (is_bw_probe_done) {
			b->prev_probe_too_high = 0;
			bbr_start_bw_probe_down(b, sk);
		}
		break;
	case BBR_BW_PROBE_DOWN:
		if (bbr_check_time_to_probe_bw(b, sk))
			return 0;
		if (bbr_check_time_to_cruise(b, sk, inflight, bw))
			bbr_start_bw_probe_cruise(b);
		break;
	default:
		break;
	}
	return 0;
}

/* ---- Lower bounds (short-term model) --------------------------------------------- */

static inline void bbr_init_lower_bounds(struct bbr3 *b,
					 const struct bbr_sock *sk, bool init_bw)
{
	if (init_bw && b->bw_lo == BBR_UNSET)
		b->bw_lo = bbr_max_bw(b);
	if (b->inflight_lo == BBR_UNSET)
		b->inflight_lo = sk->snd_cwnd;
}

/* Multiplicative cut by beta, but never below what the last loss round
 * actually delivered. */
static inline void bbr_loss_lower_bounds(struct bbr3 *b)
{
	u32 keep = BBR_UNIT - BBR_P(b).beta;

	b->bw_lo = bbr_max_u32(b->bw_latest,
			       (u32)(((u64)b->bw_lo * keep) >> BBR_SCALE));
	b->inflight_lo = bbr_max_u32(b->inflight_latest,
				     (u32)(((u64)b->inflight_lo * keep) >> BBR_SCALE));
}

static inline u32 bbr_ecn_lower_bounds(const struct bbr3 *b)
{
	return (u32)(((u64)b->inflight_lo * bbr_ecn_cut(b)) >> BBR_SCALE);
}

/* Once per loss round while not probing: react to loss/ECN in it. */
static inline void bbr_adapt_lower_bounds(struct bbr3 *b,
					  const struct bbr_sock *sk)
{
	u32 ecn_inflight_lo = BBR_UNSET;

	if (bbr_is_probing_bandwidth(b))
		return;		/* probing tolerates loss/ECN by design */

	if (b->ecn_in_round && BBR_P(b).ecn_factor) {
		bbr_init_lower_bounds(b, sk, false);
		ecn_inflight_lo = bbr_ecn_lower_bounds(b);
	}
	if (b->loss_in_round) {
		bbr_init_lower_bounds(b, sk, true);
		bbr_loss_lower_bounds(b);
	}
	b->inflight_lo = bbr_min_u32(b->inflight_lo, ecn_inflight_lo);
	b->bw_lo = bbr_max_u32(b->bw_lo, 1);
}

/* Per ACK: feed the max-bw filter; per loss round: adapt lower bounds. */
static inline void bbr_update_congestion_signals(struct bbr3 *b,
						 const struct bbr_sock *sk,
						 const struct bbr_rs *rs)
{
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;		/* not a valid observation */

	/* App-limited samples only count if they show more than we know. */
	if (!rs->is_app_limited || rs->bw >= bbr_max_bw(b))
		bbr_take_max_bw_sample(b, rs->bw);

	b->loss_in_round |= (rs->losses > 0);
	if (!b->loss_round_start)
		return;
	/* Beyond the reference: a loss round whose losses look random (this
	 * ACK's sample spans the round) does not cut the lower bounds. */
	if (b->loss_in_round &&
	    bbr_loss_looks_random(b, rs->lost, rs->tx_in_flight))
		b->loss_in_round = 0;
	bbr_adapt_lower_bounds(b, sk);
	b->loss_in_round = 0;
	b->ecn_in_round = 0;
}

/* ---- ACK aggregation ------------------------------------------------------------ */

/* How many more packets were ACKed than the model bw explains since the
 * epoch began; its max over 5-10 rounds is added to cwnd so the sender
 * keeps sending through ACK bursts and silences (Wi-Fi, GRO, stretch ACKs). */
static inline void bbr_update_ack_aggregation(struct bbr3 *b,
					      const struct bbr_sock *sk,
					      const struct bbr_rs *rs)
{
	u64 epoch_us, expected_acked, extra_acked;
	u32 win_rtts;

	if (!BBR_P(b).extra_acked_gain || !rs->acked_sacked ||
	    rs->delivered < 0 || rs->interval_us <= 0)
		return;

	if (b->round_start) {
		b->extra_acked_win_rtts = (u8)bbr_min_u32(b->extra_acked_win_rtts + 1u,
							  BBR_EXTRA_ACKED_WIN_RTTS_MAX);
		win_rtts = b->full_bw_reached ? BBR_EXTRA_ACKED_WIN_RTTS : 1;
		if (b->extra_acked_win_rtts >= win_rtts) {
			b->extra_acked_win_rtts = 0;
			b->extra_acked_win_idx = b->extra_acked_win_idx ? 0 : 1;
			b->extra_acked[b->extra_acked_win_idx & 1] = 0;
		}
	}

	epoch_us = sk->delivered_mstamp_us - b->ack_epoch_mstamp_us;
	if ((s64)epoch_us < 0)
		epoch_us = 0;
	expected_acked = ((u64)bbr_bw(b) * epoch_us) / BW_UNIT;

	/* Reset the epoch when ACKs run at or below the model rate, or the
	 * counter would overflow. */
	if (b->ack_epoch_acked <= expected_acked ||
	    b->ack_epoch_acked + rs->acked_sacked >= BBR_ACK_EPOCH_ACKED_RESET_THRESH) {
		b->ack_epoch_acked = 0;
		b->ack_epoch_mstamp_us = sk->delivered_mstamp_us;
		expected_acked = 0;
	}

	b->ack_epoch_acked = bbr_min_u32(b->ack_epoch_acked + rs->acked_sacked,
					 BBR_ACK_EPOCH_ACKED_MAX_PKTS);
	extra_acked = b->ack_epoch_acked - expected_acked;
	extra_acked = bbr_min_u64(extra_acked, sk->snd_cwnd);
	extra_acked = bbr_min_u64(extra_acked, BBR_U16_MAX);
	if (extra_acked > b->extra_acked[b->extra_acked_win_idx & 1])
		b->extra_acked[b->extra_acked_win_idx & 1] = (u16)extra_acked;
}

/* ---- STARTUP and DRAIN ---------------------------------------------------------------- */

/* STARTUP ends on too much loss: >= full_loss_cnt loss events in a loss
 * round, in Recovery, with a loss rate above loss_thresh. A frame of its
 * own in BPF: inlined, it grew bbr_update_model()'s, and bbr_swift's
 * deepest per-ACK call chain passed the 512-byte stack limit. */
static BBR_NOINLINE void
bbr_check_loss_too_high_in_startup(struct bbr3 *b, const struct bbr_sock *sk,
				   const struct bbr_rs *rs)
{
	if (rs->losses && b->loss_events_in_round < BBR_LOSS_EVENTS_MAX)
		b->loss_events_in_round++;
	if (BBR_P(b).full_loss_cnt && b->loss_round_start &&
	    sk->ca_state == BBR_CA_RECOVERY &&
	    b->loss_events_in_round >= BBR_P(b).full_loss_cnt &&
	    bbr_hook_startup_loss_too_high(b, rs)) {
		if (bbr_hook_loss_undo(b))
			b->undo_state = BBR_UNDO_STARTUP;
		bbr_handle_queue_too_high_in_startup(b, sk);
		return;
	}
	if (b->loss_round_start)
		b->loss_events_in_round = 0;
}

/* The plateau detector: the pipe is full when 3 rounds in a row bring less
 * than 25 % growth. Used for STARTUP exit and to end PROBE_UP. Growth is
 * tested on every ACK, rounds are counted at round starts. */
static inline void bbr_check_full_bw_reached(struct bbr3 *b,
					     const struct bbr_rs *rs)
{
	u64 bw_thresh;

	if (b->full_bw_now || rs->is_app_limited)
		return;

	bw_thresh = ((u64)b->full_bw * BBR_FULL_BW_THRESH) >> BBR_SCALE;
	if (rs->bw >= bw_thresh) {
		bbr_reset_full_bw(b);
		b->full_bw = rs->bw;
		return;
	}
	if (!b->round_start)
		return;
	b->full_bw_cnt++;
	b->full_bw_now = b->full_bw_cnt >= BBR_FULL_BW_CNT;
	b->full_bw_reached |= b->full_bw_now;
}

/* 2026: more than BBR_MAX_DRAIN_ROUNDS round starts in DRAIN end it, so a
 * DRAIN whose in-flight never falls to the BDP cannot stick. */
static inline bool bbr_drain_rounds_exceeded(struct bbr3 *b)
{
	if (!bbr_hook_drain_rounds(b))
		return false;
	if (b->round_start && b->drain_rounds < BBR_DRAIN_ROUNDS_MAX)
		b->drain_rounds++;
	return b->drain_rounds > BBR_MAX_DRAIN_ROUNDS;
}

BBR_INLINE void bbr_check_drain(struct bbr3 *b, struct bbr_sock *sk)
{
	if (b->mode == BBR_STARTUP && b->full_bw_reached) {
		b->mode = BBR_DRAIN;
		/* ssthresh is only reported, BBR does not use it */
		sk->snd_ssthresh = bbr_inflight(b, sk, bbr_max_bw(b), BBR_UNIT);
		bbr_reset_congestion_signals(b);
		b->drain_rounds = 0;
	}
	if (b->mode != BBR_DRAIN)
		return;
	/* Same ACK may also end DRAIN: the queue STARTUP built is gone (or a
	 * variant's STARTUP rule says there is none to drain). */
	if (bbr_hook_skip_drain(b) || bbr_drain_rounds_exceeded(b) ||
	    bbr_packets_in_net_at_edt(b, sk, sk->inflight) <=
	    bbr_inflight(b, sk, bbr_max_bw(b), BBR_UNIT)) {
		b->mode = BBR_PROBE_BW;
		bbr_start_bw_probe_down(b, sk);
	}
}

/* ---- PROBE_RTT and the min_rtt filter -------------------------------------------------- */

static inline void bbr_exit_probe_rtt(struct bbr3 *b, const struct bbr_sock *sk)
{
	bbr_reset_lower_bounds(b);
	if (b->full_bw_reached) {
		b->mode = BBR_PROBE_BW;
		/* Start a new cycle (fresh random wait), cruising: PROBE_RTT
		 * already drained the queue. */
		bbr_start_bw_probe_down(b, sk);
		bbr_start_bw_probe_cruise(b);
	} else {
		b->mode = BBR_STARTUP;
	}
}

static inline void bbr_check_probe_rtt_done(struct bbr3 *b, struct bbr_sock *sk)
{
	if (!b->probe_rtt_done_stamp_us ||
	    (s64)(sk->now_us - b->probe_rtt_done_stamp_us) <= 0)
		return;
	/* Wait a full probe_rtt_win before the next PROBE_RTT. */
	b->probe_rtt_min_stamp_us = sk->now_us;
	sk->snd_cwnd = bbr_max_u32(sk->snd_cwnd, b->prior_cwnd);
	bbr_exit_probe_rtt(b, sk);
}

/*
 * Two min filters: probe_rtt_min over 5 s schedules PROBE_RTT; min_rtt over
 * 10 s is the model's propagation delay. PROBE_RTT holds in-flight at
 * 0.5 BDP for 200 ms and one round so every flow sharing the bottleneck
 * sees an empty queue at about the same time.
 */
BBR_API int bbr_update_min_rtt(struct bbr3 *b, struct bbr_sock *sk,
				const struct bbr_rs *rs)
{
	bool probe_rtt_expired, min_rtt_expired;

	if (!b || !sk || !rs)
		return 0;

	probe_rtt_expired = (s64)(sk->now_us - (b->probe_rtt_min_stamp_us +
			    (u64)BBR_P(b).probe_rtt_win_ms * BBR_USEC_PER_MSEC)) > 0;
	if (rs->rtt_us >= 0 &&
	    ((u64)rs->rtt_us < b->probe_rtt_min_us ||
	     (probe_rtt_expired && !rs->is_ack_delayed))) {
		b->probe_rtt_min_us = (u32)bbr_min_u64((u64)rs->rtt_us, BBR_UNSET - 1);
		b->probe_rtt_min_stamp_us = sk->now_us;
	}

	min_rtt_expired = (s64)(sk->now_us - (b->min_rtt_stamp_us +
			  (u64)BBR_P(b).min_rtt_win_sec * BBR_USEC_PER_SEC)) > 0;
	if (b->probe_rtt_min_us <= b->min_rtt_us || min_rtt_expired) {
		b->min_rtt_us = b->probe_rtt_min_us;
		b->min_rtt_stamp_us = b->probe_rtt_min_stamp_us;
	}

	if (BBR_P(b).probe_rtt_mode_ms && probe_rtt_expired &&
	    bbr_hook_probe_rtt_allowed(b) &&
	    !b->idle_restart && b->mode != BBR_PROBE_RTT) {
		b->mode = BBR_PROBE_RTT;
		bbr_save_cwnd(b, sk);
		b->probe_rtt_done_stamp_us = 0;
		b->ack_phase = BBR_ACKS_PROBE_STOPPING;
		bbr_start_round(b, sk);
	}

	if (b->mode == BBR_PROBE_RTT) {
		/* Samples taken at this low rate are app-limited. */
		sk->app_limited = (sk->delivered + sk->inflight) ? : 1;
		if (!b->probe_rtt_done_stamp_us &&
		    sk->inflight <= bbr_probe_rtt_cwnd(b)) {
			/* Drained: hold for probe_rtt_mode_ms and a round. */
			b->probe_rtt_done_stamp_us = sk->now_us +
				(u64)BBR_P(b).probe_rtt_mode_ms * BBR_USEC_PER_MSEC;
			b->probe_rtt_round_done = 0;
			bbr_start_round(b, sk);
		} else if (b->probe_rtt_done_stamp_us) {
			if (b->round_start)
				b->probe_rtt_round_done = 1;
			if (b->probe_rtt_round_done)
				bbr_check_probe_rtt_done(b, sk);
		}
	}
	if (rs->delivered > 0)
		b->idle_restart = 0;
	return 0;
}

/* ---- Control: gains, cwnd ------------------------------------------------------------- */

static inline void bbr_update_gains(struct bbr3 *b)
{
	switch (b->mode) {
	case BBR_STARTUP:
		b->pacing_gain = (u16)BBR_P(b).startup_pacing_gain;
		b->cwnd_gain = (u16)BBR_P(b).startup_cwnd_gain;
		break;
	case BBR_DRAIN:
		b->pacing_gain = (u16)(BBR_P(b).drain_gain ? :
				       bbr_hook_drain_gain(b));
		b->cwnd_gain = (u16)BBR_P(b).startup_cwnd_gain;
		break;
	case BBR_PROBE_BW:
		if (bbr_hook_cycle_gains(b))
			break;		/* the variant's own cycle */
		switch (b->cycle_idx) {
		case BBR_BW_PROBE_UP:
			b->pacing_gain = (u16)BBR_P(b).probe_up_pacing_gain;
			break;
		case BBR_BW_PROBE_DOWN:
			b->pacing_gain = (u16)BBR_P(b).probe_down_pacing_gain;
			break;
		default:	/* CRUISE, REFILL */
			b->pacing_gain = BBR_UNIT;
			break;
		}
		b->cwnd_gain = (u16)BBR_P(b).cwnd_gain;
		if (b->cycle_idx == BBR_BW_PROBE_UP)
			b->cwnd_gain += (u16)(BBR_P(b).bw_probe_cwnd_gain *
					      BBR_UNIT / 4);
		break;
	case BBR_PROBE_RTT:
		b->pacing_gain = BBR_UNIT;
		b->cwnd_gain = BBR_UNIT;
		break;
	default:
		break;
	}
}

/*
 * Optional packet conservation during the first round of fast recovery
 * (BBRv1 and early drafts; the v3 reference and the current draft have
 * none, so recovery_conservation defaults to 0). While active, cwnd is
 * what is in flight plus what this ACK delivered, less what it marked lost.
 * Returns true while conservation holds cwnd.
 */
static inline bool bbr_modulate_cwnd_for_recovery(struct bbr3 *b,
						  struct bbr_sock *sk,
						  const struct bbr_rs *rs,
						  u32 acked, u32 *cwnd)
{
	u32 losses = rs->losses > 0 ? (u32)rs->losses : 0;

	if (!BBR_P(b).recovery_conservation)
		return false;
	if (sk->ca_state == BBR_CA_RECOVERY && !b->in_recovery) {
		/* Entering fast recovery (an RTO has its own cwnd reset):
		 * ssthresh() already saved prior_cwnd. */
		b->in_recovery = 1;
		b->recovery_round_delivered = sk->delivered;
		*cwnd = sk->inflight + bbr_max_u32(acked, 1);
		return true;
	}
	if (sk->ca_state < BBR_CA_RECOVERY && b->in_recovery) {
		b->in_recovery = 0;
		*cwnd = bbr_max_u32(*cwnd, b->prior_cwnd);
		return false;
	}
	if (!b->in_recovery)
		return false;
	*cwnd = *cwnd > losses + 1 ? *cwnd - losses : 1;
	if (bbr_before(rs->prior_delivered, b->recovery_round_delivered)) {
		*cwnd = bbr_max_u32(*cwnd, sk->inflight + acked);
		return true;
	}
	return false;
}

/*
 * Beyond the reference (cwnd_headroom_us, probe_headroom_us; 0 = none): in
 * PROBE_BW, the queue a flow may keep beyond its BDP estimate is a time,
 * the same for every flow on a bottleneck, not a multiple of the flow's own
 * min_rtt. With the reference's cwnd_gain 2 a flow with 4x the RTT
 * tolerates 4x the queue (RTT unfairness), and flows that are all
 * cwnd-limited on a shared standing queue keep any split, since each one's
 * share is proportional to its own estimate. Capped at one min_rtt (1.25
 * in PROBE_UP), so with cwnd_gain 1 cwnd never exceeds the reference's
 * 2 (2.25) x BDP: short paths keep the reference's allowance.
 */
static inline u32 bbr_time_headroom_cwnd(const struct bbr3 *b, u32 bw)
{
	u64 t = BBR_P(b).cwnd_headroom_us, cap;

	if (b->mode != BBR_PROBE_BW || b->min_rtt_us == BBR_UNSET)
		return 0;
	cap = b->min_rtt_us;
	if (b->cycle_idx == BBR_BW_PROBE_UP) {
		t += BBR_P(b).probe_headroom_us;
		cap += b->min_rtt_us / 4;
	}
	t = bbr_min_u64(t, cap);
	return (u32)bbr_min_u64(((u64)bw * t) >> BW_SCALE, 0xFFFFFFFFu);
}

/*
 * Grow cwnd toward cwnd_gain * BDP + aggregation allowance: by what was
 * ACKed, so it never jumps. Before the pipe is full it only grows.
 */
BBR_INLINE void bbr_set_cwnd(struct bbr3 *b, struct bbr_sock *sk,
				const struct bbr_rs *rs, u32 acked, u32 bw,
				u32 gain)
{
	u32 cwnd = sk->snd_cwnd, target_cwnd;

	if (!acked)
		goto done;	/* no packet fully ACKed; just apply caps */

	if (bbr_modulate_cwnd_for_recovery(b, sk, rs, acked, &cwnd))
		goto floor;

	target_cwnd = bbr_bdp(b, bw, gain);
	target_cwnd += bbr_ack_aggregation_cwnd(b);
	target_cwnd += bbr_time_headroom_cwnd(b, bw);
	target_cwnd = bbr_quantization_budget(b, sk, target_cwnd);

	b->try_fast_path = 0;
	if (b->full_bw_reached) {
		cwnd += acked;
		if (cwnd >= target_cwnd) {
			cwnd = target_cwnd;
			b->try_fast_path = 1;
		}
	} else if (cwnd < target_cwnd || cwnd < 2u * b->init_cwnd) {
		cwnd += acked;
	} else {
		b->try_fast_path = 1;
	}
floor:
	cwnd = bbr_max_u32(cwnd, BBR_CWND_MIN_TARGET_PKTS);
done:
	sk->snd_cwnd = bbr_min_u32(cwnd, sk->snd_cwnd_clamp);
	if (b->mode == BBR_PROBE_RTT)
		sk->snd_cwnd = bbr_min_u32(sk->snd_cwnd, bbr_probe_rtt_cwnd(b));
}

/* Cap cwnd by the volume model: inflight_hi while probing or draining,
 * inflight_hi less headroom while cruising, and inflight_lo always. */
static inline void bbr_bound_cwnd_for_inflight_model(struct bbr3 *b,
						     struct bbr_sock *sk)
{
	u32 cap = BBR_UNSET;

	if (!b->initialized)
		return;
	if (b->mode == BBR_PROBE_BW && b->cycle_idx != BBR_BW_PROBE_CRUISE)
		cap = b->inflight_hi;		/* probe for more, up to it */
	else if (b->mode == BBR_PROBE_RTT ||
		 (b->mode == BBR_PROBE_BW && b->cycle_idx == BBR_BW_PROBE_CRUISE))
		cap = bbr_inflight_with_headroom(b);	/* leave room */
	cap = bbr_min_u32(cap, b->inflight_lo);
	cap = bbr_max_u32(cap, BBR_CWND_MIN_TARGET_PKTS);
	sk->snd_cwnd = bbr_min_u32(sk->snd_cwnd, cap);
}

/*
 * Warm start. The kernel calls init also when setsockopt(TCP_CONGESTION)
 * switches an established connection (tcp_reinit_congestion_control(), as
 * `bbrctl swap --from cubic --to bbr3` does). Starting such a flow in
 * STARTUP paces it at 2.77x the rate it already has: with many flows
 * switched at once the bottleneck queue overflows, every flow loses
 * packets in the same round, and flows stall in loss recovery / RTO.
 *
 * A connection whose previous CC has left slow start (finite ssthresh)
 * and that has RTT samples has already found its share of the path: take
 * bw from its latest delivery-rate sample or cwnd/srtt (whichever is
 * larger), mark the pipe full, and enter PROBE_BW in DOWN, which drains
 * the queue the previous CC built and then probes as usual. A connection
 * still in slow start keeps the normal STARTUP (its bandwidth is unknown).
 */
static inline bool bbr_can_warm_start(const struct bbr_sock *sk)
{
	return sk->snd_ssthresh < BBR_TCP_INFINITE_SSTHRESH &&
	       sk->delivered >= BBR_WARM_START_MIN_DELIVERED_PKTS &&
	       sk->srtt_us && sk->kernel_min_rtt_us &&
	       sk->kernel_min_rtt_us != BBR_UNSET && sk->snd_cwnd;
}

static inline void bbr_warm_start(struct bbr3 *b, struct bbr_sock *sk)
{
	u64 bw = (u64)sk->snd_cwnd * BW_UNIT / sk->srtt_us;

	if (sk->rate_interval_us && sk->rate_delivered)
		bw = bbr_max_u64(bw, (u64)sk->rate_delivered * BW_UNIT /
				     sk->rate_interval_us);
	bw = bbr_min_u64(bw, 0xFFFFFFFFu);
	b->bw_hi[1] = (u32)bw;
	b->full_bw = (u32)bw;
	b->full_bw_reached = 1;
	b->has_seen_rtt = 1;
	b->prior_cwnd = sk->snd_cwnd;
	b->mode = BBR_PROBE_BW;
	bbr_start_bw_probe_down(b, sk);
}

/* ---- Losses, one packet at a time ------------------------------------------------------- */

/* loss_yet_in_recovery: 0 no loss episode, 1 one is open (its undo state
 * saved), BBR_LOSS_EPISODE_ENDING the state fell below Recovery on this
 * ACK and losses it marked are still to be reported (see
 * bbr_core_set_state()). */
#define BBR_LOSS_EPISODE_ENDING	2

/* What is saved for a possible undo: cwnd and the bounds a loss may cut. */
static inline void bbr_save_for_undo(struct bbr3 *b, const struct bbr_sock *sk)
{
	bbr_save_cwnd(b, sk);
	b->undo_bw_lo = b->bw_lo;
	b->undo_inflight_lo = b->inflight_lo;
	b->undo_inflight_hi = b->inflight_hi;
}

/* 2026: the undo state is saved at the first lost packet of an episode,
 * before that loss changes anything (set_state below Recovery ends it). */
static inline void bbr_save_at_first_loss(struct bbr3 *b,
					  const struct bbr_sock *sk)
{
	if (!bbr_hook_loss_undo(b) || b->loss_yet_in_recovery)
		return;
	b->loss_yet_in_recovery = 1;
	bbr_save_for_undo(b, sk);
	b->undo_state = BBR_UNDO_NONE;
}

/*
 * One transmission marked lost (the reference's skb_marked_lost hook), with
 * l->tx_in_flight / l->lost as a BBRv3 kernel has them and sk->lost already
 * counting this packet: while a probe is being evaluated, is the loss rate
 * up to this packet too high, and at what in-flight level did it cross?
 */
BBR_INLINE void bbr_lost_packets(struct bbr3 *b, struct bbr_sock *sk,
				 struct bbr_rs *lrs, u32 pcount)
{
	bbr_save_at_first_loss(b, sk);
	bbr_note_loss(b, sk);
	if (!b->bw_probe_samples)
		return;		/* not probing: no probe feedback wanted */
	if (!bbr_is_inflight_too_high(b, lrs))
		return;
	lrs->tx_in_flight = bbr_inflight_hi_from_lost(b, lrs, pcount);
	bbr_handle_inflight_too_high(b, sk, lrs);
}

/* A loss repaired by a TLP retransmit (google/bbr's CA_EVENT_TLP_RECOVERY):
 * count it as a loss of one packet at the latest delivered volume. */
static inline void bbr_run_loss_probe_recovery(struct bbr3 *b,
					       struct bbr_sock *sk)
{
	struct bbr_rs lrs = {};

	bbr_note_loss(b, sk);
	if (!b->bw_probe_samples)
		return;
	lrs.lost = 1;
	lrs.tx_in_flight = b->inflight_latest + 1;
	lrs.is_app_limited = sk->app_limited != 0;
	if (bbr_is_inflight_too_high(b, &lrs))
		bbr_handle_inflight_too_high(b, sk, &lrs);
}

/* ---- Entry points ----------------------------------------------------------------------- */

/* The app-limited fast path: an app-limited ACK with nothing new to say
 * only runs the state checks; control is skipped if they change nothing. */
static inline bool bbr_run_fast_path(struct bbr3 *b, struct bbr_sock *sk,
				     const struct bbr_rs *rs, bool *update_model)
{
	u32 prev_min_rtt_us, prev_mode;

	if (!BBR_P(b).fast_path || !b->try_fast_path || !rs->is_app_limited ||
	    rs->bw >= bbr_max_bw(b) || b->loss_in_round || b->ecn_in_round)
		return false;

	prev_mode = b->mode;
	prev_min_rtt_us = b->min_rtt_us;
	bbr_check_drain(b, sk);
	bbr_update_cycle_phase(b, sk, rs);
	bbr_update_min_rtt(b, sk, rs);
	if (b->mode == prev_mode && b->min_rtt_us == prev_min_rtt_us &&
	    b->try_fast_path)
		return true;
	*update_model = false;	/* these ran already; control still runs */
	return false;
}

BBR_API int bbr_update_model(struct bbr3 *b, struct bbr_sock *sk,
			      const struct bbr_rs *rs)
{
	if (!b || !sk || !rs)
		return 0;
	bbr_update_congestion_signals(b, sk, rs);
	bbr_update_ack_aggregation(b, sk, rs);
	if (!b->full_bw_reached)	/* the call only while it can act */
		bbr_check_loss_too_high_in_startup(b, sk, rs);
	bbr_check_full_bw_reached(b, rs);
	bbr_check_drain(b, sk);
	bbr_update_cycle_phase(b, sk, rs);
	bbr_update_min_rtt(b, sk, rs);
	return 0;
}

/* ---- What a hook may do to the model ---------------------------------------------------- */

/*
 * A variant's own congestion signal (bbr_hook_signal(), bbr_hook_cap():
 * BBR.Swift's delay in core/swift.h) reads the model, and changes it only
 * through these functions, each the model's own answer to a signal that
 * is too high.
 */

/* The signal is in force instead of ECN: no ECN response on this ACK and no
 * new ECN eligibility. */
static inline void bbr_signal_no_ecn(struct bbr3 *b, struct bbr_sock *sk)
{
	sk->ecn_ok = 0;
	sk->ece = 0;
	b->ecn_eligible = 0;
}

/* The queue is too high in STARTUP: leave it, as on too much loss or CE. */
static inline void bbr_signal_end_startup(struct bbr3 *b,
					  const struct bbr_sock *sk)
{
	bbr_handle_queue_too_high_in_startup(b, sk);
}

/* The probe found the level at which the queue is too high: end it, as
 * on too much loss or CE. */
static inline void bbr_signal_end_probe(struct bbr3 *b,
					const struct bbr_sock *sk,
					const struct bbr_rs *rs)
{
	bbr_handle_inflight_too_high(b, sk, rs);
}

/* After the control: cwnd and pacing rate no higher than these. */
static inline void bbr_signal_cap(struct bbr_sock *sk, u32 cwnd, u64 rate_Bps)
{
	if (sk->snd_cwnd > cwnd)
		sk->snd_cwnd = cwnd;
	if (rate_Bps < 1)
		rate_Bps = 1;
	if (rate_Bps < sk->pacing_rate)
		sk->pacing_rate = rate_Bps;
}

/* After the control: the signal's own cwnd and pacing rate, whatever the
 * model's (for a flow that sends less than a packet per round trip, whose
 * delivery-rate samples say only that it sent a packet now and then). The
 * model's cwnd stays when it is below BBRv3's floor. */
static inline void bbr_signal_pace(struct bbr_sock *sk, u32 cwnd, u64 rate_Bps)
{
	if (sk->snd_cwnd >= BBR_CWND_MIN_TARGET_PKTS)
		sk->snd_cwnd = cwnd;
	sk->pacing_rate = bbr_max_u64(bbr_min_u64(rate_Bps, sk->max_pacing_rate), 1);
}

/* The reference's per-ACK pipeline, on a sample whose inputs are complete.
 * A function of its own in BPF: the verifier walks it once, not once per
 * path through a variant's signal around it (bbr_core_main()). */
BBR_API int bbr_main_pipeline(struct bbr3 *b, struct bbr_sock *sk,
			      struct bbr_rs *rs)
{
	bool update_model = true;
	u32 bw;

	if (!b || !sk || !rs)
		return 0;
	bbr_hook_mode(b, sk);
	bbr_update_round_start(b, sk, rs);
	if (b->round_start) {
		b->round_count++;
		b->rounds_since_probe = (u8)bbr_min_u32(b->rounds_since_probe + 1u,
							BBR_ROUNDS_SINCE_PROBE_MAX);
		bbr_update_ecn_alpha(b, sk);
		bbr_hook_round_start(b);
	}
	b->ecn_in_round |= (b->ecn_eligible && sk->ece);

	bbr_calculate_bw_sample(b, rs);
	bbr_update_latest_delivery_signals(b, sk, rs);

	if (bbr_run_fast_path(b, sk, rs, &update_model))
		goto out;
	if (update_model)
		bbr_update_model(b, sk, rs);

	bbr_update_gains(b);
	bw = bbr_bw(b);
	bbr_set_pacing_rate(b, sk, bw, b->pacing_gain);
	bbr_set_cwnd(b, sk, rs, rs->acked_sacked, bw, b->cwnd_gain);
	bbr_bound_cwnd_for_inflight_model(b, sk);
out:
	bbr_advance_latest_delivery_signals(b, rs);
	b->prev_ca_state = sk->ca_state;
	b->loss_in_cycle |= (rs->lost > 0);
	b->ecn_in_cycle |= (rs->delivered_ce > 0);
	return 0;
}

/*
 * cong_control, the one per-ACK entry point: the inputs the reference has
 * and mainline lacks (core/reconstruct.h), a variant's own signal if it has
 * one (bbr_hook_signal(); `x` its per-socket state, NULL for none), the
 * per-ACK pipeline in the reference's order, the variant's cap on its
 * result (bbr_hook_cap()), then the send record for the packets this ACK
 * lets out.
 */
BBR_API int bbr_core_main(struct bbr3_sk *sks, struct bbr_sock *sk,
			  struct bbr_rs *rs, BBR_EXT *x)
{
	struct bbr3 *b;

	/* Keep x an argument even where every hook ignores it (plain BBRv3):
	 * the compiler would pass garbage in its place, and the verifier
	 * checks every argument of a global function. */
	asm volatile("" : : "r"(x));
	if (!sks || !sk || !rs || !sks->st.initialized)
		return 0;
	b = &sks->st;
	bbr_reconstruct_inputs(sks, sk, rs);
	bbr_hook_signal(b, x, sk, rs);
	bbr_main_pipeline(b, sk, rs);
	bbr_hook_cap(b, x, sk);
	bbr_tx_note(sks, sk);
	/* this ACK's losses are accounted: the ended episode is closed */
	if (b->loss_yet_in_recovery == BBR_LOSS_EPISODE_ENDING)
		b->loss_yet_in_recovery = 0;
	return 0;
}

BBR_API int bbr_core_init(struct bbr3_sk *sks, struct bbr_sock *sk)
{
	struct bbr3 *b;
	bool warm;
	u8 slot;

	if (!sks || !sk)
		return 0;
	warm = bbr_can_warm_start(sk);	/* before ssthresh is overwritten */
	b = &sks->st;
	slot = b->param_slot;	/* chosen by the glue before init */
	__builtin_memset(b, 0, sizeof(*b));
	b->param_slot = slot;

	b->init_cwnd = (u8)bbr_min_u32(BBR_INIT_CWND_MAX_PKTS, sk->snd_cwnd);
	b->prior_cwnd = sk->prior_cwnd;
	sk->snd_ssthresh = BBR_TCP_INFINITE_SSTHRESH;
	b->next_rtt_delivered = sk->delivered;
	b->prev_ca_state = BBR_CA_OPEN;

	b->min_rtt_us = sk->kernel_min_rtt_us ? sk->kernel_min_rtt_us : BBR_UNSET;
	b->probe_rtt_min_us = b->min_rtt_us;
	b->min_rtt_stamp_us = sk->now_us;
	b->probe_rtt_min_stamp_us = sk->now_us;

	bbr_init_pacing_rate_from_rtt(b, sk);
	b->mode = BBR_STARTUP;
	b->ack_epoch_mstamp_us = sk->now_us;

	b->loss_round_delivered = sk->delivered + 1;
	b->round_queue_min_us = BBR_U16_MAX;	/* no RTT sample yet */
	bbr_reset_congestion_signals(b);
	b->bw_lo = BBR_UNSET;
	b->inflight_lo = BBR_UNSET;
	b->inflight_hi = BBR_UNSET;
	b->bw_probe_up_cnt = BBR_UNSET;
	b->ack_phase = BBR_ACKS_INIT;
	b->ecn_alpha = BBR_UNIT;
	b->last_lost = sk->lost;
	if (warm)
		bbr_warm_start(b, sk);
	bbr_update_gains(b);
	if (b->full_bw_reached) {
		/* Warm start: pace at the flow's rate, and report ssthresh
		 * as leaving DRAIN does (bbr_check_drain), so that a later
		 * switch back to a loss-based CC finds the connection out of
		 * slow start instead of an infinite ssthresh. */
		sk->pacing_rate = bbr_bw_to_pacing_rate(sk, bbr_max_bw(b),
							 b->pacing_gain);
		sk->snd_ssthresh = bbr_inflight(b, sk, bbr_max_bw(b), BBR_UNIT);
	}
	bbr_tx_reset(sks, sk);
	b->initialized = 1;
	return 0;
}

/*
 * Entering Recovery, CWR or Loss. BBR does not use ssthresh; it returns it
 * unchanged. 2023: save the state to undo to. 2026 saves it at the first
 * lost packet instead; losses the stack marked that no hook reported (the
 * hook is optional) are seen here first, before an RTO resets cwnd.
 */
BBR_API u32 bbr_core_ssthresh(struct bbr3 *b, struct bbr_sock *sk)
{
	if (!b || !sk)
		return 0;
	if (!bbr_hook_loss_undo(b))
		bbr_save_for_undo(b, sk);
	else if (sk->lost != b->last_lost)
		bbr_save_at_first_loss(b, sk);
	return sk->snd_ssthresh;
}

/* 2026: undo returns to the phase the spurious loss ended. */
static inline void bbr_undo_phase(struct bbr3 *b, const struct bbr_sock *sk)
{
	if (b->undo_state == BBR_UNDO_STARTUP && b->mode != BBR_STARTUP) {
		b->full_bw_reached = 0;
		bbr_hook_undo_startup(b);
		if (b->mode != BBR_PROBE_RTT)	/* else it exits to STARTUP */
			b->mode = BBR_STARTUP;
	} else if (b->undo_state == BBR_UNDO_PROBE_BW_UP &&
		   !(b->mode == BBR_PROBE_BW && b->cycle_idx == BBR_BW_PROBE_UP) &&
		   b->mode != BBR_PROBE_RTT) {
		b->mode = BBR_PROBE_BW;
		bbr_start_bw_probe_refill(b, sk, 0);
	}
	b->undo_state = BBR_UNDO_NONE;
}

/*
 * The recovery was spurious: lift the bounds the losses set. 2023 returns
 * the saved cwnd. 2026 also clears the loss round, returns to STARTUP or
 * REFILL if the loss ended them, and runs the pipeline once on an empty
 * sample (the ACK that proved the loss spurious may not reach cong_control),
 * which may change the pacing rate: the glue writes sk back.
 */
BBR_API u32 bbr_core_undo_cwnd(struct bbr3 *b, struct bbr_sock *sk)
{
	struct bbr_rs rs = {};

	if (!b || !sk)
		return 0;
	bbr_reset_full_bw(b);
	b->loss_in_round = 0;
	b->bw_lo = bbr_max_u32(b->bw_lo, b->undo_bw_lo);
	b->inflight_lo = bbr_max_u32(b->inflight_lo, b->undo_inflight_lo);
	b->inflight_hi = bbr_max_u32(b->inflight_hi, b->undo_inflight_hi);
	b->try_fast_path = 0;
	if (!bbr_hook_loss_undo(b) || !b->initialized)
		return b->prior_cwnd;

	b->loss_events_in_round = 0;
	b->loss_round_start = 0;
	b->loss_round_delivered = sk->delivered;
	bbr_undo_phase(b, sk);
	sk->snd_cwnd = bbr_max_u32(sk->snd_cwnd, b->prior_cwnd);
	rs.interval_us = -1;
	rs.rtt_us = -1;
	rs.delivered = -1;
	rs.prior_in_flight = sk->inflight;
	bbr_main_pipeline(b, sk, &rs);
	return sk->snd_cwnd;
}

BBR_API int bbr_core_set_state(struct bbr3_sk *sks, struct bbr_sock *sk,
			       u32 new_state)
{
	struct bbr3 *b;

	if (!sks || !sk)
		return 0;
	b = &sks->st;
	/* The loss episode is over. On mainline the losses this same ACK
	 * marked reach the core only after this (the glue's walk and the
	 * unhooked count run in cong_control), where the reference's
	 * per-packet hook saw them before: they belong to the episode that
	 * ends, and must not open (and save the undo state of) a new one,
	 * which would leave the next real episode without its own save. */
	if (new_state < BBR_CA_RECOVERY)
		b->loss_yet_in_recovery = b->loss_yet_in_recovery ?
					  BBR_LOSS_EPISODE_ENDING : 0;
	if (new_state == BBR_CA_LOSS) {
		b->prev_ca_state = BBR_CA_LOSS;
		bbr_reset_full_bw(b);
		/* The next loss round cuts inflight_lo from the pre-RTO level
		 * (the stack already set cwnd to inflight + 1). */
		if (!bbr_is_probing_bandwidth(b) && b->inflight_lo == BBR_UNSET)
			b->inflight_lo = bbr_max_u32(sk->snd_cwnd, b->prior_cwnd);
	} else if (b->prev_ca_state == BBR_CA_LOSS) {
		/* Leaving RTO recovery: back to the last-known good cwnd; the
		 * model bounds apply on the next ACK. */
		sk->snd_cwnd = bbr_max_u32(sk->snd_cwnd, b->prior_cwnd);
		b->try_fast_path = 0;
	}
	/* The stack marked losses (RTO) and retransmits next: a record. */
	if (b->initialized)
		bbr_tx_note(sks, sk);
	return 0;
}

/* The first send after idle: don't burst above the estimated rate.
 * (CA_EVENT_TX_START; its own op, cwnd_event_tx_start, from Linux 7.1.) */
BBR_API int bbr_core_tx_start(struct bbr3 *b, struct bbr_sock *sk)
{
	if (!b || !sk)
		return 0;
	if (!sk->app_limited)
		return 0;
	b->idle_restart = 1;
	b->idle_restarts++;
	b->ack_epoch_mstamp_us = sk->now_us;
	b->ack_epoch_acked = 0;
	if (b->mode == BBR_PROBE_BW)
		bbr_set_pacing_rate(b, sk, bbr_bw(b), BBR_UNIT);
	else if (b->mode == BBR_PROBE_RTT)
		bbr_check_probe_rtt_done(b, sk);
	return 0;
}

/* in_ack_event runs before the stack processes this ACK's TLP state:
 * remember what a TLP was outstanding for bbr_reconstruct_inputs(). */
BBR_API int bbr_core_in_ack_event(struct bbr3 *b, const struct bbr_sock *sk)
{
	if (!b || !sk)
		return 0;
	b->tlp_high_seq = sk->tlp_high_seq;
	b->tlp_retrans_seen = sk->tlp_retrans;
	return 0;
}

/* The inputs mainline lacks, which the entry points above rebuild. */
#include "core/reconstruct.h"

#endif /* BBR3_CORE_H */
