module github.com/charmed-slurm/operators/tests

go 1.26.8

require (
	github.com/charmed-slurm/operators/interfaces v0.0.0-00010101000000-000000000000
	github.com/charmed-slurm/operators/libs v0.0.0-00010101000000-000000000000
	github.com/juju/gnuflag v1.0.0
)

require (
	github.com/coreos/go-systemd/v22 v22.7.0 // indirect
	github.com/godbus/dbus/v5 v5.1.0 // indirect
	github.com/ulikunitz/xz v0.5.15 // indirect
)

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	github.com/GehirnInc/crypt v0.0.0-20230320061759-8cc1b52080c5 // indirect
	github.com/canonical/go-flags v0.0.0-20230403090104-105d09a091b8 // indirect
	github.com/canonical/pebble v1.32.1
	github.com/canonical/x-go v0.0.0-20230522092633-7947a7587f5b // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/google/go-cmp v0.7.0
	github.com/gorilla/mux v1.8.1 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/juju/charm/v12 v12.1.1
	github.com/juju/clock v1.0.2 // indirect
	github.com/juju/collections v1.0.4 // indirect
	github.com/juju/errors v1.0.0 // indirect
	github.com/juju/gojsonpointer v0.0.0-20150204194629-afe8b77aa08f // indirect
	github.com/juju/gojsonreference v0.0.0-20150204194633-f0d24ac5ee33 // indirect
	github.com/juju/gojsonschema v1.0.0 // indirect
	github.com/juju/loggo v1.0.0 // indirect
	github.com/juju/mgo/v3 v3.0.4 // indirect
	github.com/juju/names/v5 v5.0.0 // indirect
	github.com/juju/os/v2 v2.2.3 // indirect
	github.com/juju/schema v1.2.0 // indirect
	github.com/juju/utils/v3 v3.1.0 // indirect
	github.com/juju/version/v2 v2.0.1 // indirect
	github.com/mohae/deepcopy v0.0.0-20170929034955-c48cc78d4826 // indirect
	github.com/pkg/term v1.1.0 // indirect
	github.com/spf13/pflag v1.0.10
	golang.org/x/crypto v0.53.0 // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.31.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/sys v0.46.0
	golang.org/x/term v0.44.0 // indirect
	golang.org/x/tools v0.40.1-0.20260108161641-ca281cf95054 // indirect
	gopkg.in/gobwas/glob.v0 v0.2.3 // indirect
	gopkg.in/tomb.v2 v2.0.0-20161208151619-d5d1b5820637 // indirect
	gopkg.in/yaml.v2 v2.4.0
	gopkg.in/yaml.v3 v3.0.1
	honnef.co/go/tools v0.7.0 // indirect
)

tool (
	github.com/canonical/pebble/cmd/pebble
	honnef.co/go/tools/cmd/staticcheck
)

replace github.com/charmed-slurm/operators/libs => ../libs

replace github.com/charmed-slurm/operators/interfaces => ../interfaces
