# tokenpin — build, test, demo, install.
#
#   make demo      build and run the walkthrough on the simulated token
#   make test      build and run every test (unit, CLI end to end, PC/SC through a private pcscd)
#   make           build what make install copies: static release binaries, the PAM module, man pages
#   make install   copy what make built: binaries, PAM module and service file, units, udev rules, man pages,
#                  docs, config example (PREFIX, DESTDIR); builds nothing, so `make && sudo make install`
#   make deb       the Debian package: .build/deb/tokenpin_VERSION_amd64.deb (debian/, debhelper)
#   make bench     the figures: KDF calibration, verify latency, start-up, peak memory, token verify (OpenPGP, PIV)
#                  vs bare APDUs and gpg, PKCS#11 token verify vs bare PKCS#11 calls (SoftHSM; as root OpenSC over
#                  the simulated PIV card)
#   make pam       the PAM module (C, no Swift runtime): .build/pam/pam_tokenpin.so
#   make pam-tests the module's reader and writer against the shared protocol vectors: .build/pam/wire-tests
#   make pinpad    the test-only virtual pinpad reader (a pcscd driver) and its unit tests: .build/pinpad/
#   make man       the man pages from their scdoc sources: .build/man/
#   make bench-daemon  the daemon figures: throughput under 64 clients, peak memory, status latency
#   make bench-pkcs11  the PKCS#11 figures: calls per verify, bare against through tokenpin-pkcs11, helper start
#
# Each target installs the Debian packages it needs when they are missing.

PREFIX        ?= /usr/local
DESTDIR       ?=
SWIFT         ?= swift
BUILD_FLAGS   ?=
# Release binaries carry the Swift runtime and Foundation inside and no symbols, so they run without the
# toolchain and need only Debian's libraries (docs/packaging.md); relocations are read-only after start.
# Start-up (docs/packaging.md, "Start-up"): libstdc++ linked in as well (the Swift runtime's C++ library: loading
# libstdc++.so.6 and binding its ~4,300 symbol relocations was a quarter of `tokenpin --version`), through a
# directory that holds only GCC's libstdc++.a and comes first in the search; lld packs the ~40,000 relative
# relocations into a few KB (DT_RELR, glibc 2.36). --no-export-dynamic: SwiftPM exports every symbol of an
# executable's modules (about 7,500 for tokenpin), which nothing loads by name; the dynamic loader and the runtime's
# dladdr walked them at every start. --disable-local-rpath: no RUNPATH of $ORIGIN, which nothing beside the
# binaries fills (the Swift libraries are inside), and which made the loader look for each library in a dozen
# directories under /usr/bin before the system's (25 failed system calls of 132 in `tokenpin --version`).
STATIC_CXX_DIR = $(CURDIR)/.build/static-cxx
RELEASE_FLAGS ?= --static-swift-stdlib -Xlinker -s -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now \
                 -Xswiftc -L$(STATIC_CXX_DIR) -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
                 -Xlinker --no-export-dynamic --disable-local-rpath
RELEASE_DIR    = .build/release
DEBUG_DIR      = .build/debug

