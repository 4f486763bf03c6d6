module github.com/charmed-slurm/operators/slurmd-operator

go 1.26.8

require (
	github.com/charmed-slurm/operators/interfaces v0.0.0-00010101000000-000000000000
	github.com/charmed-slurm/operators/libs v0.0.0-00010101000000-000000000000
	github.com/google/go-cmp v0.7.0
)

require (
	github.com/canonical/pebble v1.32.1 // indirect
	github.com/coreos/go-systemd/v22 v22.7.0 // indirect
	github.com/godbus/dbus/v5 v5.1.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/ulikunitz/xz v0.5.15 // indirect
	golang.org/x/sys v0.46.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/charmed-slurm/operators/libs => ../libs

replace github.com/charmed-slurm/operators/interfaces => ../interfaces
