# Conveniences over the scripts: `make install DESTDIR=... PREFIX=...`.
PREFIX ?= /usr
DESTDIR ?=

.PHONY: install test run
install:
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" scripts/install
test:
	scripts/test
run:
	scripts/run
