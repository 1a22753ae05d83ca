# tokenpin — build, test, demo, install.
#
#   make demo      build and run the walkthrough on the simulated token
#   make test      build and run every test (unit, CLI end to end, PC/SC through a private pcscd)
#   make install   install binaries, man pages, config example (PREFIX, DESTDIR)
#   make bench     the figures: KDF calibration, verify latency, start-up, peak memory, token verify vs bare APDUs and gpg
#
# Each target installs the Debian packages it needs when they are missing.

PREFIX        ?= /usr/local
DESTDIR       ?=
SWIFT         ?= swift
BUILD_FLAGS   ?=
RELEASE_DIR    = .build/release
DEBUG_DIR      = .build/debug

# Build and run: libsodium and pcsc-lite headers. Tests add the real PC/SC stack and peers.
BUILD_PACKAGES = libsodium-dev libpcsclite-dev pkg-config
TEST_PACKAGES  = pcscd vsmartcard-vpcd opensc pcsc-tools scdaemon gnupg util-linux python3 bc
BENCH_PACKAGES = hyperfine time bc

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps test-deps bench-deps build debug test demo bench install uninstall clean

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

test: test-deps
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	scripts/run-tests

bench: bench-deps test-deps build
	scripts/bench $(RELEASE_DIR)/tokenpin
	@if [ "$$(id -u)" = 0 ]; then TOKENPIN_BIN=$(CURDIR)/$(RELEASE_DIR)/tokenpin TOKENPIN_SIM_BIN=$(CURDIR)/$(RELEASE_DIR)/tokenpin-sim scripts/bench-token; \
	else echo "note: scripts/bench-token needs root (a private pcscd)"; fi

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/doc/tokenpin $(DESTDIR)/etc/tokenpin
	install -m 0755 $(RELEASE_DIR)/tokenpin $(DESTDIR)$(PREFIX)/bin/tokenpin
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/tokenpin/
	install -m 0644 config/tokenpin.conf.example $(DESTDIR)$(PREFIX)/share/doc/tokenpin/tokenpin.conf.example
	[ -e $(DESTDIR)/etc/tokenpin/tokenpin.conf ] || install -m 0644 config/tokenpin.conf.example $(DESTDIR)/etc/tokenpin/tokenpin.conf

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/tokenpin
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/tokenpin

clean:
	rm -rf .build
