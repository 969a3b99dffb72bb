# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make install: bbrctl, the BPF objects it loads, its documentation and the
# systemd unit with its config. DESTDIR (staging root) and PREFIX are
# honoured; bbrctl finds its objects in PREFIX/lib/bbr-bpf relative to its
# own path, so any PREFIX works without --objdir.
#
#   make install [DESTDIR=/tmp/stage] [PREFIX=/usr/local] [SYSCONFDIR=/etc]

PREFIX      ?= /usr/local
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(PREFIX)/lib/systemd/system
INSTALL     ?= install
# The objects bbrctl loads: the CCs and its own sockops / iterator programs.
INSTALL_BPF := $(filter-out selftests/%,$(BPF_OBJS))

.PHONY: install
install: $(LOADER) $(INSTALL_BPF)
	$(INSTALL) -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/lib/bbr-bpf \
		$(DESTDIR)$(PREFIX)/share/doc/bbr-bpf $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(SYSCONFDIR)/bbr-bpf
	$(INSTALL) -m 0755 $(LOADER) $(DESTDIR)$(PREFIX)/sbin/bbrctl
	$(INSTALL) -m 0644 $(INSTALL_BPF) $(DESTDIR)$(PREFIX)/lib/bbr-bpf/
	$(INSTALL) -m 0644 docs/bbrctl.md $(DESTDIR)$(PREFIX)/share/doc/bbr-bpf/
	sed 's|@PREFIX@|$(PREFIX)|g; s|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		packaging/bbr-bpf.service > $(DESTDIR)$(UNITDIR)/bbr-bpf.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/bbr-bpf.service
	$(INSTALL) -m 0755 packaging/bbr-bpf-boot $(DESTDIR)$(PREFIX)/lib/bbr-bpf/bbr-bpf-boot
	test -e $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf || \
		$(INSTALL) -m 0644 packaging/bbr-bpf.conf $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf
