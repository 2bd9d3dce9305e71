# relayq build targets. `make run` and `make test` are the two commands a
# newcomer types; keep them working on a fresh machine.
GO        ?= go
BIN       := bin
PKGS      := ./...
FUZZTIME  ?= 5s
# Version stamped into binaries (see internal/buildinfo/doc.go); the date is the
# commit's, so that the same commit always builds the same bytes.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILDDATE ?= $(shell git log -1 --format=%cI 2>/dev/null)
BI        := github.com/relayq/relayq/internal/buildinfo
LDFLAGS   := -X $(BI).version=$(VERSION) -X $(BI).commit=$(COMMIT) -X $(BI).date=$(BUILDDATE)

.PHONY: image dist install all build run test fmt-check vet staticcheck deadcode test-race fuzz fuzz-short bench bench-go bench-postfix bench-production demo clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/... ./bench/relaybench

# build-openssl: relayq signing RSA DKIM signatures through the system's
# libcrypto (about a quarter of crypto/rsa's CPU per signature on amd64;
# docs/decisions/0014-rsa-signing.md). Needs cgo and libssl-dev; the binary
# then needs libcrypto at run time. The default build stays static and
# cgo-free.
.PHONY: build-openssl
build-openssl:
	CGO_ENABLED=1 $(GO) build -tags openssl -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/relayq

# install: bin/relayq to $(DESTDIR)$(PREFIX)/bin. `make install SENDMAIL_LINK=1`
# also links /usr/sbin/sendmail to it (only when asked: it replaces the
# system's sendmail for cron, PHP's mail() and friends).
PREFIX        ?= /usr/local
SENDMAIL_PATH ?= /usr/sbin/sendmail
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN)/relayq $(DESTDIR)$(PREFIX)/bin/relayq
	@if [ "$(SENDMAIL_LINK)" = "1" ]; then \
	  install -d $(DESTDIR)$$(dirname $(SENDMAIL_PATH)); \
	  ln -sf $(PREFIX)/bin/relayq $(DESTDIR)$(SENDMAIL_PATH); \
	  echo "linked $(DESTDIR)$(SENDMAIL_PATH) -> $(PREFIX)/bin/relayq"; \
	fi

run: build
	./$(BIN)/relayq serve

# try: the quick start. fakemx, a fake MX on this machine (its page on
# http://$(TRY_MX_HTTP)), and the relay on its defaults but routed to it,
# so that the first messages stay here. Ctrl-C stops both.
TRY_MX      ?= 127.0.0.1:2526
TRY_MX_HTTP ?= 127.0.0.1:8026
.PHONY: try
try: build
	@$(BIN)/fakemx --listen $(TRY_MX) --http $(TRY_MX_HTTP) & mx=$$!; trap 'kill $$mx' EXIT INT TERM; \
	RELAYQ_DELIVERY_ROUTES='*=$(TRY_MX)' RELAYQ_DELIVERY_TLS=none $(BIN)/relayq serve

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# Static checks beyond vet, at pinned versions so that a new release cannot
# fail a build that passed (go run fetches them into the module cache; they
# stay out of go.mod). Bump the versions by hand, fixing what they find.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    := golang.org/x/tools/cmd/deadcode@v0.52.0

staticcheck:
	$(GO) run $(STATICCHECK) $(PKGS)

# deadcode reports functions no main package or test reaches (-test: use
# by tests counts, so smtptest's public API stays when a test covers it).
# It exits 0 even when it finds some, hence the check on its output.
# internal/gosmtp is left out: it is go-smtp as released plus patches, and
# what relayq does not call of it (and upstream's examples) stays, so that
# a diff against upstream shows only the patches.
deadcode:
	@out=$$($(GO) run $(DEADCODE) -test $(PKGS)) || exit 1; \
	out=$$(echo "$$out" | grep -v '^internal/gosmtp/' || :); \
	if [ -n "$$out" ]; then echo "$$out"; echo "deadcode: remove these, or test them if they are public API"; exit 1; fi

