/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The contract between the ETS sockops program (bpf/ets.bpf.c) and the
 * congestion controls that consume its delay signal (bbr_swift): one
 * BPF_MAP_TYPE_SK_STORAGE map, ETS_SK_MAP_NAME, declared identically in
 * every object that uses it; bbrctl pins (or reuses) it at
 * ETS_PIN_ROOT/ETS_SK_MAP_NAME for each object it loads (PIN_SHARED_MAPS),
 * so separately loaded objects share one map.
 *
 * The sockops program is the only writer of the "sender view" fields; a CC
 * only reads them. For one incoming ACK the sockops PARSE_HDR_OPT callback
 * runs before the CC's cong_control (tcp_validate_incoming() precedes
 * tcp_ack()), so a CC sees the Network_RTT of the ACK it is processing.
 *
 * Units are in the names. Needs u8..u64 defined first.
 */
#ifndef ETS_SHARED_H
#define ETS_SHARED_H

/* bump when a layout below changes. 1: struct ets_sk. 2: adds the
 * ets_stats and ets_cfg maps; struct ets_sk is unchanged from 1. 3:
 * ets_sk.missing_run, ets_stats.missing_closing. 4: ets_stats per CPU.
 * 5: TSval is the write time; ets_sk.path_rtt_us, host_delay_us,
 * tx_late_us, rx_wait_us; ets_stats host-delay sums; the ets_path map;
 * ets_cfg.path_win_us, tai_off_ns. 6: ets_sk.una_mark, rcv_mark (in
 * reserved space: the size and every other offset are unchanged). 7:
 * ets_sk.rcv_wup (in the last reserved word; the same),
 * ETS_F_PARSE_PAUSED. 8: ets_sk.tally (struct ets_sk grows from 96 to
 * 120 bytes: the same 192-byte slab class per socket),
 * ets_stats.parse_calls. */
#define ETS_SHARED_VERSION	8

/* bpffs directory the shared map is pinned in, and its name there. */
#include "bbr_pins.h"
#define ETS_SK_MAP_NAME		PIN_ETS_SK_STOR
#define ETS_PIN_ROOT		PIN_SHARED

/* ets_sk.flags */
#define ETS_F_OFFERED		0x01	/* we sent ETS on our SYN / SYN-ACK */
#define ETS_F_PEER_OFFERED	0x02	/* the peer's SYN / SYN-ACK carried ETS */
#define ETS_F_ENABLED		0x04	/* both agreed: send ETS on every segment */
#define ETS_F_DISABLED		0x08	/* an expected option went missing: off for good */
#define ETS_F_HW_RX		0x10	/* RX stamps came from the NIC clock */
#define ETS_F_PARSE_PAUSED	0x20	/* the parse callback is off until this
					 * side next writes a segment: the
					 * segment to echo has been seen */

/*
 * The counters that move on every segment (options written and parsed,
 * samples, host-delay sums), kept per socket and added to the per-netns
 * ets_stats once ETS_TALLY_FOLD_CALLS calls have gone by and when the
 * socket closes or turns ETS off: the map lookup (and the netns cookie
 * it is keyed by) then costs once per that many calls, not on every one.
 * Each count stays far below its 16 bits between two folds, each sum of
 * delays (at most ETS_HW_MAX_AGE_NS each) below its 32.
 */
#define ETS_TALLY_FOLD_CALLS	64

struct ets_tally {
	u32 tx_late_sum_us;
	u32 rx_wait_sum_us;
	u16 sent;
	u16 parsed;
	u16 samples;
	u16 parse_calls;
	u16 tx_late_n;
	u16 rx_wait_n;
};

struct ets_sk {
	/* Sender view: what the CC reads. 0 = no sample yet. */
	u64 last_sample_ns;		/* bpf_ktime_get_ns() of the latest sample */
	u32 network_rtt_us;		/* latest Network_RTT = Total_RTT - rcv delay */
	u32 total_rtt_us;		/* latest ACK arrival - echoed send time */
	u32 rcv_ack_delay_us;		/* latest Receiver_ACK_Delay (EcrDel, in us) */
	u32 min_network_rtt_us;		/* windowed min of network_rtt_us; 0 = none */
	u64 min_network_rtt_stamp_ns;	/* when min_network_rtt_us was taken */
	u32 samples;			/* accepted Network_RTT samples (wraps) */
	u32 rejected;			/* options parsed but not used (wraps) */
	u32 path_rtt_us;		/* least Network_RTT of this host's
					 * connections to the peer over the path
					 * window, when the latest sample was
					 * taken (the ets_path map); 0 = none */
	u32 host_delay_us;		/* the sender's own share of the latest
					 * sample's delay: tx_late_us + rx_wait_us */
	u32 tx_late_us;			/* EWMA (1/8) of how late data segments
					 * were written after their pacing time */
	u32 rx_wait_us;			/* latest ACK's wait from the kernel's
					 * RX stamp to this program; 0 = no stamp */

