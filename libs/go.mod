module github.com/charmed-slurm/operators/libs

go 1.26.8

require (
	github.com/canonical/pebble v1.32.1
	github.com/coreos/go-systemd/v22 v22.7.0
	github.com/godbus/dbus/v5 v5.1.0
	github.com/google/go-cmp v0.7.0
)

require (
	github.com/gorilla/websocket v1.5.3 // indirect
	golang.org/x/sys v0.46.0 // indirect
)
