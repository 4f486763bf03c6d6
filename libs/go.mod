module github.com/charmed-slurm/operators/libs

go 1.26.8

require (
	github.com/canonical/pebble v1.32.1 // indirect
	github.com/coreos/go-systemd/v22 v22.7.0 // indirect
	github.com/godbus/dbus/v5 v5.1.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
)
