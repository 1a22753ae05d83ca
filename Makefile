# tokenpin — build, test, demo, install.
#
#   make demo      build and run the walkthrough on the simulated token
#   make test      build and run every test (unit, CLI end to end, PC/SC through a private pcscd)
#   make install   install binaries, man pages, config example (PREFIX, DESTDIR)
#   make bench     the figures: KDF calibration, verify latency, start-up, peak memory, token verify vs bare APDUs and gpg
#   make pam       the PAM module (C, no Swift runtime): .build/pam/pam_tokenpin.so
#   make man       the man pages from their scdoc sources: .build/man/
#   make bench-daemon  the daemon figures: throughput under 64 clients, peak memory, status latency
#
# Each target installs the Debian packages it needs when they are missing.

PREFIX        ?= /usr/local
DESTDIR       ?=
SWIFT         ?= swift
BUILD_FLAGS   ?=
RELEASE_DIR    = .build/release
DEBUG_DIR      = .build/debug

# Build and run: libsodium and pcsc-lite headers. Tests add the real PC/SC stack and peers.
BUILD_PACKAGES = libsodium-dev libpcsclite-dev pkg-config libpam0g-dev scdoc
TEST_PACKAGES  = pcscd vsmartcard-vpcd opensc pcsc-tools scdaemon gnupg util-linux iproute2 pamtester passwd python3 bc
BENCH_PACKAGES = hyperfine time python3 bc

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps test-deps bench-deps build debug test demo bench bench-daemon install uninstall clean pam man \
        install-daemon install-pam install-units install-udev install-man

CC            ?= cc
PAM_CFLAGS    ?= -std=c11 -O2 -Wall -Wextra -Werror -fPIC -D_FORTIFY_SOURCE=2 -fstack-protector-strong
PAM_DIR       ?= $(shell pkg-config --variable=libdir pam 2>/dev/null || echo /usr/lib/x86_64-linux-gnu)/security
SYSTEMD_DIR   ?= /usr/lib/systemd/system
UDEV_DIR      ?= /usr/lib/udev/rules.d
PAM_CONFIGS   ?= /usr/share/pam-configs
MAN_PAGES      = tokenpin.1 tokenpind.8 tokenpin.conf.5 pam_tokenpin.8

all: build

# Installs the packages in $(1) that dpkg does not list as installed.
define apt_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

deps:
	$(call apt_install,$(BUILD_PACKAGES))

test-deps: deps
	$(call apt_install,$(TEST_PACKAGES))

bench-deps: deps
	$(call apt_install,$(BENCH_PACKAGES))

build: deps
	$(SWIFT) build -c release $(BUILD_FLAGS)

debug: deps
	$(SWIFT) build $(BUILD_FLAGS)

demo: build
	$(RELEASE_DIR)/tokenpin demo

test: test-deps pam
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	scripts/run-tests

# The PAM module: plain C against libpam, so login, sshd and sudo load no Swift runtime.
pam: .build/pam/pam_tokenpin.so

.build/pam/pam_tokenpin.so: pam/pam_tokenpin.c
	@mkdir -p .build/pam
	$(CC) $(PAM_CFLAGS) -shared -o $@ $< -lpam

# make fuzz: every libFuzzer target (tests/service/fuzz.sh) for FUZZ_SECONDS each; the corpora and any crash
# inputs stay in .build/fuzz and grow from run to run.
FUZZ_SECONDS ?= 300
.PHONY: fuzz
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_DIR=$(CURDIR)/.build/fuzz bash tests/service/fuzz.sh

# Man pages: scdoc sources in docs/man/*.scd, built at install.
man: $(addprefix .build/man/,$(MAN_PAGES))

.build/man/%: docs/man/%.scd
	@mkdir -p .build/man
	scdoc < $< > $@

bench-daemon: bench-deps build
	scripts/bench-daemon $(RELEASE_DIR)

bench: bench-deps test-deps build
	scripts/bench $(RELEASE_DIR)/tokenpin
	@if [ "$$(id -u)" = 0 ]; then TOKENPIN_BIN=$(CURDIR)/$(RELEASE_DIR)/tokenpin TOKENPIN_SIM_BIN=$(CURDIR)/$(RELEASE_DIR)/tokenpin-sim scripts/bench-token; \
	else echo "note: scripts/bench-token needs root (a private pcscd)"; fi

install: build install-daemon install-pam install-units install-udev install-man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/doc/tokenpin $(DESTDIR)/etc/tokenpin
	install -m 0755 $(RELEASE_DIR)/tokenpin $(DESTDIR)$(PREFIX)/bin/tokenpin
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/tokenpin/
	install -m 0644 config/tokenpin.conf.example $(DESTDIR)$(PREFIX)/share/doc/tokenpin/tokenpin.conf.example
	[ -e $(DESTDIR)/etc/tokenpin/tokenpin.conf ] || install -m 0644 config/tokenpin.conf.example $(DESTDIR)/etc/tokenpin/tokenpin.conf

install-daemon: build
	install -d $(DESTDIR)$(PREFIX)/sbin
	install -m 0755 $(RELEASE_DIR)/tokenpind $(DESTDIR)$(PREFIX)/sbin/tokenpind

install-pam: pam
	install -d $(DESTDIR)$(PAM_DIR) $(DESTDIR)$(PAM_CONFIGS)
	install -m 0644 .build/pam/pam_tokenpin.so $(DESTDIR)$(PAM_DIR)/pam_tokenpin.so
	install -m 0644 pam-configs/tokenpin $(DESTDIR)$(PAM_CONFIGS)/tokenpin

# The unit names the binary where this install put it.
install-units:
	install -d $(DESTDIR)$(SYSTEMD_DIR)
	sed 's#/usr/local/sbin/tokenpind#$(PREFIX)/sbin/tokenpind#' systemd/tokenpind.service > $(DESTDIR)$(SYSTEMD_DIR)/tokenpind.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_DIR)/tokenpind.service
	install -m 0644 systemd/tokenpind.socket $(DESTDIR)$(SYSTEMD_DIR)/tokenpind.socket

install-udev:
	install -d $(DESTDIR)$(UDEV_DIR)
	install -m 0644 udev/70-tokenpin.rules $(DESTDIR)$(UDEV_DIR)/70-tokenpin.rules

install-man: man
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0644 .build/man/tokenpin.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 .build/man/tokenpin.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 0644 .build/man/tokenpind.8 .build/man/pam_tokenpin.8 $(DESTDIR)$(PREFIX)/share/man/man8/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/tokenpind $(DESTDIR)$(PAM_DIR)/pam_tokenpin.so $(DESTDIR)$(PAM_CONFIGS)/tokenpin
	rm -f $(DESTDIR)$(SYSTEMD_DIR)/tokenpind.service $(DESTDIR)$(SYSTEMD_DIR)/tokenpind.socket
	rm -f $(DESTDIR)$(UDEV_DIR)/70-tokenpin.rules
	rm -f $(DESTDIR)$(PREFIX)/share/man/man1/tokenpin.1 $(DESTDIR)$(PREFIX)/share/man/man5/tokenpin.conf.5
	rm -f $(DESTDIR)$(PREFIX)/share/man/man8/tokenpind.8 $(DESTDIR)$(PREFIX)/share/man/man8/pam_tokenpin.8
	rm -f $(DESTDIR)$(PREFIX)/bin/tokenpin
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/tokenpin

clean:
	rm -rf .build
