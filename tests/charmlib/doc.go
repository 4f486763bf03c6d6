// Package charmlib holds the test that reads the packed charms with Juju's own charm library,
// github.com/juju/charm/v12 v12.1.1 (the version Juju 3.6 reads charm archives with): what
// `make charms` and tests/charmpack produce must load in Juju exactly as `juju deploy` loads it.
// The package has no code of its own; the library is a test-only dependency of the tests module.
package charmlib
