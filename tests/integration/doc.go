// Package integration holds the tests that drive real Slurm 22.05 and munge
// daemons on real test hosts (package tests/hosts): a controller host running
// munged and slurmctld under Pebble, and compute hosts running dynamic slurmd
// (`slurmd -Z`) through libs/service/pebble.
//
// They run with plain `go test` as root; without root or network namespaces
// they skip with a loud reason, and with CI=true they fail instead.
package integration
