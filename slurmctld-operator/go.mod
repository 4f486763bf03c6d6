module github.com/charmed-slurm/operators/slurmctld-operator

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