# Build and run: libsodium, libcrypto (OpenSSL 3) and pcsc-lite headers. Tests add the real PC/SC stack and peers.
# libp11-kit-dev: PKCS#11's header and p11-kit's module loading and URIs (TokenpinPKCS11, through CP11Kit).
# libsystemd-dev: sd-login's header for tokenpind's card-bind check (the library itself is loaded with dlopen).
BUILD_PACKAGES = libsodium-dev libssl-dev libpcsclite-dev pkg-config libpam0g-dev libsystemd-dev scdoc libp11-kit-dev
# python3-venv, python3-dev and gcc: Simulator/Tests/EndToEnd/ykman-clients.sh installs ykman from PyPI into a venv,
# building pyscard (against libpcsclite-dev, a build package) from source.
# softhsm2, opensc-pkcs11, gnutls-bin (p11tool) and p11-kit-modules: the PKCS#11 tests' real modules and peers
# (Tests/TokenpinPKCS11Tests, Tests/EndToEnd/pkcs11-opensc.sh); gcc also builds their test-only hostile module.
# openssh-client, restic, borgbackup and age: what the PIN opens, with the real consumers (Tests/EndToEnd/ssh.sh, restic.sh, age.sh).
TEST_PACKAGES  = pcscd vsmartcard-vpcd opensc yubico-piv-tool openssl pcsc-tools scdaemon gnupg util-linux iproute2 pamtester passwd python3 bc zsh fish \
                 python3-venv python3-dev gcc softhsm2 opensc-pkcs11 gnutls-bin p11-kit-modules openssh-client restic borgbackup \
                 gnome-keyring libpam-gnome-keyring libsecret-tools dbus-daemon age
BENCH_PACKAGES = hyperfine time python3 bc valgrind
# make deb and its test (Tests/EndToEnd/package.sh).
DEB_PACKAGES   = debhelper dpkg-dev lintian
# The version, written once in the sources; the package takes it from there.
VERSION       := $(shell sed -n 's/^public let tokenpinVersion = "\(.*\)"$$/\1/p' Sources/Core/Version.swift)
DEB_ARCH      := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB_DIR        = .build/deb
DEB            = $(DEB_DIR)/tokenpin_$(VERSION)_$(DEB_ARCH).deb

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps test-deps bench-deps deb-deps build debug test demo bench bench-daemon bench-pkcs11 install uninstall clean \
        pam pam-tests pinpad man install-check install-daemon install-pam install-units install-udev install-man install-completions deb \
        completions lint format profile-build

CC            ?= cc
PAM_CFLAGS    ?= -std=c11 -O2 -Wall -Wextra -Werror -fPIC -D_FORTIFY_SOURCE=2 -fstack-protector-strong
PAM_LDFLAGS   ?= -Wl,-z,relro -Wl,-z,now
PAM_DIR       ?= $(shell pkg-config --variable=libdir pam 2>/dev/null || echo /usr/lib/x86_64-linux-gnu)/security
SYSTEMD_DIR   ?= /usr/lib/systemd/system
UDEV_DIR      ?= /usr/lib/udev/rules.d
PAM_CONFIGS   ?= /usr/share/pam-configs
MAN_PAGES      = tokenpin.1 tokenpin-bench.1 tokenpin-askpass.1 age-plugin-tokenpin.1 tokenpind.8 tokenpin.conf.5 pam_tokenpin.8

all: build pam man completions

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

deb-deps: deps
	$(call apt_install,$(DEB_PACKAGES))

build: deps $(STATIC_CXX_DIR)/libstdc++.a
	$(SWIFT) build -c release $(RELEASE_FLAGS) $(BUILD_FLAGS)

# GCC's static libstdc++ (libstdc++-12-dev, which the Swift toolchain needs anyway), alone in its directory;
# found by cc or, where there is no cc, by the toolchain's clang.
$(STATIC_CXX_DIR)/libstdc++.a:
	@archive=$$($(CC) -print-file-name=libstdc++.a 2>/dev/null); [ -f "$$archive" ] || archive=$$(clang -print-file-name=libstdc++.a 2>/dev/null); \
	[ -f "$$archive" ] || { echo "error: no libstdc++.a (apt-get install libstdc++-12-dev)" >&2; exit 2; }; \
	mkdir -p $(STATIC_CXX_DIR) && ln -sf "$$archive" $@

debug: deps
	$(SWIFT) build $(BUILD_FLAGS)

demo: build
	$(RELEASE_DIR)/tokenpin demo

test: test-deps deb-deps pam pam-tests pinpad
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	scripts/run-tests