# test-race prints the five slowest packages after the run, where the time
# of `make test` goes; its exit status is go test's. The timeout only
# catches a hang: go test's default of 10 minutes a package is less than
# e2e takes on a busy 2-core machine beside another make test.
test-race: build
	@log=$$(mktemp); rc=$$(mktemp); trap 'rm -f "$$log" "$$rc"' EXIT; \
	{ $(GO) test -race -count=1 -timeout 30m $(PKGS); echo $$? >"$$rc"; } 2>&1 | tee "$$log"; \
	echo "slowest packages:"; \
	awk '$$1 == "ok" || $$1 == "FAIL" { t = $$3; sub(/s$$/, "", t); if (t + 0 > 0) print "  " t "s", $$2 }' "$$log" | sort -rn | head -5; \
	exit $$(cat "$$rc")

# test-short: the edit-compile loop: gofmt, vet and every test but the
# end-to-end ones (-short) and fuzzing; a minute or two where make test takes
# ten or more.
.PHONY: test-short
test-short: fmt-check vet
	$(GO) test -race -short -count=1 $(PKGS)

# man: man pages for relayq and each of its commands, from the same help
# text as --help, in $(BIN)/man (man -l $(BIN)/man/relayq.1).
.PHONY: man
man: build
	$(BIN)/relayq man --dir $(BIN)/man

# test: everything CI runs. The patched go-smtp is the package
# internal/gosmtp, so ./... covers its tests (upstream's and the patches')
# and fuzz targets like any other package's.
test: fmt-check vet staticcheck deadcode test-race test-openssl fuzz-short test-outside

# test-openssl: the libcrypto signer (build tag openssl) signs exactly as
# crypto/rsa does, with vet and staticcheck over the tagged files.
.PHONY: test-openssl
test-openssl:
	CGO_ENABLED=1 $(GO) vet -tags openssl ./internal/dkim/
	CGO_ENABLED=1 $(GO) run $(STATICCHECK) -tags openssl ./internal/dkim/
	CGO_ENABLED=1 $(GO) test -race -count=1 -tags openssl ./internal/dkim/

# test-outside: relayq as another module gets it (a module's replace
# directives do not reach its importers, and go install refuses them): a
# scratch module runs smtptest's tests, and go install builds fakemx at
# HEAD (commit first) from an empty module cache. Half a minute; see the
# script.
.PHONY: test-outside
test-outside:
	.ci/test-outside

# crash-test: the power-cut tests in full (docs/reliability.md): the relay
# under SMTP and HTTP load with its queue on a file system that loses what
# was not synced, cut 200 times at sync points and 50 times at random
# operations; `make test` runs a handful of each. Needs root and /dev/fuse.
CRASH_SYNC_CUTS   ?= 200
CRASH_RANDOM_CUTS ?= 50
.PHONY: crash-test
crash-test:
	RELAYQ_E2E_SYNC_CUTS=$(CRASH_SYNC_CUTS) RELAYQ_E2E_RANDOM_CUTS=$(CRASH_RANDOM_CUTS) \
	  $(GO) test -count=1 -timeout 2h -v -run 'PowerCut' ./e2e/ ./queue/... ./internal/testfs/ ./internal/dirsync/ ./internal/dkim/

