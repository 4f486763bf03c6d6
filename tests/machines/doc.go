// Package machines holds the tests that need a real systemd machine (tests/hosts machines,
// booted by systemd-nspawn from the Debian images of scripts/images.sh): the libs' real
// counterparts of their fake-only tests, run inside a machine of each image.
package machines