	/* Receiver view and negotiation: private to the sockops program. */
	u64 ts_latest_clock_ns;		/* TS.LatestClock: arrival of TS.Latest */
	u32 ts_latest_us;		/* TS.Latest: newest peer TSval seen on data */
	u32 ts_recent_us;		/* TS.Recent: peer TSval to echo (RFC 7323) */
	u32 peer_max_ack_delay_us;	/* MaxACKDel from the peer's SYN; 0xFFFF none */
	u32 flags;			/* ETS_F_* */
	u32 missing_run;		/* segments in a row without the option */
	u32 una_mark;			/* the peer's ACKs up to here came with
					 * the option (or excused: SACK, closing) */
	u32 rcv_mark;			/* the same for its data: the peer went
					 * silent once snd_una or rcv_nxt is
					 * ETS_MISSING_LIMIT segments past these
					 * (ets_peer_silent()) */
	u32 rcv_wup;			/* rcv_nxt when this side last wrote a
					 * segment: the kernel's rcv_wup
					 * (Last.ACK.sent, RFC 7323 §4.3), kept
					 * here so the parse callback need not
					 * load it from the tcp_sock */
	struct ets_tally tally;		/* counts not yet in ets_stats */
};

/*
 * The path filter (ets_path_update() in core/ets_opt.h): per network
 * namespace and peer address, the least Network_RTT that any connection
 * measured over the last path window. LRU hash ETS_PATH_MAP_NAME, key
 * struct ets_path_key, value struct ets_path; pinned next to the
 * sk_storage map.
 */
#define ETS_PATH_MAP_NAME	"ets_path"
#define ETS_PATH_MAX_ENTRIES	16384

struct ets_path_key {
	u64 netns;			/* bpf_get_netns_cookie() */
	u32 addr[4];			/* peer: IPv4 in addr[0], else IPv6 */
};

struct ets_path {
	u64 cur;			/* (half-window index << 32) | least us */
	u64 prev;			/* the same for the half before it */
	u64 starts;			/* bbr_swift: (start-window index << 32) |
					 * connections it started in that window
					 * (ets_path_count_start()) */
};

/*
 * Per-netns counters: per-CPU LRU hash map ETS_STATS_MAP_NAME keyed by the
 * netns cookie (u64, bpf_get_netns_cookie()), value struct ets_stats on
 * each CPU (a reader sums them). Pinned
 * next to the sk_storage map. Counters only grow (u64, no wrap in practice).
 * rej_* index = enum ets_parse_err / ets_sample_err in bpf/core/ets_opt.h.
 */
#define ETS_STATS_MAP_NAME	"ets_stats"
#define ETS_STATS_MAX_NETNS	1024

struct ets_stats {
	u64 sent;		/* options written */
	u64 sent_syn;		/* of which on SYN / SYN-ACK */
	u64 parsed;		/* options found and well-formed */
	u64 samples;		/* Network_RTT samples accepted */
	u64 reserve_nospace;	/* no room left next to SACK/TS: not sent */
	u64 store_err;		/* bpf_store_hdr_opt() failed */
	u64 missing;		/* expected option absent: ETS disabled */
	u64 negotiated;		/* connections with ETS enabled */
	u64 refused;		/* handshakes that ended without ETS */
	u64 hw_rx;		/* arrivals stamped with the NIC clock */
	u64 rej_parse[5];	/* [enum ets_parse_err], [0] unused */
	u64 rej_sample[7];	/* [enum ets_sample_err], [0] unused */
	u64 ecrdel_invalid;	/* peer sent EcrDelUnit 2 (it had no valid
				 * delay): Total_RTT only, not a rejection */
	u64 missing_closing;	/* no option on a segment of a closing
				 * connection (the peer's TIME_WAIT ACK has
				 * no sockops): not counted as missing */
	/* the sender's host delay (docs/ets.md, "Host delay"): sums in us
	 * and counts, for means */
	u64 tx_late_sum_us;	/* data segments: write time - pacing time */
	u64 tx_late_n;
	u64 rx_wait_sum_us;	/* ACKs with an RX stamp: parse - stamp */
	u64 rx_wait_n;
	u64 delack_refused;	/* connections whose delayed-ACK cap the
				 * kernel refused (below two jiffies) */
	u64 parse_calls;	/* parse callbacks on connections with ETS on
				 * (parsed, rejected, or without the option) */
};

/* Segments in a row without the option that turn ETS off for the
 * connection (a middlebox strips it): one forged plain ACK does not. */
#define ETS_MISSING_LIMIT	3

/*
 * Configuration written by the loader (array map ETS_CFG_MAP_NAME, one
 * entry, key 0). hw_off_ns converts the NIC's PHC stamps to
 * CLOCK_MONOTONIC (mono = phc + hw_off_ns); the BPF side uses hardware
 * RX stamps only while hw_off_valid is 1. max_ack_del_us is what we
 * advertise as MaxACKDel (0 = the kernel's TCP_DELACK_MAX, 200 ms,
 * which saturates the field at 0xFFFE).
 */
#define ETS_CFG_MAP_NAME	"ets_cfg"

struct ets_cfg {
	s64 hw_off_ns;
	u32 hw_off_valid;
	u32 max_ack_del_us;
	u64 min_rtt_win_ns;	/* min filter window; 0 = 10 s */
	u32 path_win_us;	/* path filter window; 0 = ETS_PATH_WIN_DEFAULT_US */
	u32 _pad;
	s64 tai_off_ns;		/* CLOCK_TAI - CLOCK_REALTIME, for software
				 * RX stamps (REALTIME); 0 when TAI is kept
				 * equal to REALTIME */
};

#endif /* ETS_SHARED_H */
