# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make install: bbrctl, the BPF objects it loads (and their builds for
# Linux 7.1+ in tx_start/, which bbrctl picks where the kernel has that op),
# its documentation, man page and bash completion, and the systemd unit
# with its config. DESTDIR (staging
# root) and PREFIX are honoured; bbrctl finds its objects in
# PREFIX/lib/bbr-bpf relative to its own path, so any PREFIX works without
# --objdir. make uninstall removes the same files; the config only if it is
# still the shipped one. Neither touches what is loaded: CCs stay registered
# (`bbrctl unload all` first to remove them).
#
#   make install   [DESTDIR=/tmp/stage] [PREFIX=/usr/local] [SYSCONFDIR=/etc]
#   make uninstall [the same]
#   make man       the man pages alone (build/man/), from docs/man/*.scd
#
# `make deb` (mk/deb.mk) builds the Debian package through `make install`.

PREFIX      ?= /usr/local
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(PREFIX)/lib/systemd/system
MANDIR      ?= $(PREFIX)/share/man
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
INSTALL     ?= install
# The objects bbrctl loads: the CCs and its own sockops / iterator programs.
INSTALL_BPF := $(filter-out selftests/%,$(BPF_OBJS))
INSTALL_DOCS := docs/bbrctl.md docs/operations.md docs/ab-testing.md

# Man pages: scdoc(1) sources in docs/man/NAME.SECTION.scd, roff in
# build/man/NAME.SECTION. SOURCE_DATE_EPOCH (set by dpkg-buildpackage)
# fixes the date in the footer.
MAN_SRCS  := $(wildcard docs/man/*.scd)
MAN_PAGES := $(patsubst docs/man/%.scd,$(BUILD_DIR)/man/%,$(MAN_SRCS))
SCDOC     ?= scdoc
ALL_TARGETS += $(MAN_PAGES)

$(BUILD_DIR)/man/%: docs/man/%.scd
	@mkdir -p $(@D)
	$(SCDOC) < $< > $@.tmp && mv $@.tmp $@

.PHONY: install uninstall man install-build
man: $(MAN_PAGES)

# What install copies, built (the Debian package's build step).
install-build: $(LOADER) $(INSTALL_BPF) $(TX_START_OBJS) $(MAN_PAGES)

install: install-build
	$(INSTALL) -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/lib/bbr-bpf \
		$(DESTDIR)$(PREFIX)/lib/bbr-bpf/tx_start \
		$(DESTDIR)$(PREFIX)/share/doc/bbr-bpf $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(COMPLETIONDIR) \
		$(DESTDIR)$(SYSCONFDIR)/bbr-bpf
	$(INSTALL) -m 0755 $(LOADER) $(DESTDIR)$(PREFIX)/sbin/bbrctl
	$(INSTALL) -m 0644 $(INSTALL_BPF) $(DESTDIR)$(PREFIX)/lib/bbr-bpf/
	$(INSTALL) -m 0644 $(TX_START_OBJS) $(DESTDIR)$(PREFIX)/lib/bbr-bpf/tx_start/
	$(INSTALL) -m 0644 $(INSTALL_DOCS) $(DESTDIR)$(PREFIX)/share/doc/bbr-bpf/
	for p in $(MAN_PAGES); do \
		$(INSTALL) -D -m 0644 $$p $(DESTDIR)$(MANDIR)/man$${p##*.}/$${p##*/} || exit; \
	done
	$(INSTALL) -m 0644 packaging/bbrctl.bash-completion $(DESTDIR)$(COMPLETIONDIR)/bbrctl
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
		$(addprefix $(DESTDIR)$(PREFIX)/share/doc/bbr-bpf/,$(notdir $(INSTALL_DOCS))) \
		$(foreach p,$(notdir $(MAN_PAGES)),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $p))/$p) \
		$(DESTDIR)$(COMPLETIONDIR)/bbrctl \
		$(DESTDIR)$(UNITDIR)/bbr-bpf.service
	-rmdir $(DESTDIR)$(PREFIX)/lib/bbr-bpf/tx_start $(DESTDIR)$(PREFIX)/lib/bbr-bpf \
		$(DESTDIR)$(PREFIX)/share/doc/bbr-bpf 2>/dev/null
	if cmp -s packaging/bbr-bpf.conf $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf; \
		rmdir $(DESTDIR)$(SYSCONFDIR)/bbr-bpf 2>/dev/null || true; \
	elif test -e $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf; then \
		echo "kept $(DESTDIR)$(SYSCONFDIR)/bbr-bpf/bbr-bpf.conf (changed since install)"; \
	fi