# make lint: the project's .swift-format (120 columns, 4 spaces) over every Swift file, strictly: any finding fails;
# and no Swift file outside Sources/System imports Glibc (scripts/check-glibc-imports); and docs/architecture.md
# draws every module with exactly its Package.swift dependencies (scripts/check-architecture); and the known-key
# tables are what scripts/known-multiples computes from the curves' parameters. make format rewrites the files the
# way lint wants them.
SWIFT_FORMAT_PATHS = Package.swift Plugins Sources Tests Simulator/Sources Simulator/Tests

# An unstripped release tokenpin and tokenpind in .build/profile for callgrind (docs/performance.md): the release
# flags without -s, debug info taken out (valgrind 3.19 reads no DWARF 5); the release build is relinked stripped.
profile-build: deps $(STATIC_CXX_DIR)/libstdc++.a
	$(SWIFT) build -c release $(subst -Xlinker -s ,,$(RELEASE_FLAGS)) $(BUILD_FLAGS)
	mkdir -p .build/profile
	for program in tokenpin tokenpind tokenpin-bench; do objcopy --strip-debug $(RELEASE_DIR)/$$program .build/profile/$$program; done
	$(SWIFT) build -c release $(RELEASE_FLAGS) $(BUILD_FLAGS)

lint:
	$(SWIFT) format lint --strict --recursive --parallel $(SWIFT_FORMAT_PATHS)
	scripts/check-glibc-imports
	scripts/check-architecture
	scripts/known-multiples --check

format:
	$(SWIFT) format format --in-place --recursive --parallel $(SWIFT_FORMAT_PATHS)

# The PAM module: plain C against libpam, so login, sshd and sudo load no Swift runtime.
pam: .build/pam/pam_tokenpin.so

.build/pam/pam_tokenpin.so: pam/pam_tokenpin.c
	@mkdir -p .build/pam
	$(CC) $(PAM_CFLAGS) $(PAM_LDFLAGS) -shared -o $@ $< -lpam

# The module's protocol reader and writer against Tests/Vectors/protocol, the vectors the Swift codec's tests read
# too (ProtocolVectorTests): the two sides cannot drift apart. scripts/run-tests runs it.
PAM_TEST_CFLAGS ?= -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all
pam-tests: .build/pam/wire-tests

.build/pam/wire-tests: pam/wire-tests.c pam/pam_tokenpin.c
	@mkdir -p .build/pam
	$(CC) $(PAM_TEST_CFLAGS) -o $@ pam/wire-tests.c -lpam

# The virtual pinpad reader for the tests (Simulator/pinpad, Simulator/README.md): a pcscd reader driver built
# against pcsc-lite's ifdhandler.h and reader.h (libpcsclite-dev, a build package), which pcscd-sandbox --pinpad
# loads; its unit tests, built with AddressSanitizer and UndefinedBehaviorSanitizer (gcc, a test package); and
# pinpad-control, a PC/SC client that sends the driver any control call (Simulator/Tests/EndToEnd/pinpad-clients.sh).
PINPAD_DIR     = .build/pinpad
PINPAD_DRIVER  = $(PINPAD_DIR)/libifd-tokenpin-pinpad.so
PINPAD_CORE    = Simulator/pinpad/pinpad.c Simulator/pinpad/keypad.c
PINPAD_HEADERS = Simulator/pinpad/pinpad.h Simulator/pinpad/keypad.h Simulator/pinpad/link.h
PINPAD_CFLAGS ?= -std=c11 -O2 -Wall -Wextra -Werror -fPIC -fvisibility=hidden -D_FORTIFY_SOURCE=2 -fstack-protector-strong
PINPAD_TEST_CFLAGS ?= -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all

pinpad: $(PINPAD_DRIVER) $(PINPAD_DIR)/pinpad-tests $(PINPAD_DIR)/pinpad-control

