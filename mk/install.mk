# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make install: bbrctl, the BPF objects it loads (and their builds for
# Linux 7.1+ in tx_start/, which bbrctl picks where the kernel has that op),
# its documentation and the systemd unit with its config. DESTDIR (staging
# root) and PREFIX are honoured; bbrctl finds its objects in
# PREFIX/lib/bbr-bpf relative to its own path, so any PREFIX works without
# --objdir. make uninstall removes the same files; the config only if it is
# still the shipped one. Neither touches what is loaded: CCs stay registered
# (`bbrctl unload all` first to remove them).
#
#   make install   [DESTDIR=/tmp/stage] [PREFIX=/usr/local] [SYSCONFDIR=/etc]
#   make uninstall [the same]

PREFIX      ?= /usr/local
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(PREFIX)/lib/systemd/system
INSTALL     ?= install
# The objects bbrctl loads: the CCs and its own sockops / iterator programs.
INSTALL_BPF := $(filter-out selftests/%,$(BPF_OBJS))

.PHONY: install uninstall
install: $(LOADER) $(INSTALL_BPF) $(TX_START_OBJS)
	$(INSTALL) -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/lib/bbr-bpf \
		$(DESTDIR)$(PREFIX)/lib/bbr-bpf/tx_start \
		$(DESTDIR)$(PREFIX)/share/doc/bbr-bpf $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(SYSCONFDIR)/bbr-bpf
	$(INSTALL) -m 0755 $(LOADER) $(DESTDIR)$(PREFIX)/sbin/bbrctl
	$(INSTALL) -m 0644 $(INSTALL_BPF) $(DESTDIR)$(PREFIX)/lib/bbr-bpf/
	$(INSTALL) -m 0644 $(TX_START_OBJS) $(DESTDIR)$(PREFIX)/lib/bbr-bpf/tx_start/
	$(INSTALL) -m 0644 docs/bbrctl.md $(DESTDIR)$(PREFIX)/share/doc/bbr-bpf/
	sed 's|@PREFIX@|$(PREFIX)|g; s|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		packaging/bbr-bpf.service > $(DESTDIR)$(UNITDIR)/bbr-bpf.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/bbr-bpf.service
	$(INSTALL) -m 0755 packaging/bbr-bpf-boot $(DESTDIR)$(PREFIX)/lib/bbr-bpf/bbr-bpf-boot
	test -e $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf || \
		$(INSTALL) -m 0644 packaging/bbr-bpf.conf $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/bbrctl \
		$(addprefix $(DESTDIR)$(PREFIX)/lib/bbr-bpf/,$(notdir $(INSTALL_BPF)) bbr-bpf-boot) \
		$(addprefix $(DESTDIR)$(PREFIX)/lib/bbr-bpf/tx_start/,$(notdir $(TX_START_OBJS))) \
		$(DESTDIR)$(PREFIX)/share/doc/bbr-bpf/bbrctl.md \
		$(DESTDIR)$(UNITDIR)/bbr-bpf.service
	-rmdir $(DESTDIR)$(PREFIX)/lib/bbr-bpf/tx_start $(DESTDIR)$(PREFIX)/lib/bbr-bpf \
		$(DESTDIR)$(PREFIX)/share/doc/bbr-bpf 2>/dev/null
	if cmp -s packaging/bbr-bpf.conf $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf; \
		rmdir $(DESTDIR)$(SYSCONFDIR)/bbr-bpf 2>/dev/null || true; \
	elif test -e $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf; then \
		echo "kept $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf (changed since install)"; \
	fi