# fuzz-short runs every fuzz target briefly (CI); `make fuzz FUZZTIME=2m` runs longer.
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" as -fuzztime runs out (golang/go#75804, fixed in Go 1.27). A
# failing target is therefore retried once with a count budget, which has no
# deadline to race; a real crash is saved under testdata/fuzz and fails the
# retry at once, from the seed corpus.
fuzz:
	@set -e; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; for pkg in $$($(GO) list $(PKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run='^$$' -fuzz="^$$f\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=2s $$pkg >"$$log" 2>&1 && tail -1 "$$log" || { \
	      tail -20 "$$log"; echo "fuzz $$f failed; retrying once"; \
	      $(GO) test -run='^$$' -fuzz="^$$f\$$" -fuzztime=100x -fuzzminimizetime=2s $$pkg; }; \
	  done; \
	done

# bench: the Go micro-benchmarks, then relaybench's standard scenarios
# (a-e and the hand-off latency) against the built relay, then scenario a
# again with the event stream posted to a local webhook receiver (the
# stream must cost little: that run must keep 85% of a's rate). Takes
# several minutes; see docs/performance.md.
bench: build bench-go
	./$(BIN)/relaybench --relay-bin $(BIN)/relayq --scenario all
	./$(BIN)/relaybench --relay-bin $(BIN)/relayq --scenario a --events ok

bench-go:
	$(GO) test -run='^$$' -bench=. -benchmem ./queue/ ./smtpcodes/ ./delivery/dsn/ ./smtptest/ ./delivery/smtpclient/ ./internal/crlf/ ./internal/webhook/

# bench-postfix: relayq and Postfix side by side with Postfix's own
# smtp-source and smtp-sink (installs Debian's postfix; needs root).
bench-postfix: build
	bench/compare-postfix.sh --install --rounds 3

# bench-production: the same as deployed (docs/performance.md): both relays
# sign with one RSA-2048 key (Postfix through OpenDKIM), relayq with events,
# history, a webhook and built-in shaping; then relayq with Ed25519
# against OpenDKIM's RSA. Installs postfix, opendkim and python3-dkim
# (dkimpy verifies a sample of each relay's signatures); needs root.
bench-production: build
	bench/compare-postfix.sh --install --profile production --rounds 5
	bench/compare-postfix.sh --profile production-ed25519 --rounds 5

# demo: fakemx greylists one recipient and refuses another; watch relayq retry and bounce.
demo: build
	./docs/demo.sh

# dist: static release binaries and their SHA256SUMS in $(DIST). The same
# commit and Go version build the same bytes anywhere: -trimpath drops local
# paths, the build ID is empty, the date is the commit's.
DIST        ?= dist
DIST_ARCHES ?= amd64 arm64
dist:
	@rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for arch in $(DIST_ARCHES); do \
	  echo "$(DIST)/relayq-$(VERSION)-linux-$$arch"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -buildvcs=false \
	    -ldflags "-s -w -buildid= $(LDFLAGS)" -o $(DIST)/relayq-$(VERSION)-linux-$$arch ./cmd/relayq; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -buildvcs=false \
	    -ldflags "-s -w -buildid= $(LDFLAGS)" -o $(DIST)/fakemx-$(VERSION)-linux-$$arch ./cmd/fakemx; \
	done
	@cd $(DIST) && sha256sum relayq-* fakemx-* > SHA256SUMS && cat SHA256SUMS

# image: the container image (relayq and fakemx) from local static
# binaries, FROM scratch, so no registry is needed
# (packaging/container/Containerfile, the one container file). With Docker:
# make image IMAGE_BUILD="docker build".
IMAGE       ?= localhost/relayq:$(VERSION)
IMAGE_BUILD ?= podman build --format docker
IMAGE_CTX   ?= $(BIN)/image
# fakemx's own image: the Containerfile's fakemx stage (docs/fakemx.md).
IMAGE_FAKEMX ?= localhost/fakemx:$(VERSION)
image:
	@rm -rf $(IMAGE_CTX) && mkdir -p $(IMAGE_CTX)/state
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -buildid= $(LDFLAGS)" -o $(IMAGE_CTX)/ ./cmd/relayq ./cmd/fakemx
	cp /etc/ssl/certs/ca-certificates.crt $(IMAGE_CTX)/ 2>/dev/null || : > $(IMAGE_CTX)/ca-certificates.crt
	$(IMAGE_BUILD) -f packaging/container/Containerfile -t $(IMAGE) $(IMAGE_CTX)
	$(IMAGE_BUILD) -f packaging/container/Containerfile --target fakemx -t $(IMAGE_FAKEMX) $(IMAGE_CTX)

clean:
	rm -rf $(BIN) $(DIST)