$(PINPAD_DRIVER): Simulator/pinpad/ifd.c Simulator/pinpad/link.c $(PINPAD_CORE) $(PINPAD_HEADERS)
	@mkdir -p $(PINPAD_DIR)
	$(CC) $(PINPAD_CFLAGS) $$(pkg-config --cflags libpcsclite) $(PAM_LDFLAGS) -shared -o $@ Simulator/pinpad/ifd.c \
	    Simulator/pinpad/link.c $(PINPAD_CORE) -pthread

$(PINPAD_DIR)/pinpad-tests: Simulator/pinpad/tests.c Simulator/pinpad/hex.h $(PINPAD_CORE) $(PINPAD_HEADERS)
	@mkdir -p $(PINPAD_DIR)
	$(CC) $(PINPAD_TEST_CFLAGS) -o $@ Simulator/pinpad/tests.c $(PINPAD_CORE)

$(PINPAD_DIR)/pinpad-control: Simulator/pinpad/control.c Simulator/pinpad/hex.h
	@mkdir -p $(PINPAD_DIR)
	$(CC) $(PINPAD_CFLAGS) $$(pkg-config --cflags libpcsclite) -o $@ $< $$(pkg-config --libs libpcsclite)

# make fuzz: every libFuzzer target (Tests/Fuzz/fuzz.sh) for FUZZ_SECONDS each; the corpora and any crash
# inputs stay in .build/fuzz and grow from run to run.
FUZZ_SECONDS ?= 300
.PHONY: fuzz
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_DIR=$(CURDIR)/.build/fuzz bash Tests/Fuzz/fuzz.sh

# Man pages: scdoc sources in docs/man/*.scd. They write @PREFIX@ where a path depends on the install;
# install-man puts the PREFIX of that install in, so each install names its own paths.
man: $(addprefix .build/man/,$(MAN_PAGES))

# Shell completions, generated by the built CLI from the same declarations as its help.
COMPLETIONS = .build/completions/tokenpin.bash .build/completions/_tokenpin .build/completions/tokenpin.fish
completions: build
	@mkdir -p .build/completions
	$(RELEASE_DIR)/tokenpin completions bash > .build/completions/tokenpin.bash
	$(RELEASE_DIR)/tokenpin completions zsh > .build/completions/_tokenpin
	$(RELEASE_DIR)/tokenpin completions fish > .build/completions/tokenpin.fish

.build/man/%: docs/man/%.scd
	@mkdir -p .build/man
	scdoc < $< > $@

# make bench-pkcs11: the PKCS#11 figures (calls per verify, bare against through tokenpin-pkcs11, the helper's start)
# with SoftHSM2 and, as root, with OpenSC over a private pcscd and the simulated PIV card; 200 iterations each.
bench-pkcs11: test-deps
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	TOKENPIN_PKCS11_BENCH_ITERATIONS=200 $(SWIFT) test --skip-build --filter 'TokenpinPKCS11Tests\.FiguresTests'
	@if [ "$$(id -u)" = 0 ]; then TOKENPIN_PKCS11_BENCH_ITERATIONS=200 bash Tests/EndToEnd/pkcs11-opensc.sh; \
	else echo "note: the OpenSC figures need root (a private pcscd)"; fi

bench-daemon: bench-deps build
	scripts/bench-daemon $(RELEASE_DIR)

# Every figure of docs/performance.md's table in one run, with the machine's load beside each part; the table last.
bench: bench-deps test-deps build pam
	scripts/bench-all $(RELEASE_DIR)

# Copies only: it fails, saying what to run, when make has not built everything (so `sudo make install`
# never compiles as root or needs swift on root's PATH).
INSTALL_INPUTS = $(RELEASE_DIR)/tokenpin $(RELEASE_DIR)/tokenpin-bench $(RELEASE_DIR)/tokenpin-askpass $(RELEASE_DIR)/age-plugin-tokenpin $(RELEASE_DIR)/tokenpind $(RELEASE_DIR)/tokenpin-pkcs11 .build/pam/pam_tokenpin.so $(addprefix .build/man/,$(MAN_PAGES))

install: install-check install-daemon install-pam install-units install-udev install-man install-completions
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/doc/tokenpin $(DESTDIR)/etc/tokenpin $(DESTDIR)/etc/tokenpin/revoked.d
	install -m 0755 $(RELEASE_DIR)/tokenpin $(DESTDIR)$(PREFIX)/bin/tokenpin
	# `tokenpin bench`, `tokenpin demo` and `--reader sim`: tokenpin runs the tokenpin-bench beside it in its place.
	install -m 0755 $(RELEASE_DIR)/tokenpin-bench $(DESTDIR)$(PREFIX)/bin/tokenpin-bench
	# SSH_ASKPASS for keys behind tokenpin: it runs the tokenpin beside it.
	install -m 0755 $(RELEASE_DIR)/tokenpin-askpass $(DESTDIR)$(PREFIX)/bin/tokenpin-askpass
	# age's plugin for tokenpin identities (age finds it on PATH): it runs the tokenpin beside it.
	install -m 0755 $(RELEASE_DIR)/age-plugin-tokenpin $(DESTDIR)$(PREFIX)/bin/age-plugin-tokenpin
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/tokenpin/
	install -m 0644 config/tokenpin.conf.example $(DESTDIR)$(PREFIX)/share/doc/tokenpin/tokenpin.conf.example
	[ -e $(DESTDIR)/etc/tokenpin/tokenpin.conf ] || install -m 0644 config/tokenpin.conf.example $(DESTDIR)/etc/tokenpin/tokenpin.conf

install-check:
	@missing=""; for f in $(INSTALL_INPUTS); do [ -f "$$f" ] || missing="$$missing $$f"; done; \
	if [ -n "$$missing" ]; then \
	  echo "error: nothing to install yet (missing:$$missing)" >&2; \
	  echo "hint: build first as yourself, then install: make && sudo make install" >&2; exit 1; \
	fi; \
	if ldd $(RELEASE_DIR)/tokenpin | grep -q libswiftCore; then \
	  echo "error: $(RELEASE_DIR)/tokenpin needs the Swift toolchain's libraries (built without --static-swift-stdlib)" >&2; \
	  echo "hint: rebuild with make, then install: make && sudo make install" >&2; exit 1; \
	fi

install-daemon: install-check
	install -d $(DESTDIR)$(PREFIX)/sbin
	install -m 0755 $(RELEASE_DIR)/tokenpind $(DESTDIR)$(PREFIX)/sbin/tokenpind
	# The process PKCS#11 modules run in (never tokenpind or the CLI): found as ../libexec/tokenpin from either.
	install -d $(DESTDIR)$(PREFIX)/libexec/tokenpin
	install -m 0755 $(RELEASE_DIR)/tokenpin-pkcs11 $(DESTDIR)$(PREFIX)/libexec/tokenpin/tokenpin-pkcs11

# The module, the pam-auth-update profile and the daemon's own PAM service (the password check at enrolment).
install-pam: install-check
	install -d $(DESTDIR)$(PAM_DIR) $(DESTDIR)$(PAM_CONFIGS) $(DESTDIR)/etc/pam.d
	install -m 0644 .build/pam/pam_tokenpin.so $(DESTDIR)$(PAM_DIR)/pam_tokenpin.so
	install -m 0644 pam-configs/tokenpin $(DESTDIR)$(PAM_CONFIGS)/tokenpin
	[ -e $(DESTDIR)/etc/pam.d/tokenpin-enrol ] || install -m 0644 pam/tokenpin-enrol $(DESTDIR)/etc/pam.d/tokenpin-enrol

# The unit names the binary where this install put it.
install-units: install-check
	install -d $(DESTDIR)$(SYSTEMD_DIR)
	sed 's#/usr/local/sbin/tokenpind#$(PREFIX)/sbin/tokenpind#' systemd/tokenpind.service > $(DESTDIR)$(SYSTEMD_DIR)/tokenpind.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_DIR)/tokenpind.service
	install -m 0644 systemd/tokenpind.socket $(DESTDIR)$(SYSTEMD_DIR)/tokenpind.socket

install-udev: install-check
	install -d $(DESTDIR)$(UDEV_DIR)
	install -m 0644 udev/70-tokenpin.rules $(DESTDIR)$(UDEV_DIR)/70-tokenpin.rules

install-man: install-check
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man8
	for page in $(MAN_PAGES); do \
	  sed 's#@PREFIX@#$(PREFIX)#g' .build/man/$$page > $(DESTDIR)$(PREFIX)/share/man/man$${page##*.}/$$page && \
	  chmod 0644 $(DESTDIR)$(PREFIX)/share/man/man$${page##*.}/$$page || exit 1; \
	done

# The Debian package from debian/ (debhelper), built by dpkg-buildpackage's steps so the .deb lands in
# .build/deb and not in the checkout's parent. The static release build above is reused: debian/rules runs
# make, which finds everything up to date.
deb: deb-deps all
	dpkg-checkbuilddeps
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)
	sed -e 's/@VERSION@/$(VERSION)/' -e "s/@DATE@/$$(date -R -d @$$(git log -1 --format=%ct 2>/dev/null || date +%s))/" \
	  debian/changelog.in > debian/changelog
	debian/rules clean
	debian/rules build
	DEB_DESTDIR=$(CURDIR)/$(DEB_DIR) debian/rules binary
	@ls -l $(DEB)

install-completions: install-check
	@for f in $(COMPLETIONS); do [ -s "$$f" ] || { echo "error: $$f is not built; run make first" >&2; exit 1; }; done
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions \
	    $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 0644 .build/completions/tokenpin.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tokenpin
	install -m 0644 .build/completions/_tokenpin $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_tokenpin
	install -m 0644 .build/completions/tokenpin.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/tokenpin.fish

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tokenpin $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_tokenpin
	rm -f $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/tokenpin.fish
	rm -f $(DESTDIR)$(PREFIX)/sbin/tokenpind $(DESTDIR)$(PAM_DIR)/pam_tokenpin.so $(DESTDIR)$(PAM_CONFIGS)/tokenpin
	rm -f $(DESTDIR)$(SYSTEMD_DIR)/tokenpind.service $(DESTDIR)$(SYSTEMD_DIR)/tokenpind.socket
	rm -f $(DESTDIR)$(UDEV_DIR)/70-tokenpin.rules
	rm -f $(DESTDIR)$(PREFIX)/share/man/man1/tokenpin.1 $(DESTDIR)$(PREFIX)/share/man/man1/tokenpin-bench.1 $(DESTDIR)$(PREFIX)/share/man/man5/tokenpin.conf.5
	rm -f $(DESTDIR)$(PREFIX)/share/man/man1/tokenpin-askpass.1 $(DESTDIR)$(PREFIX)/bin/tokenpin-askpass
	rm -f $(DESTDIR)$(PREFIX)/share/man/man1/age-plugin-tokenpin.1 $(DESTDIR)$(PREFIX)/bin/age-plugin-tokenpin
	rm -f $(DESTDIR)$(PREFIX)/share/man/man8/tokenpind.8 $(DESTDIR)$(PREFIX)/share/man/man8/pam_tokenpin.8
	rm -f $(DESTDIR)$(PREFIX)/bin/tokenpin $(DESTDIR)$(PREFIX)/bin/tokenpin-bench $(DESTDIR)$(PREFIX)/libexec/tokenpin/tokenpin-pkcs11
	-rmdir $(DESTDIR)$(PREFIX)/libexec/tokenpin 2>/dev/null
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/tokenpin
	@echo "note: /etc/tokenpin and /etc/pam.d/tokenpin-enrol stay (configuration); remove them by hand"

clean:
	rm -rf .build
